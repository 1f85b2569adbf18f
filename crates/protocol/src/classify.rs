//! Classify an incoming HTTP body as a JSON-RPC request, notification, response or batch.
//!
//! The body is parsed into a `serde_json::Value` and each member is checked by hand, so a
//! refusal says exactly which member is wrong instead of "data did not match any variant".

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
/// answers each item on its own.
pub fn parse_message(body: &[u8]) -> Result<Incoming, ErrorResponse> {
    let text = std::str::from_utf8(body)
        .map_err(|e| parse_error(format!("the body is not valid UTF-8 ({e})")))?;
    if text.trim().is_empty() {
        return Err(parse_error("the body is empty".to_owned()));
    }
    let value: Value = serde_json::from_str(text).map_err(|e| parse_error(e.to_string()))?;
    match value {
        Value::Array(items) if items.is_empty() => Err(invalid(
            None,
            "an empty array is not a valid batch".to_owned(),
        )),
        Value::Array(items) => Ok(Incoming::Batch(
            items.into_iter().map(classify_value).collect(),
        )),
        other => classify_value(other).map(Incoming::from),
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
