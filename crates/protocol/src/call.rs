//! The hot request, `tools/call`, read straight from the body into typed fields, and a tool
//! result written straight from its parts: no `serde_json::Value` tree for the envelope,
//! `params`, `_meta` or the result.
//!
//! [`parse_tool_call`] is a shortcut, never a second opinion: it reads only bodies that
//! [`crate::parse_message`] classifies as a `tools/call` request whose `params.name` is a
//! string, and reads from them exactly what that path would (the same id, name, arguments
//! and `_meta` fields). Anything else (a duplicate member, an escaped key or name, a `null`
//! where absence and `null` differ, any other method) makes it answer `None`, and the
//! caller takes the general path, which gives every refusal its usual words. Members it
//! does not use are still read in full (as `Value`s, then dropped), so the JSON checks are
//! serde_json's own: the same recursion limit, number range and string escapes.

use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::jsonrpc::{ErrorObject, JsonRpcVersion, RequestId};
use crate::lifecycle::Implementation;
use crate::methods;
use crate::modern::{
    META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_LOG_LEVEL, META_PROTOCOL_VERSION,
    META_SERVER_INFO, ModernMeta, read_meta_parts,
};

/// A `tools/call` request read by [`parse_tool_call`], borrowing from the body.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall<'a> {
    /// The id to echo.
    pub id: RequestId,
    /// `params.name`.
    pub name: &'a str,
    /// `params.arguments` (`null` or absent: empty).
    pub arguments: Map<String, Value>,
    /// `Some` exactly when `params._meta` holds `io.modelcontextprotocol/protocolVersion`
    /// (a 2026-07-28 request, as [`crate::is_modern_request`] says).
    pub meta: Option<CallMeta<'a>>,
}

/// The per-request fields of a 2026-07-28 `tools/call`.
#[derive(Debug, Clone, PartialEq)]
pub struct CallMeta<'a> {
    /// The raw `_meta` protocol version (what [`crate::requested_version`] returns).
    pub requested_version: &'a str,
    /// What [`crate::modern_meta`] returns for the same `params`.
    pub meta: Result<ModernMeta, ErrorObject>,
}

/// Reads `body` as a `tools/call` request in the usual shape; `None` when it is not one (or
/// is one in a shape left to [`crate::parse_message`], see the module notes).
pub fn parse_tool_call(body: &[u8]) -> Option<ToolCall<'_>> {
    let text = std::str::from_utf8(body).ok()?;
    // An array is a batch; a struct visitor would also accept one.
    if text
        .trim_start_matches([' ', '\t', '\n', '\r'])
        .as_bytes()
        .first()
        != Some(&b'{')
    {
        return None;
    }
    let envelope: Envelope<'_> = serde_json::from_str(text).ok()?;
    let params = envelope.params?;
    if !envelope.jsonrpc {
        return None;
    }
    let meta = params.meta.and_then(|m| {
        let requested_version = m.protocol_version?;
        let meta = read_meta_parts(
            requested_version,
            Ok(m.client_capabilities),
            m.client_info,
            m.log_level,
        );
        Some(CallMeta {
            requested_version,
            meta,
        })
    });
    Some(ToolCall {
        id: envelope.id?,
        name: params.name?,
        arguments: params.arguments.unwrap_or_default(),
        meta,
    })
}

/// A failure of the shortcut; its text is never shown.
fn unread<E: de::Error>() -> E {
    E::custom("left to the general path")
}

/// `Some(value)` for the first occurrence of a member, a failure for a repeated one (a
/// `Value` keeps the last of repeated members; the general path decides those).
fn once<T>(slot: &mut Option<T>, value: T) -> Result<(), serde_json::Error> {
    if slot.is_some() {
        return Err(unread());
    }
    *slot = Some(value);
    Ok(())
}

fn map_err<E: de::Error>(e: serde_json::Error) -> E {
    E::custom(e)
}

/// The envelope: `jsonrpc`, `id`, `method`, `params`; other members read and dropped.
struct Envelope<'a> {
    jsonrpc: bool,
    id: Option<RequestId>,
    params: Option<Params<'a>>,
}

impl<'de> Deserialize<'de> for Envelope<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(EnvelopeVisitor)
    }
}

struct EnvelopeVisitor;

impl<'de> Visitor<'de> for EnvelopeVisitor {
    type Value = Envelope<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC request")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Envelope<'de>, A::Error> {
        let (mut jsonrpc, mut id, mut method, mut params) = (None, None, None, None);
        while let Some(key) = map.next_key::<&'de str>()? {
            match key {
                "jsonrpc" => once(&mut jsonrpc, map.next_value::<JsonRpcVersion>()?),
                "id" => once(&mut id, map.next_value::<IntegerOrStringId>()?.0),
                "method" => match map.next_value::<&'de str>()? {
                    // Any other method takes the general path: stop reading here.
                    m @ methods::TOOLS_CALL => once(&mut method, m),
                    _ => Err(unread()),
                },
                "params" => once(&mut params, map.next_value::<Params<'de>>()?),
                // A response member beside `method` is ignored by the general path too,
                // but a message that has one is rare enough to leave to it.
                "result" | "error" => Err(unread()),
                _ => {
                    map.next_value::<Value>()?;
                    Ok(())
                }
            }
            .map_err(map_err)?;
        }
        // Without a method this is a response or not a message at all.
        method.ok_or_else(unread)?;
        Ok(Envelope {
            jsonrpc: jsonrpc.is_some(),
            id,
            params,
        })
    }
}

/// A request id as the general path accepts it: a string or a 64-bit integer.
struct IntegerOrStringId(RequestId);

