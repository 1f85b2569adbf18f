//! The one egress decision: "may this bottle reach HOST:PORT now, and by which grant?",
//! asked by every enforcement point (`supervise check egress`, the Squid helper, later the
//! console), plus what the proxy's helper writes back: a `grant-used` event (at most once a
//! minute per grant) and an `observed` proposal for a connection it refused.
//!
//! Matching lives here and nowhere else: a grant's host equals the destination's, or is
//! `*.domain` and the destination is a name under `domain` (never `domain` itself, never an
//! IP address); the ports are equal; a grant limited to `methods` or a `path_prefix` counts
//! only for a request seen and fitting them; a grant ended (revoked, expired, bottle removed) or past
//! its `expires_at` never counts. Destinations are normalised by the proposals' own rule
//! ([`crate::change::normalise_host`]), so `PyPI.org.` is `pypi.org`.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tracing::instrument;

use super::Store;
use super::bottles::{live_bottle_by_ip, live_bottle_named};
use super::egress_memo::{Asked, Granted, Key, Snapshot};
use super::file::Identity;
use super::fresh::Stamp;
use super::proposals::{Filing, prepare, propose_in};
use super::rows::{self, GRANT_COLUMNS, GrantRow, PROPOSAL_COLUMNS, ProposalRow};
use super::trail::{NewEvent, actor_bottle, record};
use crate::change::{self, normalise_host};
use crate::error::StoreResult;
use crate::model::{
    Bottle, BottleRef, DenyReason, EgressDecision, EventKind, Flag, Grant, HttpRequest, Kind,
    NewProposal, ProposalId, Proposed, Timestamp,
};
use crate::present::address;

/// At most one `grant-used` event per grant in this interval.
pub const GRANT_USE_EVERY: Duration = Duration::from_secs(60);

/// Destinations the helper never files an `observed` proposal for: the host itself (its
/// loopback, and the unspecified address, which reaches the same listeners), the
/// link-local network and the cloud metadata service are never what an agent should be
/// offered with one command.
const NEVER_OBSERVED: [Flag; 4] = [
    Flag::CloudMetadata,
    Flag::LinkLocal,
    Flag::Loopback,
    Flag::Unspecified,
];

/// Egress lookups answered against one read of the database's version
/// ([`Store::egress_lookups`]): for lookups that all arrived before it was made.
#[derive(Debug, Clone)]
pub struct EgressLookups {
    store: Store,
    /// `None`: the version could not be read (or there is no watch): every decision reads.
    version: Option<Stamp>,
}

impl EgressLookups {
    /// The store these lookups read, for what an enforcement point writes back.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// May `bottle` reach `host:port`, with `request` when the asker sees it? As
    /// [`Store::egress_request_decision`], with the database's version as read when these
    /// lookups were begun; time (a grant's or proposal's end) is taken now.
    pub async fn decision(
        &self,
        bottle: BottleRef<'_>,
        host: &str,
        port: u16,
        request: Option<HttpRequest<'_>>,
    ) -> StoreResult<EgressDecision> {
        let snapshot = self
            .store
            .egress_snapshot(self.version.as_ref(), bottle)
            .await?;
        Ok(decide(&snapshot, host, port, request, &Timestamp::now()))
    }
}

impl Store {
    /// May `bottle` reach `host:port` now? A bottle by address is this store's host's; by
    /// name, `HOST/SLUG` or a slug one host has ([`Store::named_bottle`]; a slug several
    /// hosts have is [`crate::StoreError::AmbiguousBottle`]). The same as
    /// [`Store::egress_request_decision`] without a request: a grant limited to methods or
    /// a path prefix never lets it through.
    pub async fn egress_decision(
        &self,
        bottle: BottleRef<'_>,
        host: &str,
        port: u16,
    ) -> StoreResult<EgressDecision> {
        self.egress_request_decision(bottle, host, port, None).await
    }

