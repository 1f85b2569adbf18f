//! Classify an incoming HTTP body as a JSON-RPC request, notification, response or batch.
//!
//! The body is parsed into a `serde_json::Value` and each member is checked by hand, so a
//! refusal says exactly which member is wrong instead of "data did not match any variant".
//!
//! A batch is bounded while it is read: at most [`MAX_BATCH_LEN`] items become `Value`s,
//! the rest are only checked for syntax and counted, so a 1 MiB array of 500 000 items
//! costs 32 small values and one error, not 500 000 values and 500 000 answers.

// An `ErrorResponse` carries a `serde_json::Value` id, which is larger with serde_json's
// `preserve_order` (enabled in the build by cedar-policy); a refusal is answered at once,
// so its size on the stack costs nothing worth a box.
#![allow(clippy::result_large_err)]

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use crate::jsonrpc::{
    ErrorCode, ErrorObject, ErrorResponse, Notification, Outcome, Request, RequestId, Response,
};

/// One classified POST body.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// A request: answer it with a [`Response`].
    Request(Request),
    /// A notification: accept it (HTTP 202, no body).
    Notification(Notification),
    /// A client-to-server JSON-RPC response or error: accept it (HTTP 202, no body).
    Response(Response),
    /// A JSON array of messages, each classified on its own. Legal only in 2025-03-26
    /// ([`crate::ProtocolVersion::allows_batch`]); the server decides. Never empty.
    Batch(Vec<Result<Message, ErrorResponse>>),
}

/// One message that is not a batch (an item of [`Incoming::Batch`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// A request.
    Request(Request),
    /// A notification.
    Notification(Notification),
    /// A response or error from the client.
    Response(Response),
}

impl From<Message> for Incoming {
    fn from(m: Message) -> Self {
        match m {
            Message::Request(r) => Incoming::Request(r),
            Message::Notification(n) => Incoming::Notification(n),
            Message::Response(r) => Incoming::Response(r),
        }
    }
}

/// Classify a raw POST body.
///
/// Errors, ready to send as the body:
/// - not UTF-8, empty, or not JSON: `-32700` with `"id": null`;
/// - JSON but not a JSON-RPC message (not an object, `jsonrpc` missing or not `"2.0"`, `id`
///   neither string nor number, `null` id on a request, `method` not a string, `params`
///   neither object nor array, an empty array, a response with both or neither of
///   `result`/`error`): `-32600`, carrying the id when it could be read.
///
/// A non-empty array is `Ok(Incoming::Batch)` even when some items are invalid: JSON-RPC
/// answers each item on its own (but see [`invalid_batch_error`]). An array of more than
/// [`MAX_BATCH_LEN`] items is one `-32600` that names the limit, and only once the whole
/// body is known to be JSON (a body that is not JSON is `-32700`, whatever its length).
pub fn parse_message(body: &[u8]) -> Result<Incoming, ErrorResponse> {
    let text = std::str::from_utf8(body)
        .map_err(|e| parse_error(format!("the body is not valid UTF-8 ({e})")))?;
    if text.trim().is_empty() {
        return Err(parse_error("the body is empty".to_owned()));
    }
    if is_array(text) {
        return parse_batch(text);
    }
    let value: Value = serde_json::from_str(text).map_err(|e| parse_error(e.to_string()))?;
    classify_value(value).map(Incoming::from)
}

/// Most messages one batch may hold; a longer batch is refused whole, before any item runs.
///
/// 32 is far more than a client batches in practice (the MCP revision that has batches,
/// 2025-03-26, sends a handful at most), and small enough that a batch costs at most 32
/// classified items and 32 answers, each bounded like a single message's.
pub const MAX_BATCH_LEN: usize = 32;

