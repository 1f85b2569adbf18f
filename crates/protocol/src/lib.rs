//! MCP JSON-RPC types for supervise: envelopes, errors, versions, initialize, tools, content.
//!
//! This crate does no I/O. The server reads an HTTP body, hands the bytes to
//! [`parse_message`], dispatches on the classified [`Incoming`] message and serialises a
//! [`Response`] (or [`ErrorResponse`]) back with `serde_json`.
//!
//! # Layout
//!
//! - `jsonrpc`: the JSON-RPC 2.0 envelope: [`JsonRpcVersion`], [`RequestId`], [`ErrorCode`],
//!   [`ErrorObject`], [`Request`], [`Notification`], [`Response`], and [`parse_params`] for
//!   typed params with readable `-32602` errors.
//! - `classify`: [`parse_message`], which turns a raw body into [`Incoming`] or a ready
//!   error response, by explicit checks on a `serde_json::Value` (no `untagged` enums, so
//!   every refusal names its problem); batches are capped at [`MAX_BATCH_LEN`] while they
//!   are read, and [`invalid_batch_error`] answers a batch of garbage once.
//! - `call`: the hot path, [`parse_tool_call`]: a `tools/call` body read straight into
//!   borrowed typed fields ([`ToolCall`]) when it has the usual shape (else `None`, and
//!   [`parse_message`] reads it), and [`TextToolResult`] / [`ResultResponse`], which write a
//!   tool's answer without building a `Value` tree.
//! - `version`: the protocol revisions served ([`ProtocolVersion`]), their feature
//!   switches and [`negotiate`] for `initialize`.
//! - `lifecycle`: `initialize` params and result, [`Implementation`], [`ServerCapabilities`].
//! - `tools`: [`Tool`], `tools/list` and `tools/call` params and results, [`Content`].
//! - `modern`: the 2026-07-28 era: per-request [`ModernMeta`], `server/discover`
//!   ([`DiscoverResult`]), cache hints, and [`modern_result`] for `resultType`/`_meta`.
//! - `tasks`: the 2026-07-28 tasks extension: [`Task`], [`CreateTaskResult`],
//!   [`DetailedTask`], the `tasks/*` and `subscriptions/listen` params, and
//!   [`task_notification`].
//! - [`header`]: Streamable HTTP header names and [`decode_header_value`].
//! - [`methods`]: method-name constants.
//!
//! Types the specification keeps extending are `#[non_exhaustive]`: build them with their
//! constructors, then set public fields. Most carry an `extra` map that keeps members this
//! crate does not model, so decoding and re-encoding loses nothing.

mod call;
mod classify;
mod error;
pub mod header;
mod jsonrpc;
mod lifecycle;
mod modern;
mod tasks;
mod tools;
mod version;

pub use call::{
    CallMeta, ResultResponse, ServerInfoMeta, TextToolResult, ToolCall, parse_tool_call,
};
pub use classify::{Incoming, MAX_BATCH_LEN, Message, invalid_batch_error, parse_message};
pub use error::{Error, Result};
pub use header::decode_header_value;
pub use jsonrpc::{
    ErrorCode, ErrorObject, ErrorResponse, JsonRpcVersion, Notification, Outcome, Request,
    RequestId, Response, parse_params,
};
pub use lifecycle::{
    Implementation, InitializeParams, InitializeResult, ServerCapabilities, ToolsCapability,
};
pub use modern::{
    CacheScope, DiscoverResult, META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_LOG_LEVEL,
    META_PROTOCOL_VERSION, META_SERVER_INFO, ModernMeta, ResultType, is_modern_request,
    modern_meta, modern_result, requested_version,
};
pub use tasks::{
    CreateTaskResult, DetailedTask, ListenFilter, ListenParams, TASKS_EXTENSION, Task,
    TaskIdParams, TaskStatus, UpdateTaskParams, task_notification,
};
pub use tools::{CallToolParams, CallToolResult, Content, ListToolsResult, Tool, ToolAnnotations};
pub use version::{
    DEFAULT_WITHOUT_HEADER, LATEST, LATEST_LEGACY, LEGACY_VERSIONS, MODERN_VERSIONS,
    ProtocolVersion, SUPPORTED_VERSIONS, negotiate,
};

/// JSON-RPC method names this server knows about.
pub mod methods {
    /// Legacy handshake request (2025-03-26 … 2025-11-25).
    pub const INITIALIZE: &str = "initialize";
    /// Legacy handshake completion notification.
    pub const INITIALIZED: &str = "notifications/initialized";
    /// Liveness check (legacy era only; removed in 2026-07-28).
    pub const PING: &str = "ping";
    /// Cancellation notification (legacy era on HTTP).
    pub const CANCELLED: &str = "notifications/cancelled";
    /// List the server's tools.
    pub const TOOLS_LIST: &str = "tools/list";
    /// Call one tool.
    pub const TOOLS_CALL: &str = "tools/call";
    /// Modern-era discovery of versions, capabilities and identity.
    pub const SERVER_DISCOVER: &str = "server/discover";
    /// Tasks extension: read a task.
    pub const TASKS_GET: &str = "tasks/get";
    /// Tasks extension: cancel a task.
    pub const TASKS_CANCEL: &str = "tasks/cancel";
    /// Tasks extension: answer a task's input requests.
    pub const TASKS_UPDATE: &str = "tasks/update";
    /// Removed by the tasks extension (listing leaks across callers); not served.
    pub const TASKS_LIST: &str = "tasks/list";
    /// Removed by the tasks extension (results come with `tasks/get`); not served.
    pub const TASKS_RESULT: &str = "tasks/result";
    /// 2026-07-28: open a notification stream.
    pub const SUBSCRIPTIONS_LISTEN: &str = "subscriptions/listen";
    /// Tasks extension: a task changed (the full task).
    pub const NOTIFICATIONS_TASKS: &str = "notifications/tasks";
}