    /// May `bottle` reach `host:port` now, with `request` when the asker sees it? Reads
    /// the bottle, its egress grants in force and its undecided egress proposals in one
    /// read transaction, or takes them from memory while the database is unchanged
    /// ([`egress_memo`](super::egress_memo)). A grant counts when it covers the host and
    /// port and, if it is limited to methods or a path prefix, when the request is seen and
    /// fits them (its path normalised by [`change::normalise_path`]; a path that normalising
    /// refuses is refused). An exact grant is preferred to a wildcard, then the one lasting
    /// longest. A denial names an undecided proposal that asks for the destination.
    ///
    /// The same as one [`EgressLookups::decision`] of [`Store::egress_lookups`] taken now.
    #[instrument(skip(self), err, level = "debug")]
    pub async fn egress_request_decision(
        &self,
        bottle: BottleRef<'_>,
        host: &str,
        port: u16,
        request: Option<HttpRequest<'_>>,
    ) -> StoreResult<EgressDecision> {
        self.egress_lookups()
            .await
            .decision(bottle, host, port, request)
            .await
    }

    /// Egress lookups that all arrived before this call: the database's version
    /// ([`fresh`](super::fresh)) is read once, here, and each
    /// [`decision`](EgressLookups::decision) is answered as
    /// [`Store::egress_request_decision`] would answer it now.
    ///
    /// Why one read serves them all: a lookup must see every commit that returned before
    /// it arrived. Every lookup answered through the value returned had arrived (a proxy's
    /// helper had read its line) before this version read, so each such commit had
    /// returned before the read too, and changed the version it reads; a snapshot is
    /// taken from memory only under that very version (no commit since before it was
    /// read), else read afresh. So one read per batch of lookups already received is
    /// exactly as fresh as one per lookup. A lookup that arrives later needs a new call.
    pub async fn egress_lookups(&self) -> EgressLookups {
        let version = match &self.inner.fresh {
            Some(f) => f.observe().await,
            None => None,
        };
        EgressLookups {
            store: self.clone(),
            version,
        }
    }

