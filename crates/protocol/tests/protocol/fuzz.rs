//! Fuzzing: property tests (the stand-in for `cargo fuzz`, which needs a nightly
//! toolchain CI does not have) over request classification, `parse_message`, and the other
//! functions that read untrusted request data: `modern_meta`, `requested_version`,
//! `parse_params::<CallToolParams>` and `decode_header_value`.
//!
//! Properties: never a panic; a refusal is always a well-formed JSON-RPC error response
//! (`jsonrpc: "2.0"`, code -32700 for bytes that are not JSON, -32600 for JSON that is not
//! a message) carrying the request id only when it could be read; an accepted request keeps
//! its id and method exactly.
//!
//! The normal test run uses proptest's default case count (256 per property, or
//! `PROPTEST_CASES`). `scripts/fuzz.sh` runs the timed loop at the bottom
//! (`fuzz_for_a_fixed_time`, ignored by default) for a fixed number of seconds and prints
//! execs, time and failures.

use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::{Map, Value, json};
use supervise_protocol::{
    CallToolParams, ErrorCode, ErrorResponse, Incoming, Message, decode_header_value, methods,
    modern_meta, parse_message, parse_params, requested_version,
};

/// Any JSON value, up to a few levels deep, biased toward JSON-RPC-looking keys.
fn json_value() -> impl Strategy<Value = Value> {
    let key = prop_oneof![
        Just("jsonrpc".to_string()),
        Just("id".to_string()),
        Just("method".to_string()),
        Just("params".to_string()),
        Just("result".to_string()),
        Just("error".to_string()),
        Just("code".to_string()),
        Just("message".to_string()),
        Just("_meta".to_string()),
        Just("name".to_string()),
        Just("arguments".to_string()),
        Just("io.modelcontextprotocol/protocolVersion".to_string()),
        ".{0,12}",
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        Just(Value::from("2.0")),
        Just(Value::from("2025-11-25")),
        Just(Value::from("2026-07-28")),
        Just(Value::from("tools/call")),
        ".{0,24}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 8, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((key.clone(), inner), 0..8)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// A valid request with an arbitrary id, method and params.
fn valid_request() -> impl Strategy<Value = Value> {
    let id = prop_oneof![
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        ".{0,40}".prop_map(Value::from),
    ];
    let method = prop_oneof![
        Just(methods::TOOLS_CALL.to_string()),
        Just(methods::INITIALIZE.to_string()),
        Just(methods::PING.to_string()),
        ".{0,30}",
    ];
    let params = prop_oneof![
        Just(None),
        json_value().prop_map(|v| match v {
            v @ (Value::Object(_) | Value::Array(_)) => Some(v),
            other => Some(json!({ "v": other })),
        }),
    ];
    (id, method, params).prop_map(|(id, method, params)| {
        let mut m = Map::new();
        m.insert("jsonrpc".into(), "2.0".into());
        m.insert("id".into(), id);
        m.insert("method".into(), method.into());
        if let Some(p) = params {
            m.insert("params".into(), p);
        }
        Value::Object(m)
    })
}

/// Byte-level mutations of a serialised valid request.
#[derive(Debug, Clone)]
enum Mutation {
    Flip(usize, u8),
    Insert(usize, u8),
    Delete(usize),
    Truncate(usize),
    Duplicate(usize, usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::Flip(i, b)),
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::Insert(i, b)),
        any::<usize>().prop_map(Mutation::Delete),
        any::<usize>().prop_map(Mutation::Truncate),
        (any::<usize>(), 1usize..64).prop_map(|(i, n)| Mutation::Duplicate(i, n)),
    ]
}

fn mutate(mut bytes: Vec<u8>, mutations: &[Mutation]) -> Vec<u8> {
    for m in mutations {
        let len = bytes.len().max(1);
        match *m {
            Mutation::Flip(i, b) if !bytes.is_empty() => bytes[i % len] ^= b | 1,
            Mutation::Insert(i, b) => bytes.insert(i % (bytes.len() + 1), b),
            Mutation::Delete(i) if !bytes.is_empty() => {
                bytes.remove(i % len);
            }
            Mutation::Truncate(i) => bytes.truncate(i % (bytes.len() + 1)),
            Mutation::Duplicate(i, n) if !bytes.is_empty() => {
                let start = i % len;
                let end = (start + n).min(bytes.len());
                let copy = bytes[start..end].to_vec();
                bytes.splice(start..start, copy);
            }
            _ => {}
        }
    }
    bytes
}

