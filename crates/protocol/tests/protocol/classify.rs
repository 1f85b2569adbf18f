//! `parse_message` on good and bad bodies: every refusal has the right code, id and reason.

use serde_json::{Value, json};
use supervise_protocol::{
    ErrorCode, ErrorResponse, Incoming, Message, Outcome, RequestId, parse_message,
};

/// Classify `body`, expecting a refusal; return it and its serialised form.
fn refuse(body: &[u8]) -> (ErrorResponse, Value) {
    let err = parse_message(body).expect_err("the body should be refused");
    let json = serde_json::to_value(&err).unwrap();
    (err, json)
}

fn refuse_json(body: Value) -> (ErrorResponse, Value) {
    refuse(body.to_string().as_bytes())
}

#[test]
fn garbage_is_a_parse_error_with_null_id() {
    let (err, json) = refuse(b"{not json");
    assert_eq!(err.error.code, ErrorCode::PARSE_ERROR);
    assert_eq!(err.id, None);
    assert_eq!(json["id"], Value::Null);
    assert_eq!(json["jsonrpc"], "2.0");
    assert_eq!(json["error"]["code"], -32700);
    assert!(
        err.error.message.starts_with("Parse error: "),
        "{}",
        err.error.message
    );
}

#[test]
fn empty_body_is_a_parse_error() {
    for body in [&b""[..], b"  \n"] {
        let (err, _) = refuse(body);
        assert_eq!(err.error.code, ErrorCode::PARSE_ERROR);
        assert!(err.error.message.contains("empty"), "{}", err.error.message);
    }
}

#[test]
fn non_utf8_is_a_parse_error_naming_utf8() {
    let (err, json) = refuse(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\"}");
    assert_eq!(err.error.code, ErrorCode::PARSE_ERROR);
    assert_eq!(json["id"], Value::Null);
    assert!(err.error.message.contains("UTF-8"), "{}", err.error.message);
}

#[test]
fn jsonrpc_1_0_is_invalid_and_keeps_the_id() {
    let (err, json) = refuse_json(json!({"jsonrpc": "1.0", "id": 9, "method": "ping"}));
    assert_eq!(err.error.code, ErrorCode::INVALID_REQUEST);
    assert_eq!(json["id"], 9);
    assert_eq!(
        err.error.message,
        "Invalid Request: \"jsonrpc\" must be \"2.0\", got \"1.0\""
    );
}

#[test]
fn jsonrpc_as_number_is_invalid() {
    let (err, _) = refuse_json(json!({"jsonrpc": 2.0, "id": "a", "method": "ping"}));
    assert_eq!(err.error.code, ErrorCode::INVALID_REQUEST);
    assert_eq!(err.id, Some(RequestId::from("a")));
}

#[test]
fn missing_jsonrpc_is_invalid() {
    let (err, json) = refuse_json(json!({"id": "r1", "method": "tools/list"}));
    assert_eq!(err.error.code, ErrorCode::INVALID_REQUEST);
    assert_eq!(json["id"], "r1");
    assert!(err.error.message.contains("\"jsonrpc\" member is missing"));
}