    /// The bottle's egress state: remembered at `version` (read before the lookup was
    /// answered, after it arrived), or read.
    async fn egress_snapshot(
        &self,
        version: Option<&Stamp>,
        bottle: BottleRef<'_>,
    ) -> StoreResult<Arc<Snapshot>> {
        let key = Key::from(bottle);
        if let Some(v) = version
            && let Some(s) = self.inner.egress_memo.get(v, &key)
        {
            return Ok(s);
        }
        let now = Timestamp::now();
        let mut tx = self.read().await?;
        let found = match bottle {
            BottleRef::Slug(name) => live_bottle_named(&mut tx, name).await?,
            BottleRef::Ip(ip) => live_bottle_by_ip(&mut tx, &self.inner.host, ip).await?,
        };
        let mut snapshot = Snapshot {
            bottle: found.map(Arc::new),
            grants: Vec::new(),
            pending: Vec::new(),
        };
        if let Some(b) = &snapshot.bottle {
            let grants: Vec<GrantRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                "{GRANT_COLUMNS} WHERE g.bottle_id = $1 AND g.kind = 'egress' \
                 AND g.ended_at IS NULL AND (g.expires_at IS NULL OR g.expires_at > $2) \
                 ORDER BY g.created_at"
            )))
            .bind(b.id.get())
            .bind(now.as_str())
            .fetch_all(&mut *tx)
            .await?;
            let grants: Vec<Grant> = rows::all(grants)?;
            snapshot.grants = grants.into_iter().map(Granted::from).collect();
            let rows: Vec<ProposalRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                "{PROPOSAL_COLUMNS} WHERE p.bottle_id = $1 AND p.kind = 'egress' \
                 AND p.status = 'pending' AND (p.expires_at IS NULL OR p.expires_at > $2) \
                 ORDER BY p.created_at"
            )))
            .bind(b.id.get())
            .bind(now.as_str())
            .fetch_all(&mut *tx)
            .await?;
            for row in rows {
                let p = row.at(&now)?;
                snapshot.pending.push(Asked {
                    dest: host_port(&p.change).map(|(h, port)| (h.to_owned(), port)),
                    id: p.id,
                    expires_at: p.expires_at,
                });
            }
        }
        drop(tx);
        let snapshot = Arc::new(snapshot);
        if let Some(v) = version {
            self.inner.egress_memo.put(v.clone(), key, snapshot.clone());
        }
        Ok(snapshot)
    }

    /// Records that `grant` let `bottle` through to `host:port`: a `grant-used` event, unless
    /// one was recorded for the grant within [`GRANT_USE_EVERY`]. Returns whether it wrote.
    /// One write transaction.
    #[instrument(skip(self, bottle, grant), fields(grant = %grant.id), err)]
    pub async fn record_grant_use(
        &self,
        bottle: &Bottle,
        grant: &Grant,
        host: &str,
        port: u16,
    ) -> StoreResult<bool> {
        let mut w = self.write().await?;
        let now = Timestamp::now();
        let last: Option<String> = sqlx::query_scalar(
            "SELECT at FROM events WHERE proposal_id = $1 AND event = 'grant-used' \
             ORDER BY seq DESC LIMIT 1",
        )
        .bind(grant.proposal_id.as_str())
        .fetch_optional(w.conn())
        .await?;
        let since = Timestamp::before(GRANT_USE_EVERY);
        if last.is_some_and(|at| at.as_str() > since.as_str()) {
            return Ok(false);
        }
        let actor = actor_bottle(&bottle.slug);
        let change = grant.change.to_string();
        let note = address(host, port);
        record(
            w.conn(),
            &now,
            NewEvent {
                bottle_id: Some(bottle.id),
                proposal_id: Some(&grant.proposal_id),
                grant_id: Some(&grant.id),
                kind: Some(Kind::Egress),
                change: Some(&change),
                note: Some(&note),
                ..NewEvent::new(EventKind::GrantUsed, &actor)
            },
        )
        .await?;
        w.commit().await?;
        Ok(true)
    }

    /// Files (or counts a hit on) an `egress` proposal flagged `observed` for a connection
    /// the proxy refused, so the operator can approve what the bottle actually tried. Like
    /// any proposal it coalesces with an identical undecided one, meets the rejection
    /// cooldown and the pending cap. `Ok(None)`: not filed, because the destination is the
    /// cloud metadata service, link-local, loopback or the unspecified address, or because
    /// an operator revoked a grant of exactly this change within the rejection cooldown.
    #[instrument(skip(self, bottle), fields(bottle = %bottle.slug), err)]
    pub async fn propose_observed(
        &self,
        bottle: &Bottle,
        host: &str,
        port: u16,
    ) -> StoreResult<Option<Proposed>> {
        let mut p = prepare(NewProposal {
            bottle_id: bottle.id,
            kind: Kind::Egress,
            change: json!({ "host": host, "port": port }),
            justification: format!(
                "observed: the egress proxy refused a connection from this bottle to {} \
                 (no grant in force); filed by the proxy's helper, not by the agent",
                address(host, port)
            ),
            quorum: None,
        })?;
        if change::flags(Kind::Egress, &p.change)
            .iter()
            .any(|f| NEVER_OBSERVED.contains(f))
        {
            return Ok(None);
        }
        p.observed = true;
        let mut w = self.write().await?;
        let now = Timestamp::now();
        let limits = self.limits_in(w.conn()).await?;
        // An operator who revoked this change within the cooldown is not asked again by
        // the proxy (a rejection within it is answered by `propose_in` below).
        if let Some(cooldown) = limits.reject_cooldown {
            let revoked: Option<i64> = sqlx::query_scalar(
                "SELECT 1 FROM grants WHERE bottle_id = $1 AND kind = 'egress' AND change = $2 \
                 AND end_reason = 'revoked' AND ended_at > $3 LIMIT 1",
            )
            .bind(bottle.id.get())
            .bind(p.change.to_string())
            .bind(Timestamp::before(cooldown).as_str())
            .fetch_optional(w.conn())
            .await?;
            if revoked.is_some() {
                return Ok(None);
            }
        }
        let rules = self.in_force(w.conn()).await?;
        let filing = Filing {
            limits: &limits,
            rules: rules.as_deref(),
            deliver: false,
        };
        let out = propose_in(w.conn(), &filing, p, &now).await?;
        w.commit().await?;
        out.map(Some)
    }

    /// Whether the path still names the file this store opened (one `stat`): a long-lived
    /// reader (the proxy's helper) reopens when the file was moved away or replaced. A
    /// PostgreSQL database has no file to replace: always true.
    pub fn still_at_path(&self) -> bool {
        match self.inner.identity {
            Some(identity) => Identity::of(&self.inner.path).is_ok_and(|now| now == identity),
            None => true,
        }
    }
}