/// A refusal must be a JSON-RPC error response with a standard code.
fn check_refusal(body: &[u8], err: &ErrorResponse) -> Result<(), TestCaseError> {
    let code = err.error.code;
    prop_assert!(
        code == ErrorCode::PARSE_ERROR || code == ErrorCode::INVALID_REQUEST,
        "unexpected code {code:?}"
    );
    let is_json = std::str::from_utf8(body)
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(t).ok())
        .is_some();
    prop_assert_eq!(code == ErrorCode::PARSE_ERROR, !is_json, "code {:?}", code);
    prop_assert!(!err.error.message.is_empty());
    let wire = serde_json::to_value(err).expect("an error response serialises");
    prop_assert_eq!(&wire["jsonrpc"], "2.0");
    prop_assert!(wire["error"]["code"].is_i64());
    prop_assert!(
        wire.get("id").is_some(),
        "an error response always has an id member"
    );
    Ok(())
}

/// Classifies `body`; checks the invariants; returns whether it was accepted.
fn classify(body: &[u8]) -> Result<bool, TestCaseError> {
    match parse_message(body) {
        Err(e) => {
            check_refusal(body, &e)?;
            Ok(false)
        }
        Ok(Incoming::Batch(items)) => {
            prop_assert!(!items.is_empty());
            for item in &items {
                if let Err(e) = item {
                    prop_assert_eq!(e.error.code, ErrorCode::INVALID_REQUEST);
                    serde_json::to_value(e).expect("serialises");
                }
            }
            Ok(true)
        }
        Ok(Incoming::Request(r)) => {
            let v: Value = serde_json::from_slice(body).expect("accepted bodies are JSON");
            prop_assert_eq!(&v["jsonrpc"], "2.0");
            prop_assert_eq!(v["method"].as_str(), Some(r.method.as_str()));
            prop_assert!(v["id"].is_string() || v["id"].is_number());
            // The params-reading helpers never panic on what a request carries.
            let _ = modern_meta(r.params.as_ref());
            let _ = requested_version(r.params.as_ref());
            let _ = parse_params::<CallToolParams>(methods::TOOLS_CALL, r.params.as_ref());
            Ok(true)
        }
        Ok(Incoming::Notification(_) | Incoming::Response(_)) => Ok(true),
    }
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(body in prop::collection::vec(any::<u8>(), 0..512)) {
        classify(&body)?;
    }

    #[test]
    fn arbitrary_json_never_panics(value in json_value()) {
        let body = value.to_string();
        classify(body.as_bytes())?;
        if !value.is_object() && !value.is_array() {
            let err = parse_message(body.as_bytes()).expect_err("a scalar is not a message");
            prop_assert_eq!(err.error.code, ErrorCode::INVALID_REQUEST);
        }
    }

    #[test]
    fn valid_requests_keep_their_id_and_method(value in valid_request()) {
        let body = value.to_string();
        match parse_message(body.as_bytes()) {
            Ok(Incoming::Request(r)) => {
                prop_assert_eq!(serde_json::to_value(&r.id).unwrap(), value["id"].clone());
                prop_assert_eq!(Some(r.method.as_str()), value["method"].as_str());
                // serde_json's default float parsing is not exactly round-trip, so compare
                // with the params as they read back, not as generated.
                let reread: Option<Value> = value
                    .get("params")
                    .map(|p| serde_json::from_str(&p.to_string()).unwrap());
                prop_assert_eq!(r.params, reread);
            }
            other => prop_assert!(false, "a valid request was classified as {:?}", other),
        }
    }

    #[test]
    fn mutated_requests_never_panic(
        value in valid_request(),
        mutations in prop::collection::vec(mutation(), 1..8),
    ) {
        let body = mutate(value.to_string().into_bytes(), &mutations);
        classify(&body)?;
    }

    #[test]
    fn refusals_echo_an_id_only_when_it_was_readable(value in valid_request(), bad in json_value()) {
        // Break the message (wrong jsonrpc) but keep the id: the refusal carries it.
        let mut broken = value.clone();
        broken["jsonrpc"] = bad.clone();
        let body = broken.to_string();
        if bad != json!("2.0") {
            let err = parse_message(body.as_bytes()).expect_err("wrong jsonrpc is refused");
            prop_assert_eq!(err.error.code, ErrorCode::INVALID_REQUEST);
            let wire = serde_json::to_value(&err).unwrap();
            prop_assert_eq!(&wire["id"], &value["id"]);
        }
    }

    #[test]
    fn batches_classify_every_item(items in prop::collection::vec(prop_oneof![valid_request(), json_value()], 1..6)) {
        let body = Value::Array(items.clone()).to_string();
        match parse_message(body.as_bytes()) {
            Ok(Incoming::Batch(out)) => {
                prop_assert_eq!(out.len(), items.len());
                for (item, got) in items.iter().zip(&out) {
                    if let Ok(Message::Request(r)) = got {
                        prop_assert_eq!(Some(r.method.as_str()), item["method"].as_str());
                    }
                }
            }
            other => prop_assert!(false, "a non-empty array was classified as {:?}", other),
        }
    }

    #[test]
    fn header_values_never_panic(raw in ".{0,80}", b64 in "[A-Za-z0-9+/=]{0,40}") {
        let _ = decode_header_value(&raw);
        let _ = decode_header_value(&format!("=?base64?{b64}?="));
    }
}

