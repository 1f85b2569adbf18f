//! What the egress decision answers: which bottle asks, and "allowed, by this grant" or
//! "not allowed, because …", with the undecided proposal that asks for it if there is one.

use std::fmt;
use std::net::IpAddr;
use std::sync::Arc;

use super::{Bottle, Grant, GrantId, ProposalId};

/// The request a proxy saw inside a connection, when it sees one (mitmproxy; not Squid
/// without interception, not a CONNECT before its requests): what grants limited to
/// `methods` and a `path_prefix` are matched against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpRequest<'a> {
    /// The method as sent (`GET`); compared upper-cased.
    pub method: &'a str,
    /// The request target's path, query included or not (normalised before comparing,
    /// [`crate::change::normalise_path`]).
    pub path: &'a str,
}

/// The bottle a question is about: by name, `SLUG` or `HOST/SLUG` (the operator's
/// `check`), or by the source address its connections come from (the proxy's helper).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BottleRef<'a> {
    Slug(&'a str),
    Ip(IpAddr),
}

impl fmt::Display for BottleRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BottleRef::Slug(s) => write!(f, "bottle {s}"),
            BottleRef::Ip(ip) => write!(f, "address {ip}"),
        }
    }
}

/// The answer to "may this bottle reach HOST:PORT now?".
#[derive(Debug, Clone, PartialEq)]
pub enum EgressDecision {
    /// A grant in force covers the destination.
    Allowed {
        /// Shared with the snapshot it was decided from.
        bottle: Arc<Bottle>,
        /// The destination as normalised (lower case, no trailing dot, canonical IP text).
        host: String,
        port: u16,
        /// The grant that allows it: its id, its change (the host may be `*.domain`) and
        /// when it ends (`expires_at`; `None`: until revoked). Shared with the snapshot it
        /// was decided from, so an answer from memory copies nothing.
        grant: Arc<Grant>,
    },
    /// Nothing allows it.
    Denied {
        /// The bottle, when one is registered under the slug or address.
        bottle: Option<Arc<Bottle>>,
        /// The destination as normalised, or as given when it is not a valid host.
        host: String,
        port: u16,
        reason: DenyReason,
        /// An undecided proposal of this bottle that asks for the destination (exactly, or
        /// with a wildcard covering it): approving it is the operator's one command.
        proposal_id: Option<ProposalId>,
    },
}

impl EgressDecision {
    pub fn is_allowed(&self) -> bool {
        matches!(self, EgressDecision::Allowed { .. })
    }
}

/// Why a destination is not allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DenyReason {
    /// No live bottle has the slug or the address.
    UnknownBottle,
    /// The host or port cannot be a destination (the message says why).
    InvalidDestination(String),
    /// No grant in force covers the host and port (none was made, or each ended).
    NoGrant,
    /// Only grants limited to methods or a path prefix cover the host and port, and the
    /// request was not seen (a CONNECT, Squid without interception). A proxy that can see
    /// the requests inside opens the tunnel, intercepts, and asks again for each; the grant
    /// named is one of them.
    RequestUnseen(GrantId),
    /// Grants in force cover the host and port, but none lets this method and path through.
    OutsideLimits,
    /// The request's path is refused outright (the message says why: an encoded `/` or
    /// `\`, a `..` above the root, ...).
    InvalidRequest(String),
}

impl DenyReason {
    /// A short stable name for JSON: `unknown-bottle`, `invalid-destination`, `no-grant`,
    /// `request-unseen`, `outside-limits`, `invalid-request`.
    pub fn code(&self) -> &'static str {
        match self {
            DenyReason::UnknownBottle => "unknown-bottle",
            DenyReason::InvalidDestination(_) => "invalid-destination",
            DenyReason::NoGrant => "no-grant",
            DenyReason::RequestUnseen(_) => "request-unseen",
            DenyReason::OutsideLimits => "outside-limits",
            DenyReason::InvalidRequest(_) => "invalid-request",
        }
    }
}

impl fmt::Display for DenyReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DenyReason::UnknownBottle => f.write_str("no bottle is registered there"),
            DenyReason::InvalidDestination(why) => write!(f, "not a valid destination: {why}"),
            DenyReason::NoGrant => f.write_str("no grant in force covers it"),
            DenyReason::RequestUnseen(g) => write!(
                f,
                "only grants limited to methods or paths cover it (grant {g}), and the request \
                 was not seen"
            ),
            DenyReason::OutsideLimits => {
                f.write_str("the grants in force for it allow other methods or paths only")
            }
            DenyReason::InvalidRequest(why) => write!(f, "the request is refused: {why}"),
        }
    }
}