impl<'de> Deserialize<'de> for IntegerOrStringId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = IntegerOrStringId;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or an integer")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                Ok(IntegerOrStringId(RequestId::Number(v.into())))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                Ok(IntegerOrStringId(RequestId::Number(v.into())))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(IntegerOrStringId(RequestId::String(v.to_owned())))
            }
        }
        d.deserialize_any(V)
    }
}

/// `params` of `tools/call`: an object (never `null`, which the general path refuses).
struct Params<'a> {
    name: Option<&'a str>,
    arguments: Option<Map<String, Value>>,
    meta: Option<Meta<'a>>,
}

impl<'de> Deserialize<'de> for Params<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(ParamsVisitor)
    }
}

struct ParamsVisitor;

impl<'de> Visitor<'de> for ParamsVisitor {
    type Value = Params<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("tools/call params")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Params<'de>, A::Error> {
        let (mut name, mut arguments, mut meta) = (None, None, None);
        while let Some(key) = map.next_key::<&'de str>()? {
            match key {
                "name" => once(&mut name, map.next_value::<&'de str>()?),
                // `null` and absent both mean no arguments, here and on the general path.
                "arguments" => once(
                    &mut arguments,
                    map.next_value::<Option<Map<String, Value>>>()?
                        .unwrap_or_default(),
                ),
                // `null` and absent both mean no `_meta`: a legacy request.
                "_meta" => once(&mut meta, map.next_value::<Option<Meta<'de>>>()?),
                _ => {
                    map.next_value::<Value>()?;
                    Ok(())
                }
            }
            .map_err(map_err)?;
        }
        Ok(Params {
            name,
            arguments,
            meta: meta.flatten(),
        })
    }
}

/// `params._meta`. A member present with `null` differs from an absent one on the general
/// path (a `null` version is refused, a `null` capability set too), so `null` is left to it.
struct Meta<'a> {
    protocol_version: Option<&'a str>,
    client_capabilities: Option<Map<String, Value>>,
    client_info: Option<Value>,
    log_level: Option<Value>,
}

impl<'de> Deserialize<'de> for Meta<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(MetaVisitor)
    }
}

struct MetaVisitor;

impl<'de> Visitor<'de> for MetaVisitor {
    type Value = Meta<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("_meta")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Meta<'de>, A::Error> {
        let mut meta = Meta {
            protocol_version: None,
            client_capabilities: None,
            client_info: None,
            log_level: None,
        };
        while let Some(key) = map.next_key::<&'de str>()? {
            match key {
                META_PROTOCOL_VERSION => {
                    once(&mut meta.protocol_version, map.next_value::<&'de str>()?)
                }
                META_CLIENT_CAPABILITIES => once(
                    &mut meta.client_capabilities,
                    map.next_value::<Map<String, Value>>()?,
                ),
                META_CLIENT_INFO => once(&mut meta.client_info, map.next_value::<Value>()?),
                META_LOG_LEVEL => once(&mut meta.log_level, map.next_value::<Value>()?),
                _ => {
                    map.next_value::<Value>()?;
                    Ok(())
                }
            }
            .map_err(map_err)?;
        }
        Ok(meta)
    }
}

/// A successful JSON-RPC response around any result: `{"jsonrpc":"2.0","id":…,"result":…}`,
/// the same bytes as [`crate::Response::result`] with that result as a `Value`.
#[derive(Debug, Clone, Copy)]
pub struct ResultResponse<'a, T> {
    /// The id of the request answered.
    pub id: &'a RequestId,
    /// The result.
    pub result: &'a T,
}

impl<T: Serialize> Serialize for ResultResponse<'_, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(3))?;
        map.serialize_entry("jsonrpc", &JsonRpcVersion)?;
        map.serialize_entry("id", self.id)?;
        map.serialize_entry("result", self.result)?;
        map.end()
    }
}

/// A `tools/call` result of one text item, written from borrowed parts: `content`,
/// `structuredContent` (when given), `isError`, and in 2026-07-28 `resultType` and
/// `_meta` with the server's identity, in the order the general path
/// ([`crate::CallToolResult`], then [`crate::modern_result`]) writes them.
#[derive(Debug, Clone, Copy)]
pub struct TextToolResult<'a, S> {
    /// The text item.
    pub text: &'a str,
    /// `structuredContent`; `None` for revisions without it.
    pub structured: Option<&'a S>,
    /// `isError`.
    pub is_error: bool,
    /// The server's identity for a 2026-07-28 result; `None` in the handshake era.
    pub modern: Option<&'a Implementation>,
}

impl<S: Serialize> Serialize for TextToolResult<'_, S> {
    fn serialize<Z: Serializer>(&self, serializer: Z) -> Result<Z::Ok, Z::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("content", &[TextContent(self.text)])?;
        if let Some(s) = self.structured {
            map.serialize_entry("structuredContent", s)?;
        }
        map.serialize_entry("isError", &self.is_error)?;
        if let Some(server_info) = self.modern {
            map.serialize_entry("resultType", "complete")?;
            map.serialize_entry("_meta", &ServerInfoMeta(server_info))?;
        }
        map.end()
    }
}

/// `{"type":"text","text":…}`.
struct TextContent<'a>(&'a str);

impl Serialize for TextContent<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("type", "text")?;
        map.serialize_entry("text", self.0)?;
        map.end()
    }
}

/// `{"io.modelcontextprotocol/serverInfo": …}`.
struct ServerInfoMeta<'a>(&'a Implementation);

impl Serialize for ServerInfoMeta<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(1))?;
        map.serialize_entry(META_SERVER_INFO, self.0)?;
        map.end()
    }
}

#[cfg(test)]
mod tests {
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
}
