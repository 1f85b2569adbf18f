//! One POST body to one reply: classify the JSON-RPC message, pick the protocol era, check
//! the 2026-07-28 request headers, and dispatch to [`crate::methods`].
//!
//! Era rule (dual-era server, stateless in both): a request whose `params._meta` carries
//! `io.modelcontextprotocol/protocolVersion`, or whose `MCP-Protocol-Version` header names
//! 2026-07-28, or that is `server/discover`, is served as 2026-07-28 (headers checked,
//! `_meta` required, `resultType` on results, HTTP 400/404 on errors). Anything else is
//! served in the handshake era at the revision in the `MCP-Protocol-Version` header
//! (2025-03-26 when absent). Batches are accepted only for 2025-03-26, the one revision that
//! has them; their requests run concurrently and are answered in order, within the bounds
//! [`batch`] lists.

// A refusal carries a JSON-RPC response whose `serde_json::Value` id is larger with
// serde_json's `preserve_order` (enabled in the build by cedar-policy); it is answered at
// once, so its size on the stack costs nothing worth a box.
#![allow(clippy::result_large_err)]

use std::borrow::Cow;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::future::join_all;
use http::{HeaderMap, StatusCode};
use supervise_protocol::{
    ErrorCode, ErrorObject, ErrorResponse, Incoming, MAX_BATCH_LEN, Message, ModernMeta,
    ProtocolVersion, Request, RequestId, Response, ResultResponse, ToolCall, header,
    invalid_batch_error, is_modern_request, methods, modern_meta, modern_result, parse_message,
    parse_tool_call,
};
use supervise_store::Bottle;
use supervise_store::text::escape_untrusted;

mod era;

use era::{Head, check, check_modern_headers, header_value};

use crate::answer::{Answer, AnswerStatus};
use crate::app::App;
use crate::config::MAX_BATCH_ANSWER_BYTES;
use crate::grace::Held;
use crate::methods::{Ctx, Method, Output, Params};

/// What to send back.
#[derive(Debug)]
pub(crate) enum Reply {
    /// 202, no body (notifications and responses).
    Accepted,
    /// A JSON body (already serialised, once) with this status.
    Json { status: StatusCode, body: Vec<u8> },
    /// 200 with a Server-Sent Events stream (`subscriptions/listen`).
    Stream(tokio::sync::mpsc::Receiver<bytes::Bytes>),
}

/// A `POST /mcp` request as the HTTP layer read and checked it: its bottle, headers and body.
pub(crate) struct Read {
    pub(crate) bottle: Arc<Bottle>,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
}

/// Handles one POST body from `bottle`. The body and the headers are given away: they
/// share hyper's read buffer for the connection, so they are dropped as soon as they are
/// read (the body once parsed, the headers once a single request is checked against them)
/// and a call that waits holds neither, nor a second read buffer because of them.
pub(crate) async fn handle(app: &App, read: Box<Read>) -> Reply {
    // Classified in a plain function, so nothing of the body, the headers or the parsed
    // message stays in this future's state while the request runs.
    let Read {
        bottle,
        headers,
        body,
    } = *read;
    let bottle = &bottle;
    let ready = match classify(headers, body) {
        Classified::Reply(reply) => return reply,
        Classified::Listen(headers, req) => {
            return Box::pin(async move { listen(app, bottle, &headers, req).await }).await;
        }
        Classified::Batch(headers, items) => {
            return Box::pin(async move { batch(app, bottle, &headers, items).await }).await;
        }
        Classified::Ready(ready) => ready,
    };
    // Running the request is boxed and awaited to its end before a proposal call waits, so
    // a held call keeps only the wait and the answer's id, not the levels that filed it.
    let (status, answered) = match Box::pin(run(app, bottle, ready)).await {
        Ran::Answered(status, answered) => (status, answered),
        Ran::Held(held) => held.finish(app).await,
    };
    Reply::Json {
        status,
        body: answered.to_vec(app),
    }
}

/// A POST body read, before anything runs.
enum Classified {
    /// Answered already (a notification, a client response, a refusal).
    Reply(Reply),
    /// A `subscriptions/listen` stream, checked against the headers when it opens.
    Listen(HeaderMap, Request),
    /// A 2025-03-26 batch; each item is checked against the headers.
    Batch(HeaderMap, Vec<Result<Message, ErrorResponse>>),
    /// A single request, checked against the headers, which are dropped.
    Ready(Box<Ready>),
}

