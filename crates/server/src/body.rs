//! The one HTTP response body type: a whole answer, or a stream of Server-Sent Events fed
//! through a bounded channel (a `subscriptions/listen` stream). The stream ends when its
//! sender is dropped, which its producer does at shutdown or when the client goes away.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use tokio::sync::mpsc;

/// A response body.
#[derive(Debug)]
pub(crate) enum ReplyBody {
    /// The whole answer (taken once sent).
    Full(Option<Bytes>),
    /// SSE frames as they are produced.
    Stream(mpsc::Receiver<Bytes>),
}

impl ReplyBody {
    pub(crate) fn full(bytes: impl Into<Bytes>) -> ReplyBody {
        let bytes = bytes.into();
        ReplyBody::Full((!bytes.is_empty()).then_some(bytes))
    }
}

impl Body for ReplyBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.get_mut() {
            ReplyBody::Full(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            ReplyBody::Stream(rx) => rx.poll_recv(cx).map(|b| b.map(|b| Ok(Frame::data(b)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, ReplyBody::Full(None))
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            ReplyBody::Full(Some(b)) => SizeHint::with_exact(b.len() as u64),
            ReplyBody::Full(None) => SizeHint::with_exact(0),
            ReplyBody::Stream(_) => SizeHint::default(),
        }
    }
}

/// One SSE `message` event carrying a JSON-RPC message.
pub(crate) fn sse_event(json: &serde_json::Value) -> Bytes {
    Bytes::from(format!("event: message\ndata: {json}\n\n"))
}
