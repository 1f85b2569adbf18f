//! The propose-and-wait flow the proposal tools share: file the proposal through the
//! writer (or, for a call that asked for a task, open the task at once), then, as a
//! [`Held`] call the request's top level awaits last, take a place in the wait budget,
//! register as a waiter and wait the grace window; and the one mapping from what the store
//! delivers to the answer a tool gives.

use serde_json::Value;
use supervise_store::{Bottle, Delivery, Kind, NewProposal, Proposal, Proposed, StoreError, Task};

use crate::answer::{self, Answer};
use crate::app::App;
use crate::bottles::Stale;
use crate::metrics::Refusal;
use crate::waiters::Waited;

/// Who received a delivered decision (it is logged).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Via {
    /// A proposal call waiting in its grace window.
    Waiting,
    /// A `check-proposal` poll.
    Poll,
}

/// How a proposal call waits for its decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wait {
    /// Up to the grace window, then `pending`.
    Grace,
    /// Not at all: the call declared the tasks extension, so it gets a task as soon as the
    /// proposal is durable.
    Task,
}

/// What a proposal call answers.
#[derive(Debug)]
pub(crate) enum Filed {
    /// A tool result.
    Answer(Answer),
    /// A task on the (undecided) proposal.
    Task(Task, Box<Proposal>),
    /// Filed and undecided: the call waits for its decision ([`Held::wait`]).
    Held(Box<Held>),
}

/// A proposal call filed and left to wait its grace window. The request's levels above the
/// filing hand it up unawaited, so the future hyper keeps for a held call is the wait and
/// the little the top level needs to answer, not every level's state beside it.
#[derive(Debug)]
pub(crate) struct Held {
    bottle: Bottle,
    proposal: Box<Proposal>,
    /// The tool that filed it (for the log).
    pub(crate) tool: &'static str,
}

impl Held {
    /// Waits up to the grace window for the decision; the tool's answer.
    pub(crate) async fn wait(self, app: &App) -> Answer {
        wait_for(app, &self.bottle, self.proposal).await
    }
}

impl From<Answer> for Filed {
    fn from(a: Answer) -> Filed {
        Filed::Answer(a)
    }
}

/// Files a proposal through the writer: answered at once (a refusal, an auto-rejection or
/// a rule's decision, a task for [`Wait::Task`], `pending` without a grace window), or
/// [`Filed::Held`], to wait the grace window for a decision. `tool` names the calling tool
/// in refusals. [`Stale`]: the bottle generation was removed before filing; nothing was
/// filed, attribute again.
pub(crate) async fn file(
    app: &App,
    bottle: &Bottle,
    kind: Kind,
    change: Value,
    justification: String,
    tool: &'static str,
    wait: Wait,
) -> Result<Filed, Stale> {
    let done = |a: Answer| Ok(a.into());
    // Already allowed: answered from the grant, nothing queued, never a task.
    match app.store.grant_allowing(bottle.id, kind, &change).await {
        Ok(Some(grant)) => {
            tracing::info!(bottle = %bottle.slug, grant = %grant.id, "already allowed by a grant in force");
            return done(answer::already_allowed(&grant, justification));
        }
        Ok(None) => {}
        Err(e) => return done(answer::store_failure(&e, tool)),
    }
    let item = NewProposal {
        bottle_id: bottle.id,
        kind,
        change,
        justification,
        quorum: None,
    };
    // A task is opened in the filing transaction, so it costs no commit of its own.
    let (filed, task) = match wait {
        Wait::Task => match app.writer.propose_task(item).await {
            Ok((filed, task)) => (Ok(filed), task),
            Err(e) => (Err(e), None),
        },
        Wait::Grace => (app.writer.propose(item).await, None),
    };
    let p = match filed {
        Ok(Proposed::AutoRejected(p)) => return done(answer::auto_rejected(&p)),
        // A rule decided it: the answer names the rule (`rules:ID`).
        Ok(Proposed::Ruled(p)) => return done(answer::delivered(&p)),
        Ok(Proposed::Created(p)) => p,
        Ok(Proposed::Repeated(p)) => p,
        Err(StoreError::BottleGone(_)) => return Err(Stale),
        Err(StoreError::Invalid { field, message }) => {
            let field = if field == "change" {
                "arguments".to_string()
            } else {
                field
            };
            return done(answer::bad_argument(&field, &message, tool));
        }
        Err(e @ StoreError::PendingCapReached { .. }) => {
            app.metrics.refused(Refusal::PendingCap);
            return done(answer::refused(
                e.to_string(),
                None,
                "wait for the operator to decide your open proposals (list-proposals shows them) before proposing more.",
            ));
        }
        Err(e) => return done(answer::store_failure(&e, tool)),
    };
    if let Some(task) = task {
        tracing::info!(bottle = %bottle.slug, proposal = %p.id, "answered with a task");
        return Ok(Filed::Task(task, Box::new(p)));
    }
    if app.config.grace.is_zero() || app.shutdown.is_started() {
        return done(answer::pending(p));
    }
    Ok(Filed::Held(Box::new(Held {
        bottle: bottle.clone(),
        proposal: Box::new(p),
        tool,
    })))
}

/// Holds a place in the wait budget and waits the grace window for `p`'s decision.
async fn wait_for(app: &App, bottle: &Bottle, p: Box<Proposal>) -> Answer {
    let _place = match app.budget.try_acquire(bottle.id) {
        Ok(place) => place,
        Err(full) => {
            tracing::debug!(bottle = %bottle.slug, proposal = %p.id, ?full, "wait limit reached; answering pending at once");
            app.metrics.refused(Refusal::WaitCap);
            return answer::pending(*p);
        }
    };
    let _waiting = app.metrics.waiting();
    let deadline = tokio::time::Instant::now() + app.config.grace;
    let waited = app
        .waiters
        .wait(&app.store, bottle.id, &p.id, deadline, &app.shutdown)
        .await;
    // A bottle removed while its call waited is told so here: its proposal was withdrawn
    // with it (or, already decided, is no longer its to take), never re-attributed.
    match waited {
        Waited::Delivered(d) => delivered(*d, &p.id, bottle, Via::Waiting),
        Waited::Withdrawn(p) => {
            tracing::info!(bottle = %bottle.slug, proposal = %p.id, "waiting call told its proposal was withdrawn");
            answer::withdrawn_while_waiting(&p)
        }
        Waited::TimedOut | Waited::ShuttingDown => answer::pending(*p),
    }
}

/// The tool result for a proposal no longer undecided (decided, expired or withdrawn), as
/// `check-proposal` gives it when it delivers: what a completed task carries.
pub(crate) fn outcome(p: &Proposal) -> Answer {
    answer::delivered(p)
}

/// The answer for what the store delivered on proposal `id` of `bottle`.
pub(crate) fn delivered(d: Delivery, id: &str, bottle: &Bottle, via: Via) -> Answer {
    match d {
        Delivery::Decided(p) => {
            match via {
                Via::Waiting => {
                    tracing::info!(bottle = %bottle.slug, proposal = %p.id, status = %p.status, "decision delivered while waiting")
                }
                Via::Poll => {
                    tracing::info!(bottle = %bottle.slug, proposal = %p.id, status = %p.status, "decision delivered to check-proposal")
                }
            }
            answer::delivered(&p)
        }
        Delivery::Expired(p) => answer::expired(&p),
        Delivery::Pending(p) => answer::pending(p),
        Delivery::Unknown => answer::unknown(id),
    }
}