fn classify(headers: HeaderMap, body: Bytes) -> Classified {
    // The hot request first, read without a `Value` tree when it has the usual shape.
    if let Some(call) = parse_tool_call(&body) {
        tracing::Span::current().record("rpc_method", methods::TOOLS_CALL);
        let prepared = prepare_call(&headers, call);
        drop(body);
        return match prepared {
            Ok(ready) => Classified::Ready(Box::new(ready)),
            Err((status, response)) => Classified::Reply(Reply::Json {
                status,
                body: serde_json::to_vec(&response).expect("responses serialise"),
            }),
        };
    }
    let incoming = parse_message(&body);
    drop(body);
    let incoming = match incoming {
        Ok(m) => m,
        Err(e) => return Classified::Reply(error_reply(StatusCode::BAD_REQUEST, e)),
    };
    match incoming {
        Incoming::Notification(n) => {
            let method = escape_untrusted(&n.method);
            tracing::Span::current().record("rpc_method", &*method);
            tracing::debug!(?method, "notification accepted");
            Classified::Reply(Reply::Accepted)
        }
        Incoming::Response(_) => Classified::Reply(Reply::Accepted),
        Incoming::Request(req)
            if req.method == methods::SUBSCRIPTIONS_LISTEN
                && is_modern_request(req.params.as_ref()) =>
        {
            tracing::Span::current().record("rpc_method", methods::SUBSCRIPTIONS_LISTEN);
            Classified::Listen(headers, req)
        }
        Incoming::Request(req) => {
            tracing::Span::current().record("rpc_method", &*escape_untrusted(&req.method));
            match prepare(&headers, req) {
                Ok(ready) => Classified::Ready(Box::new(ready)),
                Err((status, response)) => Classified::Reply(Reply::Json {
                    status,
                    body: serde_json::to_vec(&response).expect("responses serialise"),
                }),
            }
        }
        Incoming::Batch(items) => Classified::Batch(headers, items),
    }
}

/// Answers a 2025-03-26 batch (already at most [`MAX_BATCH_LEN`] items, see
/// `parse_message`).
///
/// Bounds, so one request costs the server in proportion to its body:
/// - a batch of garbage (no valid item) is one `-32600`, not one error per item;
/// - the items run concurrently, in this request's task (JSON-RPC lets a server process a
///   batch in any order), so a batch of proposal calls is answered within one grace window;
///   each waiting item still takes its own place in `--max-waiting-per-bottle`. Answers keep
///   the order of the items;
/// - the answer is at most [`MAX_BATCH_ANSWER_BYTES`] (plus separators and the short errors
///   below): an answer of at most a 32nd of it (32 KiB) is always sent; a larger one that
///   would pass the cap is replaced by a short `-32600` with its id that says to send that
///   request on its own (it did run; the large answers are `tools/list`, `list-proposals`
///   and echoes of huge ids, which can all be asked again).
async fn batch(
    app: &App,
    bottle: &Bottle,
    headers: &HeaderMap,
    items: Vec<Result<Message, ErrorResponse>>,
) -> Reply {
    let version = header_value(headers, header::PROTOCOL_VERSION);
    if !matches!(version, None | Some("2025-03-26")) {
        return error_reply(
            StatusCode::BAD_REQUEST,
            ErrorResponse::new(
                None,
                ErrorObject::invalid_request(
                    "JSON-RPC batches are only allowed in protocol revision 2025-03-26; send one message per request",
                ),
            ),
        );
    }
    if let Some(e) = invalid_batch_error(&items) {
        return error_reply(StatusCode::BAD_REQUEST, e);
    }
    tracing::Span::current().record("rpc_method", "(batch)");
    debug_assert!(items.len() <= MAX_BATCH_LEN);
    let answers = join_all(
        items
            .into_iter()
            .map(|item| batch_item(app, bottle, headers, item)),
    )
    .await;
    let answers: Vec<(Option<RequestId>, Vec<u8>)> = answers.into_iter().flatten().collect();
    // An answer of at most a 32nd of the cap always fits (so small answers, such as a
    // decision taken by `check-proposal`, are never left out); larger ones share what the
    // small ones leave, in item order.
    let share = MAX_BATCH_ANSWER_BYTES / MAX_BATCH_LEN;
    let small: usize = answers
        .iter()
        .map(|(_, a)| a.len())
        .filter(|&len| len <= share)
        .sum();
    let mut budget = MAX_BATCH_ANSWER_BYTES.saturating_sub(small);
    let mut body = vec![b'['];
    for (id, answer) in answers {
        if body.len() > 1 {
            body.push(b',');
        }
        if answer.len() <= share {
            body.extend_from_slice(&answer);
        } else if answer.len() <= budget {
            budget -= answer.len();
            body.extend_from_slice(&answer);
        } else {
            let left_out = ErrorResponse::new(
                id,
                ErrorObject::invalid_request(format!(
                    "the answers to this batch passed {MAX_BATCH_ANSWER_BYTES} bytes, so this one was left out; the request did run: send it on its own to read its answer"
                )),
            );
            serde_json::to_writer(&mut body, &left_out).expect("serialise");
        }
    }
    if body.len() == 1 {
        Reply::Accepted
    } else {
        body.push(b']');
        Reply::Json {
            status: StatusCode::OK,
            body,
        }
    }
}

