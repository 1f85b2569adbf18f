//! The legacy `initialize` handshake: params, result, implementation info and capabilities.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::version::ProtocolVersion;

/// `Implementation`: a client's or server's name and version (`clientInfo`, `serverInfo`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Implementation {
    /// Programmatic name, e.g. `supervise`.
    pub name: String,
    /// Version string; an absent one decodes as empty (lenient).
    #[serde(default)]
    pub version: String,
    /// Display name (2025-06-18 and later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Members not modelled here (`description`, `icons`, `websiteUrl`, …), kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Implementation {
    /// `{"name": name, "version": version}`.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            version: version.into(),
            title: None,
            extra: Map::new(),
        }
    }
}

/// `params` of `initialize`. Lenient: unknown members are kept in `extra`, and `capabilities`
/// and `clientInfo` may be absent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct InitializeParams {
    /// The revision the client asks for; any string (see [`crate::negotiate`]).
    pub protocol_version: String,
    /// The client's capabilities (`ClientCapabilities`), as sent.
    #[serde(default)]
    pub capabilities: Map<String, Value>,
    /// The client's identity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_info: Option<Implementation>,
    /// `_meta`, if any.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Members not modelled here, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `capabilities.tools`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolsCapability {
    /// Whether the server sends `notifications/tools/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
}

/// `ServerCapabilities`, as sent in `initialize` and `server/discover` results.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ServerCapabilities {
    /// `tools`, when the server has tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<ToolsCapability>,
    /// `extensions`: extension id → settings object (e.g. `io.modelcontextprotocol/tasks`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Map<String, Value>>,
    /// Capabilities not modelled here (`logging`, `prompts`, `resources`, `tasks`, …), kept
    /// verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ServerCapabilities {
    /// The same capabilities with `tools: {"listChanged": list_changed}`.
    #[must_use]
    pub fn with_tools(mut self, list_changed: bool) -> Self {
        self.tools = Some(ToolsCapability {
            list_changed: Some(list_changed),
        });
        self
    }

    /// The same capabilities with `extensions[id] = settings` (`{}` for "supported").
    #[must_use]
    pub fn with_extension(mut self, id: impl Into<String>, settings: Value) -> Self {
        self.extensions
            .get_or_insert_with(Map::new)
            .insert(id.into(), settings);
        self
    }
}

/// The `initialize` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct InitializeResult {
    /// The negotiated revision (see [`crate::negotiate`]).
    pub protocol_version: ProtocolVersion,
    /// What the server offers.
    pub capabilities: ServerCapabilities,
    /// The server's identity.
    pub server_info: Implementation,
    /// Guidance for the model about using this server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// `_meta`, if any.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

impl InitializeResult {
    /// A result for `version` with `capabilities: {"tools": {"listChanged": false}}`.
    pub fn new(version: ProtocolVersion, server_info: Implementation) -> Self {
        Self {
            protocol_version: version,
            capabilities: ServerCapabilities::default().with_tools(false),
            server_info,
            instructions: None,
            meta: None,
        }
    }

    /// The same result with `instructions` set.
    #[must_use]
    pub fn with_instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }
}