/// One error for a batch in which no item is a valid message (`None` when any item is).
///
/// A batch of garbage such as `[1,1,1]` is answered with this single `-32600` (HTTP 400,
/// `"id": null`) instead of one error per item, so refusing it never costs more than
/// refusing a single bad message. The message counts the items and quotes the first
/// item's problem.
pub fn invalid_batch_error(items: &[Result<Message, ErrorResponse>]) -> Option<ErrorResponse> {
    let mut first = None;
    for item in items {
        match item {
            Ok(_) => return None,
            Err(e) => {
                first.get_or_insert(e);
            }
        }
    }
    let first = first?;
    let detail = first
        .error
        .message
        .strip_prefix("Invalid Request: ")
        .unwrap_or(&first.error.message);
    Some(invalid(
        None,
        format!(
            "none of the {} items of the batch is a valid JSON-RPC message (item 1: {detail})",
            items.len()
        ),
    ))
}

/// Whether the JSON text starts with `[` after JSON whitespace (only JSON's four, so that
/// anything else reaches serde_json and gets its usual error).
fn is_array(text: &str) -> bool {
    text.bytes()
        .find(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        == Some(b'[')
}

/// Reads a top-level array exactly as `serde_json::from_str::<Value>` would (same errors,
/// same recursion limit), but keeps only the first [`MAX_BATCH_LEN`] items as values.
fn parse_batch(text: &str) -> Result<Incoming, ErrorResponse> {
    let mut de = serde_json::Deserializer::from_str(text);
    let read = de
        .deserialize_seq(BatchVisitor)
        .and_then(|read| de.end().map(|()| read));
    match read.map_err(|e| parse_error(e.to_string()))? {
        ReadBatch::Items(items) if items.is_empty() => Err(invalid(
            None,
            "an empty array is not a valid batch".to_owned(),
        )),
        ReadBatch::Items(items) => Ok(Incoming::Batch(
            items.into_iter().map(classify_value).collect(),
        )),
        ReadBatch::TooLong(len) => Err(invalid(
            None,
            format!(
                "a batch may hold at most {MAX_BATCH_LEN} messages and this one has {len}; send fewer messages per request"
            ),
        )),
    }
}

/// A top-level array as [`BatchVisitor`] read it.
enum ReadBatch {
    /// At most [`MAX_BATCH_LEN`] items.
    Items(Vec<Value>),
    /// More than [`MAX_BATCH_LEN`] items: how many.
    TooLong(usize),
}

struct BatchVisitor;

impl<'de> Visitor<'de> for BatchVisitor {
    type Value = ReadBatch;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON array")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ReadBatch, A::Error> {
        let mut items = Vec::new();
        while items.len() < MAX_BATCH_LEN {
            match seq.next_element::<Value>()? {
                Some(item) => items.push(item),
                None => return Ok(ReadBatch::Items(items)),
            }
        }
        if seq.next_element::<Skip>()?.is_none() {
            return Ok(ReadBatch::Items(items));
        }
        let mut len = items.len() + 1;
        drop(items);
        while seq.next_element::<Skip>()?.is_some() {
            len += 1;
        }
        Ok(ReadBatch::TooLong(len))
    }
}

/// Any JSON value, checked like a `Value` (same number and string rules, same recursion
/// limit, since it goes through `deserialize_any` too) but never stored.
struct Skip;

impl<'de> Deserialize<'de> for Skip {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Skip, D::Error> {
        d.deserialize_any(SkipVisitor)
    }
}

struct SkipVisitor;

