//! [`super::parse_tool_call`] held to the general path (`parse_message`), case by case and by
//! generated bodies.

use proptest::prelude::*;

use super::*;
use crate::classify::{Incoming, parse_message};
use crate::modern::{is_modern_request, modern_meta, requested_version};

/// What the general path reads from `body` when it is a `tools/call` whose params have
/// the shape the server reads in place; `None` otherwise.
fn general(body: &str) -> Option<ToolCall<'static>> {
    let Ok(Incoming::Request(req)) = parse_message(body.as_bytes()) else {
        return None;
    };
    if req.method != methods::TOOLS_CALL {
        return None;
    }
    let params = req.params.as_ref()?.as_object()?;
    let name = params.get("name")?.as_str()?;
    let arguments = match params.get("arguments") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(args)) => args.clone(),
        Some(_) => return None,
    };
    if !matches!(
        params.get("_meta"),
        None | Some(Value::Null | Value::Object(_))
    ) {
        return None;
    }
    let meta = is_modern_request(req.params.as_ref()).then(|| CallMeta {
        requested_version: leak(requested_version(req.params.as_ref()).unwrap_or("")),
        meta: modern_meta(req.params.as_ref()).expect("modern"),
    });
    Some(ToolCall {
        id: req.id,
        name: leak(name),
        arguments,
        meta,
    })
}

fn leak(s: &str) -> &'static str {
    Box::leak(s.to_owned().into_boxed_str())
}

/// The shortcut reads a body exactly as the general path does, or leaves it to it.
fn agrees(body: &str) -> Option<ToolCall<'_>> {
    let quick = parse_tool_call(body.as_bytes());
    let general = general(body);
    if let Some(quick) = &quick {
        let general = general
            .as_ref()
            .unwrap_or_else(|| panic!("shortcut read a body the general path refuses: {body}"));
        assert_eq!(quick.id, general.id, "{body}");
        assert_eq!(quick.name, general.name, "{body}");
        assert_eq!(quick.arguments, general.arguments, "{body}");
        match (&quick.meta, &general.meta) {
            (None, None) => {}
            (Some(q), Some(g)) => {
                assert_eq!(q.requested_version, g.requested_version, "{body}");
                assert_eq!(q.meta, g.meta, "{body}");
            }
            (q, g) => panic!("{body}: era differs: {q:?} vs {g:?}"),
        }
    }
    quick
}

const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"}}"#;

#[test]
fn the_usual_calls_of_both_eras_take_the_shortcut() {
    let bodies = [
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"check-proposal","arguments":{"proposal_id":"p-1"}}}"#.to_owned(),
        format!(
            r#"{{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{{"name":"check-proposal","arguments":{{"proposal_id":"p-1"}},{META}}}}}"#
        ),
        format!(
            r#" {{"params":{{{META},"arguments":null,"name":"list-proposals"}},"method":"tools/call","id":-7,"jsonrpc":"2.0","extra":[1,{{"x":null}}]}}"#
        ),
        r#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"tools/call","params":{"name":"propose-egress","arguments":{"host":"a.example","port":443,"justification":"x"},"_meta":{"progressToken":3}}}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x","_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":7,"io.modelcontextprotocol/logLevel":"debug"}}}"#.to_owned(),
    ];
    for body in &bodies {
        assert!(agrees(body).is_some(), "not read by the shortcut: {body}");
    }
    let modern = parse_tool_call(bodies[1].as_bytes()).unwrap().meta.unwrap();
    assert!(
        modern
            .meta
            .unwrap()
            .has_extension("io.modelcontextprotocol/tasks")
    );
    let refused = parse_tool_call(bodies[4].as_bytes()).unwrap().meta.unwrap();
    assert_eq!(refused.meta.unwrap_err().code.0, -32022);
}

#[test]
fn unusual_shapes_are_left_to_the_general_path() {
    let deep = format!("{}{}", "[".repeat(130), "]".repeat(130));
    let bodies = [
        // Not a tools/call request.
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#.to_owned(),
        r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"x"}}"#.to_owned(),
        r#"[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}]"#.to_owned(),
        r#"{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"x"}}"#.to_owned(),
        r#"{"id":1,"method":"tools/call","params":{"name":"x"}}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"x"}}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"x"}}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":null}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":["x"]}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":7}}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":[]}}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":[]}}"#.to_owned(),
        // Repeated members: a `Value` keeps the last one.
        r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"x"}}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","name":"y"}}"#.to_owned(),
        // `null` where absence differs.
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"io.modelcontextprotocol/protocolVersion":null}}}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":null}}}"#.to_owned(),
        // Escapes in what is borrowed.
        r#"{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{"name":"x"}}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"\u0078"}}"#.to_owned(),
        // A response member beside the method.
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","result":{},"params":{"name":"x"}}"#.to_owned(),
        // What only serde_json's full reading refuses, in a member the server ignores.
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"x"}},"x":{deep}}}"#),
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"},"x":1e400}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","y":"\ud800"}}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}} x"#.to_owned(),
        "\u{a0}{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"x\"}}".to_owned(),
    ];
    for body in &bodies {
        assert!(agrees(body).is_none(), "read by the shortcut: {body}");
    }
}