/// One batch item's answer, serialised, with the id it answers; `None` for a notification
/// or a client response.
async fn batch_item(
    app: &App,
    bottle: &Bottle,
    headers: &HeaderMap,
    item: Result<Message, ErrorResponse>,
) -> Option<(Option<RequestId>, Vec<u8>)> {
    let response = match item {
        Err(e) => return Some((e.id.clone(), serde_json::to_vec(&e).expect("serialise"))),
        Ok(Message::Notification(_) | Message::Response(_)) => return None,
        Ok(Message::Request(req)) if is_modern_request(req.params.as_ref()) => Response::error(
            Some(req.id),
            ErrorObject::invalid_request("a 2026-07-28 request cannot be part of a batch"),
        ),
        Ok(Message::Request(req)) => {
            let answered = request(app, bottle, headers, req).await.1;
            return Some((answered.id().cloned(), answered.to_vec(app)));
        }
    };
    Some((
        response.id.clone(),
        serde_json::to_vec(&response).expect("serialise"),
    ))
}

fn error_reply(status: StatusCode, e: ErrorResponse) -> Reply {
    Reply::Json {
        status,
        body: serde_json::to_vec(&e).expect("errors serialise"),
    }
}

/// A request checked against its headers and its era's rules, ready to run without them.
struct Ready {
    id: RequestId,
    name: Cow<'static, str>,
    params: Params,
    method: Method,
    version: ProtocolVersion,
    modern: Option<ModernMeta>,
}

/// A request refused before it runs: the HTTP status and the answer.
type Refused = (StatusCode, Response);

/// A request's answer, not yet serialised.
enum Answered {
    /// Any answer, as JSON.
    Response(Response),
    /// A tool's answer, written from its parts.
    Tool {
        id: RequestId,
        answer: Answer,
        version: ProtocolVersion,
        modern: bool,
    },
}

impl Answered {
    fn id(&self) -> Option<&RequestId> {
        match self {
            Answered::Response(r) => r.id.as_ref(),
            Answered::Tool { id, .. } => Some(id),
        }
    }

    /// The JSON body: for a tool's answer, the same bytes as the `Value` the general path
    /// builds (`Answer::into_result_value`, then `modern_result` in 2026-07-28).
    fn to_vec(&self, app: &App) -> Vec<u8> {
        match self {
            Answered::Response(r) => serde_json::to_vec(r).expect("responses serialise"),
            Answered::Tool {
                id,
                answer,
                version,
                modern,
            } => {
                let result = answer.to_wire(*version, modern.then_some(&app.server_info_meta));
                // Sized for a usual answer (a pending poll's is about 1 KiB), so it is
                // written without growing.
                let mut body = Vec::with_capacity(2048);
                serde_json::to_writer(
                    &mut body,
                    &ResultResponse {
                        id,
                        result: &result,
                    },
                )
                .expect("responses serialise");
                body
            }
        }
    }
}

async fn request(
    app: &App,
    bottle: &Bottle,
    headers: &HeaderMap,
    req: Request,
) -> (StatusCode, Answered) {
    match prepare(headers, req) {
        Ok(ready) => match run(app, bottle, Box::new(ready)).await {
            Ran::Answered(status, answered) => (status, answered),
            Ran::Held(held) => held.finish(app).await,
        },
        Err((status, response)) => (status, Answered::Response(response)),
    }
}

/// A request read by the general path, checked.
fn prepare(headers: &HeaderMap, req: Request) -> Result<Ready, Refused> {
    let checked = check(headers, &Head::of(&req), || {
        modern_meta(req.params.as_ref())
    });
    match checked {
        Ok((method, version, modern)) => Ok(Ready {
            id: req.id,
            name: Cow::Owned(req.method),
            params: Params::Tree(req.params),
            method,
            version,
            modern,
        }),
        Err((status, e)) => Err((status, Response::error(Some(req.id), e))),
    }
}