/// The destination's host, normalised, or why it cannot be one.
fn destination(host: &str, port: u16) -> Result<String, String> {
    if port == 0 {
        return Err("port 0".into());
    }
    let host = normalise_host(host).map_err(|e| e.to_string())?;
    if host.starts_with("*.") {
        return Err("a destination is one host, not a wildcard".into());
    }
    Ok(host)
}

/// Whether a granted (or proposed) host covers the destination `host`: equal, or `*.domain`
/// with `host` a name under `domain` (not `domain` itself, not an IP address).
pub(crate) fn covers(granted: &str, host: &str) -> bool {
    if granted == host {
        return true;
    }
    let Some(domain) = granted.strip_prefix("*.") else {
        return false;
    };
    if host.parse::<std::net::IpAddr>().is_ok() {
        return false;
    }
    host.len() > domain.len() + 1
        && host.ends_with(domain)
        && host.as_bytes()[host.len() - domain.len() - 1] == b'.'
}

/// Host and port of an egress change.
fn host_port(change: &serde_json::Value) -> Option<(&str, u64)> {
    Some((change.get("host")?.as_str()?, change.get("port")?.as_u64()?))
}

impl From<Grant> for Granted {
    /// The grant with its change's terms taken out once (by the same functions that read
    /// them from the change everywhere else).
    fn from(grant: Grant) -> Granted {
        let (methods, prefix) = change::limits(&grant.change);
        Granted {
            dest: host_port(&grant.change).map(|(h, p)| (h.to_owned(), p)),
            limited: change::is_limited(&grant.change),
            methods: methods.map(|m| m.into_iter().map(str::to_owned).collect()),
            prefix: prefix.map(str::to_owned),
            grant: Arc::new(grant),
        }
    }
}

impl Granted {
    /// Whether the grant covers `host:port` (limits aside).
    fn covers(&self, host: &str, port: u16) -> bool {
        self.dest
            .as_ref()
            .is_some_and(|(h, p)| *p == u64::from(port) && covers(h, host))
    }

    /// Whether its limits let `request` (method upper-cased, path normalised) through; a
    /// request not seen fits only a grant without limits ([`change::request_fits`]).
    fn fits(&self, request: Option<(&str, &str)>) -> bool {
        match request {
            Some((method, path)) => {
                self.methods
                    .as_ref()
                    .is_none_or(|m| m.iter().any(|x| x == method))
                    && self
                        .prefix
                        .as_ref()
                        .is_none_or(|p| path.starts_with(p.as_str()))
            }
            None => !self.limited,
        }
    }

    fn in_force(&self, now: &Timestamp) -> bool {
        self.grant.expires_at.as_ref().is_none_or(|e| e > now)
    }
}

