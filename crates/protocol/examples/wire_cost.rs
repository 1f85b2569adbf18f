//! The wire pipeline alone for one pending `check-proposal`, to count its instructions: the
//! request decoded and the answer encoded through `Value` trees (`tree`, as the general
//! path does) or typed (`typed`: `parse_tool_call`, `TextToolResult`), or only the loop's
//! fixed work (`none`), for N calls of one era. Per call: two runs under callgrind, by
//! difference (docs/PERFORMANCE.md, "Pending poll"):
//!
//! ```text
//! cargo build --release -p supervise-protocol --example wire_cost --features serde_json/preserve_order
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null target/release/examples/wire_cost typed 2026-07-28 1
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null target/release/examples/wire_cost typed 2026-07-28 2001
//! ```
use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};
use serde_json::{Map, Value};
use supervise_protocol::{
    Implementation, Incoming, META_CLIENT_CAPABILITIES, META_CLIENT_INFO, Response, ResultResponse,
    ServerInfoMeta, TextToolResult, is_modern_request, modern_result, parse_message,
    parse_tool_call, requested_version,
};

const INFO: &str = r#"{"name":"supervise-bench","version":"0.1.0"}"#;

fn body(modern: bool, id: usize) -> String {
    let args = r#"{"proposal_id":"019ad3c2-7f10-7b4e-9a51-4c2d8e6f0a11"}"#;
    if modern {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"check-proposal","arguments":{args},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}},"io.modelcontextprotocol/clientInfo":{INFO}}}}}}}"#
        )
    } else {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"check-proposal","arguments":{args}}}}}"#
        )
    }
}

fn change() -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("host".into(), "mirror.example.com".into());
    m.insert("port".into(), 443.into());
    m
}

fn text(id: &str) -> String {
    format!(
        "Proposal {id} (egress to mirror.example.com:443) is pending: the operator has not decided it yet. It stays queued until 2026-12-02T18:00:00.000Z unless decided.\nNext: poll check-proposal with proposal_id {id} in a minute; do not propose again."
    )
}

fn tree(body: &[u8], info: &Implementation) -> Vec<u8> {
    let Ok(Incoming::Request(req)) = parse_message(body) else {
        panic!("a request")
    };
    let modern = is_modern_request(req.params.as_ref());
    let mut version = None;
    if modern {
        let _ = requested_version(req.params.as_ref());
        let meta = req
            .params
            .as_ref()
            .unwrap()
            .get("_meta")
            .unwrap()
            .as_object()
            .unwrap();
        let caps = meta
            .get(META_CLIENT_CAPABILITIES)
            .unwrap()
            .as_object()
            .unwrap()
            .clone();
        let ci: Option<Implementation> = meta
            .get(META_CLIENT_INFO)
            .and_then(|v| serde_json::from_value(v.clone()).ok());
        version = Some((caps, ci));
    }
    let params = req.params.as_ref().unwrap().as_object().unwrap();
    let _name = params.get("name").unwrap().as_str().unwrap().to_owned();
    let args = params.get("arguments").unwrap().as_object().unwrap();
    let id = args
        .get("proposal_id")
        .unwrap()
        .as_str()
        .unwrap()
        .to_owned()
        .trim()
        .to_string();
    drop(version);
    let text = text(&id);
    let mut proposal = change();
    proposal.insert(
        "justification".into(),
        Value::String("needs the package mirror".into()),
    );
    let mut s = Map::new();
    s.insert("proposal_id".into(), Value::String(id));
    s.insert("status".into(), "pending".into());
    s.insert("kind".into(), "egress".into());
    s.insert("proposal".into(), Value::Object(proposal));
    let mut t = Map::new();
    t.insert("type".into(), "text".into());
    t.insert("text".into(), Value::String(text));
    let mut out = Map::new();
    out.insert("content".into(), Value::Array(vec![Value::Object(t)]));
    out.insert("structuredContent".into(), Value::Object(s));
    out.insert("isError".into(), Value::Bool(false));
    let mut result = Value::Object(out);
    if modern {
        result = modern_result(result, info);
    }
    serde_json::to_vec(&Response::result(req.id, result)).unwrap()
}

/// A pending proposal's `structuredContent`, as the server writes it.
struct Form {
    id: String,
    change: Map<String, Value>,
    justification: String,
}
impl Serialize for Form {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        struct P<'a>(&'a Map<String, Value>, &'a str);
        impl Serialize for P<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut m = s.serialize_map(None)?;
                for (k, v) in self.0 {
                    m.serialize_entry(k, v)?;
                }
                m.serialize_entry("justification", self.1)?;
                m.end()
            }
        }
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("proposal_id", &self.id)?;
        m.serialize_entry("status", "pending")?;
        m.serialize_entry("kind", "egress")?;
        m.serialize_entry("proposal", &P(&self.change, &self.justification))?;
        m.end()
    }
}

fn typed(body: &[u8], meta: &ServerInfoMeta) -> Vec<u8> {
    let call = parse_tool_call(body).unwrap();
    let _tool = call.name.to_owned();
    let id = call
        .arguments
        .get("proposal_id")
        .unwrap()
        .as_str()
        .unwrap()
        .to_owned()
        .trim()
        .to_string();
    let modern = call.meta.is_some();
    let text = text(&id);
    let form = Form {
        id,
        change: change(),
        justification: "needs the package mirror".into(),
    };
    let result = TextToolResult {
        text: &text,
        structured: Some(&form),
        is_error: false,
        modern: modern.then_some(meta),
    };
    let mut out = Vec::with_capacity(2048);
    serde_json::to_writer(
        &mut out,
        &ResultResponse {
            id: &call.id,
            result: &result,
        },
    )
    .unwrap();
    out
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let (mode, modern, n): (&str, bool, usize) =
        (&a[1], a[2] == "2026-07-28", a[3].parse().unwrap());
    let mut info = Implementation::new("supervise", "0.1.0");
    info.title = Some("supervise: ask a human operator for egress and git-push access".into());
    let meta = ServerInfoMeta::new(&info);
    let bodies: Vec<String> = (0..n).map(|i| body(modern, i + 1)).collect();
    let mut total = 0;
    for b in &bodies {
        let out = match mode {
            "tree" => tree(b.as_bytes(), &info),
            "typed" => typed(b.as_bytes(), &meta),
            _ => {
                let t = text("019ad3c2-7f10-7b4e-9a51-4c2d8e6f0a11");
                let c = change();
                let n = t.len() + c.len();
                vec![0; n % 2]
            }
        };
        total += out.len();
    }
    assert_eq!(
        tree(bodies[0].as_bytes(), &info),
        typed(bodies[0].as_bytes(), &meta),
        "both paths write the same bytes"
    );
    println!("{total}");
}
