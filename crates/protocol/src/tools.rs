//! Tools: definitions, `tools/list` and `tools/call` params and results, content items.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::modern::CacheScope;
use crate::version::ProtocolVersion;

/// `ToolAnnotations`: untrusted hints about a tool's behaviour.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolAnnotations {
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool does not modify its environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// The tool may perform destructive updates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Repeating a call with the same arguments has no further effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// The tool interacts with an open world of external entities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

/// A tool definition, as listed by `tools/list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Tool {
    /// Unique name, e.g. `propose-egress`.
    pub name: String,
    /// Display name (2025-06-18 and later; older clients ignore it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does, for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema (an object) of the arguments.
    pub input_schema: Value,
    /// JSON Schema of `structuredContent` (2025-06-18 and later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Behaviour hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
    /// Members not modelled here (`icons`, `execution`, `_meta`, …), kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Tool {
    /// A tool with a name, a description and an input schema.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
    ) -> Self {
        Self {
            name: name.into(),
            title: None,
            description: Some(description.into()),
            input_schema,
            output_schema: None,
            annotations: None,
            extra: Map::new(),
        }
    }

    /// The definition as `version` knows it: `outputSchema` dropped where it does not exist.
    #[must_use]
    pub fn for_version(mut self, version: ProtocolVersion) -> Self {
        if !version.has_output_schema() {
            self.output_schema = None;
        }
        self
    }
}

/// The `tools/list` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ListToolsResult {
    /// The tools, in a stable order.
    pub tools: Vec<Tool>,
    /// Pagination cursor for the next page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// 2026-07-28 cache hint: how long the list stays fresh, in milliseconds (required there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// 2026-07-28 cache hint: who may share a cached copy (required there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// `_meta`, if any.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Members not modelled here (e.g. `resultType`), kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ListToolsResult {
    /// A single-page list without cache hints.
    pub fn new(tools: Vec<Tool>) -> Self {
        Self {
            tools,
            next_cursor: None,
            ttl_ms: None,
            cache_scope: None,
            meta: None,
            extra: Map::new(),
        }
    }

    /// The same list with the 2026-07-28 cache hints `ttlMs` and `cacheScope`.
    #[must_use]
    pub fn with_cache(mut self, ttl_ms: u64, scope: CacheScope) -> Self {
        self.ttl_ms = Some(ttl_ms);
        self.cache_scope = Some(scope);
        self
    }

    /// The list as `version` knows it: each tool via [`Tool::for_version`], and the cache
    /// hints dropped before 2026-07-28.
    #[must_use]
    pub fn for_version(mut self, version: ProtocolVersion) -> Self {
        self.tools = self
            .tools
            .into_iter()
            .map(|t| t.for_version(version))
            .collect();
        if !version.is_modern() {
            self.ttl_ms = None;
            self.cache_scope = None;
        }
        self
    }
}

/// `params` of `tools/call`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CallToolParams {
    /// The tool to call.
    pub name: String,
    /// Its arguments (an object), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Map<String, Value>>,
    /// `_meta` (2026-07-28: the per-request protocol fields, see [`crate::modern_meta`]).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Members not modelled here (`task`, `inputResponses`, `requestState`, …), kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One content item of a tool result, tagged by `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Content {
    /// `{"type": "text", "text": …}`
    Text {
        /// The text.
        text: String,
        /// Audience/priority annotations, as sent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Value>,
        /// `_meta`, if any.
        #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
        meta: Option<Map<String, Value>>,
    },
    /// `{"type": "image", "data": base64, "mimeType": …}`, other members kept verbatim.
    Image(Map<String, Value>),
    /// `{"type": "audio", "data": base64, "mimeType": …}`, other members kept verbatim.
    Audio(Map<String, Value>),
    /// `{"type": "resource_link", "uri": …, "name": …}`, other members kept verbatim.
    ResourceLink(Map<String, Value>),
    /// `{"type": "resource", "resource": {…}}`, other members kept verbatim.
    Resource(Map<String, Value>),
}

impl Content {
    /// A text item.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text {
            text: text.into(),
            annotations: None,
            meta: None,
        }
    }

    /// The text of a text item.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Self::Text { text, .. } => Some(text),
            _ => None,
        }
    }
}

/// The `tools/call` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CallToolResult {
    /// Unstructured content for the model.
    pub content: Vec<Content>,
    /// The same facts as JSON (2025-06-18 and later; an object before 2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// True for a tool execution error the model should read and act on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// `_meta`, if any.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Members not modelled here (e.g. `resultType`), kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl CallToolResult {
    /// A result with this content and nothing else.
    pub fn new(content: Vec<Content>) -> Self {
        Self {
            content,
            structured_content: None,
            is_error: None,
            meta: None,
            extra: Map::new(),
        }
    }

    /// A result holding one text item.
    pub fn text(text: impl Into<String>) -> Self {
        Self::new(vec![Content::text(text)])
    }

    /// The same result with `structuredContent` set.
    #[must_use]
    pub fn with_structured_content(mut self, value: Value) -> Self {
        self.structured_content = Some(value);
        self
    }

    /// The same result with `isError` set.
    #[must_use]
    pub fn with_is_error(mut self, is_error: bool) -> Self {
        self.is_error = Some(is_error);
        self
    }

    /// The result as `version` knows it: `structuredContent` dropped where it does not exist.
    #[must_use]
    pub fn for_version(mut self, version: ProtocolVersion) -> Self {
        if !version.has_structured_content() {
            self.structured_content = None;
        }
        self
    }
}