/// The decision from one bottle's egress state at `now`.
fn decide(
    snapshot: &Snapshot,
    host: &str,
    port: u16,
    request: Option<HttpRequest<'_>>,
    now: &Timestamp,
) -> EgressDecision {
    let found = snapshot.bottle.clone();
    let denied = |bottle: Option<Arc<Bottle>>, host: String, reason| EgressDecision::Denied {
        bottle,
        host,
        port,
        reason,
        proposal_id: None,
    };
    let host = match destination(host, port) {
        Ok(h) => h,
        Err(why) => {
            return denied(found, host.to_string(), DenyReason::InvalidDestination(why));
        }
    };
    let Some(bottle) = found else {
        return denied(None, host, DenyReason::UnknownBottle);
    };
    let request = match request.map(normalise_request).transpose() {
        Ok(r) => r,
        Err(why) => return denied(Some(bottle), host, DenyReason::InvalidRequest(why)),
    };
    let request = request.as_ref().map(|(m, p)| (m.as_ref(), p.as_ref()));
    let covering = || {
        snapshot
            .grants
            .iter()
            .filter(|g| g.in_force(now) && g.covers(&host, port))
    };
    if let Some(granted) = best_grant(covering().filter(|g| g.fits(request)), &host) {
        return EgressDecision::Allowed {
            bottle,
            host,
            port,
            grant: granted.grant.clone(),
        };
    }
    let reason = match (request, best_grant(covering(), &host)) {
        (_, None) => DenyReason::NoGrant,
        (None, Some(limited)) => DenyReason::RequestUnseen(limited.grant.id.clone()),
        (Some(_), Some(_)) => DenyReason::OutsideLimits,
    };
    let proposal_id = undecided_for(snapshot, &host, port, now);
    EgressDecision::Denied {
        bottle: Some(bottle),
        host,
        port,
        reason,
        proposal_id,
    }
}

/// The request's method upper-cased and its path normalised, or why it is refused;
/// borrowed when they already are.
fn normalise_request(r: HttpRequest<'_>) -> Result<(Cow<'_, str>, Cow<'_, str>), String> {
    let method = if r.method.bytes().any(|b| b.is_ascii_lowercase()) {
        Cow::Owned(r.method.to_ascii_uppercase())
    } else {
        Cow::Borrowed(r.method)
    };
    if !change::is_method(&method) {
        return Err(format!("{:?} is not an HTTP method", r.method));
    }
    let path = match change::normal_path(r.path) {
        Some(p) => Cow::Borrowed(p),
        None => Cow::Owned(change::normalise_path(r.path)?),
    };
    Ok((method, path))
}

fn best_grant<'g>(grants: impl Iterator<Item = &'g Granted>, host: &str) -> Option<&'g Granted> {
    grants.max_by_key(|g| {
        let g: &'g Granted = g;
        let exact = g.dest.as_ref().is_some_and(|(h, _)| h == host);
        // `None` (until revoked) outlasts every time; later times are larger text.
        let ends = g.grant.expires_at.as_ref().map(Timestamp::as_str);
        (exact, ends.is_none(), ends)
    })
}

/// The bottle's undecided egress proposal asking for the destination, exactly or with a
/// wildcard covering it (exact first), if any.
fn undecided_for(
    snapshot: &Snapshot,
    host: &str,
    port: u16,
    now: &Timestamp,
) -> Option<ProposalId> {
    let mut covering = None;
    for asked in &snapshot.pending {
        if asked.expires_at.as_ref().is_some_and(|e| e <= now) {
            continue;
        }
        let Some((h, pp)) = &asked.dest else {
            continue;
        };
        if *pp != u64::from(port) || !covers(h, host) {
            continue;
        }
        if h == host {
            return Some(asked.id.clone());
        }
        covering.get_or_insert_with(|| asked.id.clone());
    }
    covering
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_cover_names_under_the_domain_only() {
        assert!(covers("pypi.org", "pypi.org"));
        assert!(!covers("pypi.org", "files.pypi.org"));
        assert!(covers("*.example.test", "a.example.test"));
        assert!(covers("*.example.test", "a.b.example.test"));
        assert!(!covers("*.example.test", "example.test"));
        assert!(!covers("*.example.test", "badexample.test"));
        assert!(!covers("*.example.test", "a.example.test.evil"));
        assert!(!covers("*.0.1", "10.0.0.1"), "never an IP address");
        assert!(!covers("*.example.test", ".example.test"));
    }

    #[test]
    fn destinations_are_normalised_like_proposals() {
        assert_eq!(destination("PyPI.org.", 443).unwrap(), "pypi.org");
        assert_eq!(destination("[::1]", 80).unwrap(), "::1");
        assert!(destination("*.example.test", 443).is_err());
        assert!(destination("a.test", 0).is_err());
        assert!(destination("a b", 443).is_err());
    }
}