/// A `tools/call` read by [`parse_tool_call`], checked exactly as [`prepare`] checks the
/// same request read by the general path.
fn prepare_call(headers: &HeaderMap, call: ToolCall<'_>) -> Result<Ready, Refused> {
    let head = Head {
        method: methods::TOOLS_CALL,
        has_meta: call.meta.is_some(),
        requested_version: call.meta.as_ref().map(|m| m.requested_version),
        tool_name: Some(call.name),
        task_id: None,
    };
    let ToolCall {
        id,
        name,
        arguments,
        meta,
    } = call;
    match check(headers, &head, || meta.map(|m| m.meta)) {
        Ok((method, version, modern)) => Ok(Ready {
            id,
            name: Cow::Borrowed(methods::TOOLS_CALL),
            params: Params::ToolCall {
                tool: name.to_owned(),
                arguments,
            },
            method,
            version,
            modern,
        }),
        Err((status, e)) => Err((status, Response::error(Some(id), e))),
    }
}

/// A request run: its status and answer, or a proposal call left to wait its window.
enum Ran {
    Answered(StatusCode, Answered),
    Held(Box<HeldCall>),
}

/// A proposal call to wait for, with what its answer needs.
struct HeldCall {
    id: RequestId,
    held: Box<Held>,
    version: ProtocolVersion,
    modern: bool,
}

impl HeldCall {
    /// Waits the call's grace window for its decision: the status and answer.
    async fn finish(self: Box<Self>, app: &App) -> (StatusCode, Answered) {
        let HeldCall {
            id,
            held,
            version,
            modern,
        } = *self;
        let tool = held.tool;
        let answer = held.wait(app).await;
        tracing::debug!(
            tool,
            status = answer.status.map_or("list", AnswerStatus::as_str),
            "tool answered"
        );
        (
            StatusCode::OK,
            Answered::Tool {
                id,
                answer,
                version,
                modern,
            },
        )
    }
}

async fn run(app: &App, bottle: &Bottle, ready: Box<Ready>) -> Ran {
    let Ready {
        id,
        name,
        params,
        method,
        version,
        modern,
    } = *ready;
    let is_modern = modern.is_some();
    let ctx = Ctx {
        app,
        bottle,
        version,
        modern,
    };
    let (status, answered) = match method.call(&name, &ctx, params).await {
        Ok(Output::Held(held)) => {
            return Ran::Held(Box::new(HeldCall {
                id,
                held,
                version,
                modern: is_modern,
            }));
        }
        Ok(Output::Tool(answer)) => (
            StatusCode::OK,
            Answered::Tool {
                id,
                answer,
                version,
                modern: is_modern,
            },
        ),
        Ok(Output::Value(result)) if is_modern => (
            StatusCode::OK,
            Answered::Response(Response::result(
                id,
                modern_result(result, &app.server_info),
            )),
        ),
        Ok(Output::Value(result)) => (
            StatusCode::OK,
            Answered::Response(Response::result(id, result)),
        ),
        Err(e) if is_modern => (
            modern_error_status(&e),
            Answered::Response(Response::error(Some(id), e)),
        ),
        Err(e) => (
            StatusCode::OK,
            Answered::Response(Response::error(Some(id), e)),
        ),
    };
    Ran::Answered(status, answered)
}

/// The HTTP status of a 2026-07-28 error answer.
fn modern_error_status(e: &ErrorObject) -> StatusCode {
    if e.code == ErrorCode::METHOD_NOT_FOUND {
        StatusCode::NOT_FOUND
    } else if e.code == ErrorCode::INTERNAL_ERROR {
        StatusCode::INTERNAL_SERVER_ERROR
    } else {
        StatusCode::BAD_REQUEST
    }
}

/// A 2026-07-28 `subscriptions/listen`: the same header and `_meta` checks as any request,
/// then a stream instead of one answer (see `methods::subscriptions_listen`).
async fn listen(app: &App, bottle: &Bottle, headers: &HeaderMap, req: Request) -> Reply {
    let header_version = header_value(headers, header::PROTOCOL_VERSION);
    let fail = |e: ErrorObject| Reply::Json {
        status: modern_error_status(&e),
        body: serde_json::to_vec(&Response::error(Some(req.id.clone()), e))
            .expect("responses serialise"),
    };
    if let Err(detail) = check_modern_headers(headers, header_version, &Head::of(&req)) {
        return fail(ErrorObject::header_mismatch(detail));
    }
    let meta = match modern_meta(req.params.as_ref()) {
        Some(Ok(meta)) => meta,
        Some(Err(e)) => return fail(e),
        None => unreachable!("only requests with _meta are routed here"),
    };
    let ctx = Ctx {
        app,
        bottle,
        version: meta.protocol_version,
        modern: Some(meta),
    };
    match crate::methods::subscriptions_listen::open(&ctx, req.params.as_ref(), req.id.clone())
        .await
    {
        Ok(rx) => Reply::Stream(rx),
        Err(e) => fail(e),
    }
}
