//! `ping` (handshake era): an empty result.

use serde_json::{Value, json};

pub(crate) fn call() -> Value {
    json!({})
}