/// Deep nesting is refused by the JSON parser's recursion limit, never a stack overflow.
#[test]
fn very_deep_nesting_is_a_parse_error() {
    for depth in [200, 10_000, 1_000_000] {
        let mut body = "[".repeat(depth);
        body.push_str(&"]".repeat(depth));
        let err = parse_message(body.as_bytes()).expect_err("too deep");
        assert_eq!(err.error.code, ErrorCode::PARSE_ERROR);
    }
}

/// The long run for `scripts/fuzz.sh`: every property above, in turn, until
/// `SUPERVISE_FUZZ_SECONDS` have passed; prints execs, time and failures.
#[test]
#[ignore = "timed fuzz run: scripts/fuzz.sh"]
fn fuzz_for_a_fixed_time() {
    let seconds: u64 = std::env::var("SUPERVISE_FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let started = Instant::now();
    // Executions counted inside the properties (a runner may stop early).
    let execs = std::sync::atomic::AtomicU64::new(0);
    let tick = || execs.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut failures = Vec::new();
    let batch = 2_000u32;
    while Instant::now() < deadline {
        // A fresh runner per property: a runner counts its cases across runs.
        let runner = || {
            TestRunner::new(Config {
                cases: batch,
                failure_persistence: None,
                ..Config::default()
            })
        };
        let results = [
            runner()
                .run(&prop::collection::vec(any::<u8>(), 0..1024), |b| {
                    tick();
                    classify(&b).map(|_| ())
                })
                .map_err(|e| e.to_string()),
            runner()
                .run(&json_value(), |v| {
                    tick();
                    classify(v.to_string().as_bytes()).map(|_| ())
                })
                .map_err(|e| e.to_string()),
            runner()
                .run(
                    &(valid_request(), prop::collection::vec(mutation(), 1..12)),
                    |(v, m)| {
                        tick();
                        classify(&mutate(v.to_string().into_bytes(), &m)).map(|_| ())
                    },
                )
                .map_err(|e| e.to_string()),
        ];
        for r in results {
            if let Err(e) = r {
                failures.push(e);
            }
        }
    }
    let elapsed = started.elapsed();
    let execs = execs.into_inner();
    println!(
        "fuzz parse_message: {execs} execs in {:.1} s ({:.0}/s), {} failures",
        elapsed.as_secs_f64(),
        execs as f64 / elapsed.as_secs_f64(),
        failures.len()
    );
    assert!(failures.is_empty(), "{failures:#?}");
}