#[test]
fn object_id_is_invalid_with_null_id() {
    let (err, json) = refuse_json(json!({"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}));
    assert_eq!(err.error.code, ErrorCode::INVALID_REQUEST);
    assert_eq!(json["id"], Value::Null);
    assert_eq!(
        err.error.message,
        "Invalid Request: \"id\" must be a string or an integer, got an object"
    );
}

#[test]
fn bool_id_is_invalid() {
    let (err, _) = refuse_json(json!({"jsonrpc": "2.0", "id": true, "method": "ping"}));
    assert_eq!(err.error.code, ErrorCode::INVALID_REQUEST);
    assert_eq!(err.id, None);
    assert!(err.error.message.contains("got a boolean"));
}

#[test]
fn null_id_on_a_request_is_invalid() {
    let (err, json) = refuse_json(json!({"jsonrpc": "2.0", "id": null, "method": "tools/list"}));
    assert_eq!(err.error.code, ErrorCode::INVALID_REQUEST);
    assert_eq!(json["id"], Value::Null);
    assert!(
        err.error.message.contains("must not be null"),
        "{}",
        err.error.message
    );
}

#[test]
fn numeric_method_is_invalid_and_keeps_the_id() {
    let (err, json) = refuse_json(json!({"jsonrpc": "2.0", "id": 4, "method": 42}));
    assert_eq!(err.error.code, ErrorCode::INVALID_REQUEST);
    assert_eq!(json["id"], 4);
    assert_eq!(
        err.error.message,
        "Invalid Request: \"method\" must be a string, got a number"
    );
}

#[test]
fn string_params_are_invalid() {
    let (err, json) =
        refuse_json(json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": "x"}));
    assert_eq!(err.error.code, ErrorCode::INVALID_REQUEST);
    assert_eq!(json["id"], 5);
    assert!(
        err.error
            .message
            .contains("\"params\" must be an object or an array, got a string")
    );
}

#[test]
fn a_scalar_body_is_invalid() {
    let (err, _) = refuse_json(json!("hello"));
    assert_eq!(err.error.code, ErrorCode::INVALID_REQUEST);
    assert!(
        err.error
            .message
            .contains("must be a JSON object, got a string")
    );
}

#[test]
fn message_without_method_result_or_error_is_invalid() {
    let (err, json) = refuse_json(json!({"jsonrpc": "2.0", "id": 6}));
    assert_eq!(err.error.code, ErrorCode::INVALID_REQUEST);
    assert_eq!(json["id"], 6);
}

#[test]
fn request_is_classified_with_id_method_and_params() {
    let body =
        json!({"jsonrpc": "2.0", "id": "abc", "method": "tools/call", "params": {"name": "x"}});
    let Ok(Incoming::Request(req)) = parse_message(body.to_string().as_bytes()) else {
        panic!("not a request");
    };
    assert_eq!(req.id, RequestId::from("abc"));
    assert_eq!(req.method, "tools/call");
    assert_eq!(req.params, Some(json!({"name": "x"})));
    // Re-encoding gives the same message back.
    assert_eq!(serde_json::to_value(&req).unwrap(), body);
}

#[test]
fn integer_ids_are_echoed_exactly() {
    for id in [json!(u64::MAX), json!(i64::MIN), json!(-3), json!(0)] {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "ping"});
        let Ok(Incoming::Request(req)) = parse_message(body.to_string().as_bytes()) else {
            panic!("not a request: {body}");
        };
        assert_eq!(serde_json::to_value(&req.id).unwrap(), id);
    }
}

#[test]
fn ids_that_would_come_back_altered_are_refused() {
    // Read as f64, these could not be echoed as sent, so the client could not match them.
    for raw in ["123456789012345678901234567890", "1.5", "1e3"] {
        let body = format!(r#"{{"jsonrpc":"2.0","id":{raw},"method":"ping"}}"#);
        let err = parse_message(body.as_bytes()).expect_err(raw);
        assert_eq!(err.error.code, ErrorCode::INVALID_REQUEST, "{raw}");
        assert!(
            err.error.message.contains("64-bit integer"),
            "{}",
            err.error.message
        );
        assert!(err.id.is_none());
    }
}

#[test]
fn notification_has_no_id() {
    let body = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    match parse_message(body) {
        Ok(Incoming::Notification(n)) => {
            assert_eq!(n.method, "notifications/initialized");
            assert_eq!(n.params, None);
        }
        other => panic!("not a notification: {other:?}"),
    }
}

#[test]
fn client_responses_are_classified_as_responses() {
    let body = br#"{"jsonrpc":"2.0","id":"s-1","result":{"action":"accept"}}"#;
    match parse_message(body) {
        Ok(Incoming::Response(r)) => {
            assert_eq!(r.id, Some(RequestId::from("s-1")));
            assert_eq!(r.outcome, Outcome::Result(json!({"action": "accept"})));
        }
        other => panic!("not a response: {other:?}"),
    }
    let body = br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"nope"}}"#;
    match parse_message(body) {
        Ok(Incoming::Response(r)) => {
            assert_eq!(r.id, None);
            let Outcome::Error(e) = r.outcome else {
                panic!("not an error")
            };
            assert_eq!(e.code, ErrorCode::INVALID_REQUEST);
            assert_eq!(e.message, "nope");
        }
        other => panic!("not a response: {other:?}"),
    }
}

#[test]
fn malformed_responses_are_invalid() {
    let (err, _) = refuse_json(
        json!({"jsonrpc": "2.0", "id": 1, "result": {}, "error": {"code": 1, "message": "x"}}),
    );
    assert!(err.error.message.contains("both"));
    let (err, _) = refuse_json(json!({"jsonrpc": "2.0", "result": {}}));
    assert!(err.error.message.contains("must carry the id"));
    let (err, json) = refuse_json(json!({"jsonrpc": "2.0", "id": 2, "error": {"code": "x"}}));
    assert_eq!(err.error.code, ErrorCode::INVALID_REQUEST);
    assert_eq!(json["id"], 2);
}

#[test]
fn batch_classifies_each_item() {
    let body = json!([
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "1.0", "id": 3, "method": "ping"},
        {"jsonrpc": "2.0", "id": 4, "result": {}}
    ]);
    let Ok(Incoming::Batch(items)) = parse_message(body.to_string().as_bytes()) else {
        panic!("not a batch");
    };
    assert_eq!(items.len(), 4);
    assert!(matches!(&items[0], Ok(Message::Request(r)) if r.method == "tools/list"));
    assert!(matches!(&items[1], Ok(Message::Notification(_))));
    let Err(bad) = &items[2] else {
        panic!("item 3 should be refused")
    };
    assert_eq!(bad.error.code, ErrorCode::INVALID_REQUEST);
    assert_eq!(bad.id, Some(RequestId::from(3)));
    assert!(matches!(&items[3], Ok(Message::Response(_))));
}

#[test]
fn empty_batch_is_invalid() {
    let (err, json) = refuse(b"[]");
    assert_eq!(err.error.code, ErrorCode::INVALID_REQUEST);
    assert_eq!(json["id"], Value::Null);
    assert!(err.error.message.contains("empty array"));
}