impl<'de> Visitor<'de> for SkipVisitor {
    type Value = Skip;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Skip, A::Error> {
        while seq.next_element::<Skip>()?.is_some() {}
        Ok(Skip)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Skip, A::Error> {
        while map.next_entry::<Skip, Skip>()?.is_some() {}
        Ok(Skip)
    }
}

fn parse_error(detail: String) -> ErrorResponse {
    ErrorResponse::new(
        None,
        ErrorObject::new(ErrorCode::PARSE_ERROR, format!("Parse error: {detail}")),
    )
}

fn invalid(id: Option<RequestId>, detail: String) -> ErrorResponse {
    ErrorResponse::new(id, ErrorObject::invalid_request(detail))
}

/// The `id` member as found.
enum IdMember {
    Absent,
    Null,
    Valid(RequestId),
}

fn classify_value(value: Value) -> Result<Message, ErrorResponse> {
    let mut obj: Map<String, Value> = match value {
        Value::Object(obj) => obj,
        other => {
            return Err(invalid(
                None,
                format!("a message must be a JSON object, got {}", kind(&other)),
            ));
        }
    };

    let id = match obj.get("id") {
        None => Ok(IdMember::Absent),
        Some(Value::Null) => Ok(IdMember::Null),
        Some(Value::Number(n)) if !(n.is_i64() || n.is_u64()) => {
            // A huge or fractional number would come back altered (JSON numbers are read
            // as f64 here), and the client could not match the answer: refuse it.
            Err("a number that is not a 64-bit integer")
        }
        Some(v) => RequestId::from_value(v).map(IdMember::Valid).ok_or(kind(v)),
    };
    let echo = match &id {
        Ok(IdMember::Valid(id)) => Some(id.clone()),
        _ => None,
    };

    match obj.get("jsonrpc") {
        Some(Value::String(s)) if s == "2.0" => {}
        None => {
            return Err(invalid(
                echo,
                "the \"jsonrpc\" member is missing (it must be \"2.0\")".to_owned(),
            ));
        }
        Some(other) => {
            return Err(invalid(
                echo,
                format!("\"jsonrpc\" must be \"2.0\", got {}", show(other)),
            ));
        }
    }

    let id = id.map_err(|kind| {
        invalid(
            None,
            format!("\"id\" must be a string or an integer, got {kind}"),
        )
    })?;

    if let Some(method) = obj.remove("method") {
        let Value::String(method) = method else {
            return Err(invalid(
                echo,
                format!("\"method\" must be a string, got {}", kind(&method)),
            ));
        };
        let params = match obj.remove("params") {
            None => None,
            Some(p @ (Value::Object(_) | Value::Array(_))) => Some(p),
            Some(other) => {
                return Err(invalid(
                    echo,
                    format!(
                        "\"params\" must be an object or an array, got {}",
                        kind(&other)
                    ),
                ));
            }
        };
        return match id {
            IdMember::Absent => Ok(Message::Notification(Notification { method, params })),
            IdMember::Null => Err(invalid(
                None,
                format!("the request id must not be null (method \"{method}\")"),
            )),
            IdMember::Valid(id) => Ok(Message::Request(Request { id, method, params })),
        };
    }

    match (obj.remove("result"), obj.remove("error")) {
        (Some(_), Some(_)) => Err(invalid(
            echo,
            "a response must not carry both \"result\" and \"error\"".to_owned(),
        )),
        (Some(result), None) => match id {
            IdMember::Valid(id) => Ok(Message::Response(Response::result(id, result))),
            IdMember::Absent | IdMember::Null => Err(invalid(
                None,
                "a result response must carry the id of the request it answers".to_owned(),
            )),
        },
        (None, Some(error)) => {
            let error: ErrorObject = serde_json::from_value(error).map_err(|e| {
                invalid(
                    echo.clone(),
                    format!(
                        "\"error\" must be an object with an integer \"code\" and a string \"message\" ({e})"
                    ),
                )
            })?;
            match id {
                IdMember::Absent => Err(invalid(
                    None,
                    "an error response must have an \"id\" member (null when unknown)".to_owned(),
                )),
                IdMember::Null => Ok(Message::Response(Response {
                    id: None,
                    outcome: Outcome::Error(error),
                })),
                IdMember::Valid(id) => Ok(Message::Response(Response {
                    id: Some(id),
                    outcome: Outcome::Error(error),
                })),
            }
        }
        (None, None) => Err(invalid(
            echo,
            "the message has no \"method\" (request or notification) and no \"result\" or \"error\" (response)"
                .to_owned(),
        )),
    }
}

/// The JSON type of a value, for messages.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A short rendering of a value for messages (never more than ~40 characters).
fn show(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() <= 40 {
        text
    } else {
        let cut: String = text.chars().take(37).collect();
        format!("{cut}...")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn array(items: &[&str]) -> String {
        format!("[{}]", items.join(","))
    }

    fn ping(id: usize) -> String {
        format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#)
    }

    #[test]
    fn a_batch_at_the_limit_is_classified_item_by_item() {
        let items: Vec<String> = (0..MAX_BATCH_LEN).map(ping).collect();
        let refs: Vec<&str> = items.iter().map(String::as_str).collect();
        let Ok(Incoming::Batch(out)) = parse_message(array(&refs).as_bytes()) else {
            panic!("a batch of {MAX_BATCH_LEN} is accepted");
        };
        assert_eq!(out.len(), MAX_BATCH_LEN);
        assert!(out.iter().all(|i| matches!(i, Ok(Message::Request(_)))));
    }

    #[test]
    fn a_batch_past_the_limit_is_one_error_naming_it() {
        let items: Vec<String> = (0..=MAX_BATCH_LEN).map(ping).collect();
        let refs: Vec<&str> = items.iter().map(String::as_str).collect();
        let err = parse_message(array(&refs).as_bytes()).expect_err("too long");
        assert_eq!(err.error.code, ErrorCode::INVALID_REQUEST);
        assert_eq!(err.id, None);
        assert_eq!(
            err.error.message,
            "Invalid Request: a batch may hold at most 32 messages and this one has 33; send fewer messages per request"
        );
    }

    #[test]
    fn a_megabyte_of_ones_is_counted_not_stored() {
        let n = 512 * 1024 - 1;
        let body = format!("[{}1]", "1,".repeat(n - 1));
        assert!(body.len() <= 1024 * 1024);
        let err = parse_message(body.as_bytes()).expect_err("too long");
        assert_eq!(err.error.code, ErrorCode::INVALID_REQUEST);
        assert!(
            err.error
                .message
                .contains(&format!("at most 32 messages and this one has {n}"))
        );
        assert!(serde_json::to_vec(&err).unwrap().len() < 256);
    }

    /// Whatever the length, a body that is not JSON is -32700 with serde_json's own message,
    /// exactly as when the whole array was read into a `Value`.
    #[test]
    fn arrays_that_are_not_json_keep_serde_json_errors_at_any_length() {
        let long = "1,".repeat(MAX_BATCH_LEN + 8);
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        let bodies = [
            "[1,2".to_owned(),
            "[1,]".to_owned(),
            "[1 2]".to_owned(),
            "[1] x".to_owned(),
            "[1e400]".to_owned(),
            r#"["\ud800"]"#.to_owned(),
            r#"[{"a":1,}]"#.to_owned(),
            deep.clone(),
            format!("[{long}"),
            format!("[{long}]"),
            format!("[{long}1] x"),
            format!("[{long}1e400]"),
            format!("[{long}{deep}]"),
            format!(r#"[{long}"\ud800"]"#),
            format!(r#"[{long}{{"a":1,}}]"#),
            format!(r#"[{long}{{1:1}}]"#),
        ];
        for body in bodies {
            let expected = serde_json::from_str::<Value>(&body).expect_err("not JSON");
            let err = parse_message(body.as_bytes()).expect_err("refused");
            assert_eq!(err, parse_error(expected.to_string()), "body {body:.60}");
        }
    }

    #[test]
    fn a_batch_of_garbage_gets_one_error() {
        let Ok(Incoming::Batch(items)) =
            parse_message(br#"[1, "x", {"jsonrpc":"1.0","id":3,"method":"ping"}]"#)
        else {
            panic!("a batch");
        };
        assert_eq!(items.len(), 3);
        let err = invalid_batch_error(&items).expect("all invalid");
        assert_eq!(err.error.code, ErrorCode::INVALID_REQUEST);
        assert_eq!(err.id, None);
        assert_eq!(
            err.error.message,
            "Invalid Request: none of the 3 items of the batch is a valid JSON-RPC message (item 1: a message must be a JSON object, got a number)"
        );
    }

    #[test]
    fn a_batch_with_one_valid_item_is_answered_item_by_item() {
        let body = format!(r#"[1, 2, {}]"#, ping(7));
        let Ok(Incoming::Batch(items)) = parse_message(body.as_bytes()) else {
            panic!("a batch");
        };
        assert_eq!(invalid_batch_error(&items), None);
        // A notification or a client response is valid too, though it gets no answer.
        let Ok(Incoming::Batch(items)) =
            parse_message(br#"[1, {"jsonrpc":"2.0","method":"notifications/initialized"}]"#)
        else {
            panic!("a batch");
        };
        assert_eq!(invalid_batch_error(&items), None);
    }
}
