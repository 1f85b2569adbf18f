//! `ping` (handshake era): an empty result.

use serde_json::{Value, json};

pub fn call() -> Value {
    json!({})
}
