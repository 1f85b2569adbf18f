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

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::jsonrpc::{ErrorObject, JsonRpcVersion, RequestId};
use crate::lifecycle::Implementation;
use crate::methods;
use crate::modern::{
    META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_LOG_LEVEL, META_PROTOCOL_VERSION,
    META_SERVER_INFO, ModernMeta, implementation, read_meta_parts,
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
            m.client_info.flatten(),
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
    /// `clientInfo` as [`crate::modern_meta`] reads it (`None` inside when malformed).
    client_info: Option<Option<Implementation>>,
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
                META_CLIENT_INFO => once(&mut meta.client_info, map.next_value::<ClientInfo>()?.0),
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

/// `clientInfo`, read as [`implementation`] reads its `Value` without building that `Value`
/// in the usual shape (an object of at most `name`, `version` and `title`): its keys are
/// borrowed and its values moved into place. An object with any other member, or with a
/// repeated one, is left to the general path.
struct ClientInfo(Option<Implementation>);

impl<'de> Deserialize<'de> for ClientInfo {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ClientInfoVisitor)
    }
}

struct ClientInfoVisitor;

impl ClientInfoVisitor {
    fn other<E>(value: Value) -> Result<ClientInfo, E> {
        Ok(ClientInfo(implementation(value)))
    }
}

impl<'de> Visitor<'de> for ClientInfoVisitor {
    type Value = ClientInfo;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("clientInfo")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<ClientInfo, E> {
        Self::other(v.into())
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<ClientInfo, E> {
        Self::other(v.into())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<ClientInfo, E> {
        Self::other(v.into())
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<ClientInfo, E> {
        Self::other(v.into())
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<ClientInfo, E> {
        Self::other(v.into())
    }
    fn visit_unit<E: de::Error>(self) -> Result<ClientInfo, E> {
        Self::other(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ClientInfo, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Value>()? {
            items.push(item);
        }
        Self::other(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ClientInfo, A::Error> {
        let (mut name, mut version, mut title) = (None, None, None);
        while let Some(key) = map.next_key::<&'de str>()? {
            let slot = match key {
                "name" => &mut name,
                "version" => &mut version,
                "title" => &mut title,
                _ => return Err(unread()),
            };
            once(slot, map.next_value::<Value>()?).map_err(map_err)?;
        }
        Ok(ClientInfo(match (name, version, title) {
            // What `implementation` reads by hand.
            (
                Some(Value::String(name)),
                version @ (None | Some(Value::String(_))),
                title @ (None | Some(Value::String(_) | Value::Null)),
            ) => {
                let version = match version {
                    Some(Value::String(v)) => v,
                    _ => String::new(),
                };
                let mut info = Implementation::new(name, version);
                info.title = match title {
                    Some(Value::String(t)) => Some(t),
                    _ => None,
                };
                Some(info)
            }
            // Without repeated or other members the order of the members does not change
            // what `implementation` reads.
            (name, version, title) => {
                let mut members = Map::new();
                for (key, value) in [("name", name), ("version", version), ("title", title)] {
                    if let Some(value) = value {
                        members.insert(key.to_owned(), value);
                    }
                }
                implementation(Value::Object(members))
            }
        }))
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
    /// The result `_meta` of a 2026-07-28 answer; `None` in the handshake era.
    pub modern: Option<&'a ServerInfoMeta>,
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
            map.serialize_entry("_meta", server_info)?;
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

/// A 2026-07-28 result's `_meta`, `{"io.modelcontextprotocol/serverInfo": …}`, written to
/// JSON once and copied into each answer as it is: the same bytes as serialising the
/// server's [`Implementation`] there, without escaping its strings again on every answer.
#[derive(Debug, Clone)]
pub struct ServerInfoMeta(Box<RawValue>);

impl ServerInfoMeta {
    /// The `_meta` naming `server_info`.
    pub fn new(server_info: &Implementation) -> Self {
        struct Named<'a>(&'a Implementation);
        impl Serialize for Named<'_> {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let mut map = serializer.serialize_map(Some(1))?;
                map.serialize_entry(META_SERVER_INFO, self.0)?;
                map.end()
            }
        }
        Self(
            serde_json::value::to_raw_value(&Named(server_info))
                .expect("an implementation serialises"),
        )
    }
}

impl Serialize for ServerInfoMeta {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

#[cfg(test)]
mod tests;