/// Every shape of `clientInfo` reads as the general path reads it: the usual ones (and
/// anything not an object) on the shortcut, an object with other or repeated members on
/// the general path.
#[test]
fn client_info_reads_as_the_general_path_does() {
    let shortcut = [
        r#"{"name":"c","version":"1"}"#,
        r#"{"version":"1","title":"T","name":"c"}"#,
        r#"{"name":"c","title":null}"#,
        r#"{"name":"\u0063é"}"#,
        r#"{"name":"c","version":1}"#,
        r#"{"name":"c","title":5}"#,
        r#"{"version":"1"}"#,
        r#"{"name":null}"#,
        "{}",
        r#""c""#,
        "null",
        "7",
        "-1.5",
        "true",
        r#"["c","1"]"#,
    ];
    let general = [
        r#"{"name":"c","icons":[]}"#,
        r#"{"name":"c","name":"d"}"#,
        r#"{"na\u006de":"c"}"#,
    ];
    let body = |info: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"x","_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}},"io.modelcontextprotocol/clientInfo":{info}}}}}}}"#
        )
    };
    for info in shortcut {
        assert!(
            agrees(&body(info)).is_some(),
            "left to the general path: {info}"
        );
    }
    for info in general {
        assert!(
            agrees(&body(info)).is_none(),
            "read by the shortcut: {info}"
        );
    }
    let read = |info: &str| {
        let body = body(info);
        parse_tool_call(body.as_bytes())
            .unwrap()
            .meta
            .unwrap()
            .meta
            .unwrap()
            .client_info
    };
    let mut titled = Implementation::new("c", "1");
    titled.title = Some("T".into());
    assert_eq!(read(shortcut[1]), Some(titled));
    assert_eq!(read(shortcut[6]), None);
}

/// Bodies built from members that are each usual or not, in any order, sometimes
/// repeated.
fn bodies() -> impl Strategy<Value = String> {
    let id = prop::sample::select(vec![
        r#""id":1"#,
        r#""id":"x""#,
        r#""id":null"#,
        r#""id":2.5"#,
        r#""id":-3"#,
        r#""id":{}"#,
        r#""id":"\u0041""#,
    ]);
    let jsonrpc = prop::sample::select(vec![
        r#""jsonrpc":"2.0""#,
        r#""jsonrpc":"2""#,
        r#""jsonrpc":null"#,
        r#""jsonrpc":"2\u002e0""#,
    ]);
    let method = prop::sample::select(vec![
        r#""method":"tools/call""#,
        r#""method":"ping""#,
        r#""method":7"#,
        r#""method":"tools\/call""#,
    ]);
    let name = prop::sample::select(vec![
        r#""name":"check-proposal""#,
        r#""name":null"#,
        r#""name":"a\"b""#,
        r#""name":[]"#,
    ]);
    let arguments = prop::sample::select(vec![
        r#""arguments":{"proposal_id":"p"}"#,
        r#""arguments":null"#,
        r#""arguments":[1]"#,
        r#""arguments":{"a":1,"a":2}"#,
        r#""arguments":{"n":1e400}"#,
        r#""arguments":"x""#,
    ]);
    let meta = prop::sample::select(vec![
        r#""_meta":null"#,
        r#""_meta":{}"#,
        r#""_meta":{"progressToken":1}"#,
        r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#,
        r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}"#,
        r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":[]}"#,
        r#""_meta":{"io.modelcontextprotocol/protocolVersion":7}"#,
        r#""_meta":{"io.modelcontextprotocol/protocolVersion":"1999-01-01","io.modelcontextprotocol/clientCapabilities":{}}"#,
        r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"n","version":"v","x":[1]},"io.modelcontextprotocol/logLevel":3}"#,
        r#""_meta":[]"#,
        r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"title":null,"name":"n"}}"#,
        r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"n","version":2,"version":"v"}}"#,
    ]);
    let extra = prop::sample::select(vec![
        r#""x":1"#,
        r#""result":1"#,
        r#""error":{"code":1,"message":"m"}"#,
        r#""x":"\ud800""#,
    ]);
    let params = prop::collection::vec(prop_oneof![name, arguments, meta, extra.clone()], 0..5)
        .prop_map(|members| format!(r#""params":{{{}}}"#, members.join(",")));
    let params = prop_oneof![
        4 => params,
        1 => prop::sample::select(vec![r#""params":null"#.to_owned(), r#""params":[]"#.to_owned()]),
    ];
    prop::collection::vec(
        prop_oneof![
            2 => id.prop_map(str::to_owned),
            2 => jsonrpc.prop_map(str::to_owned),
            2 => method.prop_map(str::to_owned),
            3 => params,
            1 => extra.prop_map(str::to_owned),
        ],
        0..8,
    )
    .prop_map(|members| format!("{{{}}}", members.join(",")))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    #[test]
    fn the_shortcut_reads_as_the_general_path_or_not_at_all(body in bodies()) {
        agrees(&body);
    }
}
