//! `propose-egress`: ask for a host (and port) to be reachable through the egress proxy,
//! optionally only for some methods and a path prefix.

use serde_json::{Map, Value, json};
use supervise_protocol::Tool;
use supervise_store::{Bottle, Kind};

use crate::answer::{self, Answer};
use crate::app::App;
use crate::bottles::Stale;
use crate::grace::{Filed, Wait};

pub(crate) const NAME: &str = "propose-egress";

/// The parsed arguments.
#[derive(Debug, Clone)]
pub(crate) struct Args {
    pub(crate) host: String,
    pub(crate) port: Option<Value>,
    /// `methods` and `path_prefix`, as given (the store validates them).
    pub(crate) limits: Map<String, Value>,
    pub(crate) justification: String,
}

pub(crate) fn definition() -> Tool {
    super::schema::tool(
        NAME,
        "Propose egress",
        "Ask the human operator to allow network egress from this sandbox to a host (and port). \
         Waits briefly for a decision; if none comes in time the answer is `pending` with a \
         proposal_id: poll check-proposal with it later instead of proposing again. Proposing \
         the same change again while it is undecided returns the same proposal.",
        json!({
            "type": "object",
            "properties": {
                "host": {
                    "type": "string",
                    "description": "Hostname (api.example.com), IP address, or wildcard (*.example.com).",
                    "minLength": 1,
                    "maxLength": 253
                },
                "port": {
                    "type": "integer",
                    "description": "TCP port, 1-65535.",
                    "minimum": 1,
                    "maximum": 65535,
                    "default": 443
                },
                "methods": {
                    "type": "array",
                    "description": "Only these HTTP methods (e.g. [\"GET\", \"HEAD\"]); leave out to allow every method. Enforced where the proxy sees requests (mitmproxy); a proxy that cannot see them never lets a limited grant through.",
                    "items": { "type": "string", "minLength": 1, "maxLength": 32 },
                    "minItems": 1,
                    "maxItems": 16
                },
                "path_prefix": {
                    "type": "string",
                    "description": "Only request paths starting with this prefix (e.g. /simple/), compared after normalising the path; leave out to allow every path.",
                    "minLength": 1,
                    "maxLength": 1024
                },
                "justification": {
                    "type": "string",
                    "description": super::schema::JUSTIFICATION_SCHEMA,
                    "minLength": 1,
                    "maxLength": 2000
                }
            },
            "required": ["host", "justification"],
            "additionalProperties": false
        }),
        super::schema::proposal_output_schema(),
        false,
    )
}

pub(crate) fn parse(args: &Map<String, Value>) -> Result<Args, Answer> {
    super::args::refuse_unknown(
        args,
        &["host", "port", "methods", "path_prefix", "justification"],
        NAME,
    )?;
    let host = super::args::required_string(args, "host", NAME)?;
    let port = match args.get("port") {
        None | Some(Value::Null) => None,
        // Models sometimes quote numbers: accept "8443" as 8443.
        Some(Value::String(s)) => match s.trim().parse::<u64>() {
            Ok(n) => Some(Value::from(n)),
            Err(_) => {
                return Err(answer::bad_argument(
                    "port",
                    "must be a number from 1 to 65535",
                    NAME,
                ));
            }
        },
        Some(v) => Some(v.clone()),
    };
    let limits = ["methods", "path_prefix"]
        .into_iter()
        .filter_map(|k| Some((k.to_string(), args.get(k).filter(|v| !v.is_null())?.clone())))
        .collect();
    let justification = super::args::required_string(args, "justification", NAME)?;
    Ok(Args {
        host,
        port,
        limits,
        justification,
    })
}

pub(crate) async fn apply(
    app: &App,
    bottle: &Bottle,
    args: Args,
    wait: Wait,
) -> Result<Filed, Stale> {
    let mut change = Map::new();
    change.insert("host".into(), Value::from(args.host));
    if let Some(port) = args.port {
        change.insert("port".into(), port);
    }
    change.extend(args.limits);
    crate::grace::file(
        app,
        bottle,
        Kind::Egress,
        Value::Object(change),
        args.justification,
        NAME,
        wait,
    )
    .await
}
