//! Who acts on the store from outside the bottles: console operators with a [`Role`] and a
//! bottle scope, the [`Actor`] every operator-facing write takes, and the one-time secrets
//! (sign-in links, sessions, API tokens) an operator proves themselves with.

use std::fmt;
use std::str::FromStr;

use super::vocab::{UnknownName, vocabulary};
use super::{Event, Timestamp};

vocabulary! {
    /// What an operator may do: a viewer reads; an approver also approves, modifies,
    /// rejects and revokes; an admin also manages bottles and operators.
    pub enum Role ("role") {
        Viewer = "viewer",
        Approver = "approver",
        Admin = "admin",
    }
}

vocabulary! {
    /// Through what a decision (or revoke, or operator change) was made.
    pub enum Via ("via") {
        /// The `supervise` command line on the host.
        Cli = "cli",
        /// The review console or its API.
        Console = "console",
        /// The git gate.
        Gate = "gate",
        /// An operator's rule, at filing time (actor `rules:ID`).
        Rules = "rules",
    }
}

/// Who acts, through what, within which limits. Every operator-facing store write takes
/// one, and checks its role and scope inside the write's own transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor {
    pub name: String,
    pub via: Via,
    pub role: Role,
    /// Bottle slug globs this actor may see; empty: every bottle.
    pub bottles: Vec<String>,
}

impl Actor {
    /// The host's CLI (file access to the database is already full power): role Admin,
    /// all bottles.
    pub fn cli(name: &str) -> Actor {
        Actor {
            name: name.to_string(),
            via: Via::Cli,
            role: Role::Admin,
            bottles: Vec::new(),
        }
    }

    /// The gate (`via: gate`), role Approver, all bottles.
    pub fn gate(name: &str) -> Actor {
        Actor {
            name: name.to_string(),
            via: Via::Gate,
            role: Role::Approver,
            bottles: Vec::new(),
        }
    }

    /// A signed-in console or API operator: their role and bottle globs, via Console.
    pub fn console(op: &Operator) -> Actor {
        Actor {
            name: op.name.clone(),
            via: Via::Console,
            role: op.role,
            bottles: op.bottles.clone(),
        }
    }

    /// Whether the actor may see bottle `slug`: no globs means every bottle, otherwise any
    /// glob matches ([`crate::glob::matches`]).
    pub fn sees(&self, slug: &str) -> bool {
        self.bottles.is_empty() || self.bottles.iter().any(|g| crate::glob::matches(g, slug))
    }

    /// Whether the actor may see `event` in the trail or the change feed: an event of a
    /// bottle by [`Actor::sees`] of its slug; an event of no bottle (an operator added or
    /// removed, a sign-in) only by an admin of every bottle, as only such an admin manages
    /// operators ([`Actor::manages_operators`]).
    pub fn sees_event(&self, event: &Event) -> bool {
        match &event.bottle {
            Some(slug) => self.sees(slug),
            None => self.manages_operators(),
        }
    }

    /// Approver or admin: may approve, modify, reject and revoke.
    pub fn may_decide(&self) -> bool {
        matches!(self.role, Role::Approver | Role::Admin)
    }

    /// May manage bottles (within its scope) and operators.
    pub fn is_admin(&self) -> bool {
        self.role == Role::Admin
    }

    /// May manage operators: an admin of every bottle, so no admin can hand out more than
    /// it holds.
    pub fn manages_operators(&self) -> bool {
        self.is_admin() && self.bottles.is_empty()
    }
}

/// A console operator, as listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Operator {
    pub name: String,
    pub role: Role,
    /// Bottle slug globs; empty: every bottle.
    pub bottles: Vec<String>,
    pub created_at: Timestamp,
    /// `operator:NAME` of whoever added it.
    pub created_by: String,
    /// The last session or token use.
    pub last_seen_at: Option<Timestamp>,
    /// Whether a live API token exists.
    pub has_token: bool,
}

/// A secret shown once (sign-in link secret, session secret, API token). Only its SHA-256
/// is stored. `Display` prints it; `Debug` never does.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// The secret's text, to hand to the operator (or set as a cookie) once.
    pub fn expose(&self) -> &str {
        &self.0
    }

    pub(crate) fn new(text: String) -> Secret {
        Secret(text)
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(..)")
    }
}

/// A one-time sign-in link's secret, for the console URL `{public_url}/sign-in/{secret}`.
#[derive(Debug, Clone)]
pub struct SignInLink {
    pub operator: String,
    pub secret: Secret,
    pub expires_at: Timestamp,
}

impl SignInLink {
    /// The link to open: `{public_url}/sign-in/{secret}`, whether or not `public_url` ends
    /// in a slash. The CLI prints it and the console's admin pages show it.
    pub fn url(&self, public_url: &str) -> String {
        format!(
            "{}/sign-in/{}",
            public_url.trim_end_matches('/'),
            self.secret.expose()
        )
    }
}

/// A session started by spending a link: the cookie value (secret) and its CSRF token.
#[derive(Debug, Clone)]
pub struct NewSession {
    pub operator: Operator,
    pub secret: Secret,
    pub csrf: String,
    pub expires_at: Timestamp,
}

/// A live session looked up by its cookie value.
#[derive(Debug, Clone)]
pub struct Session {
    pub operator: Operator,
    pub csrf: String,
    /// The absolute end (the idle limit may end it sooner).
    pub expires_at: Timestamp,
}

/// Why a sign-in link was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignInRefusal {
    /// No such link (or its operator was removed).
    Unknown,
    /// The link was used already.
    Spent,
    /// The link is past its lifetime.
    Expired,
}

impl fmt::Display for SignInRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SignInRefusal::Unknown => "the sign-in link is not known",
            SignInRefusal::Spent => "the sign-in link was used already",
            SignInRefusal::Expired => "the sign-in link has expired",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_and_scopes() {
        let mut a = Actor::cli("alice");
        assert!(a.sees("anything") && a.may_decide() && a.is_admin() && a.manages_operators());
        a.bottles = vec!["team-a-*".into()];
        assert!(a.sees("team-a-x") && !a.sees("team-b-x") && !a.manages_operators());
        a.role = Role::Viewer;
        assert!(!a.may_decide() && !a.is_admin());
        let g = Actor::gate("gate");
        assert!(g.may_decide() && !g.is_admin() && g.via == Via::Gate);
        assert_eq!("approver".parse::<Role>().unwrap(), Role::Approver);
        assert!("root".parse::<Role>().is_err());
        assert_eq!(Via::Console.to_string(), "console");
        assert_eq!(format!("{:?}", Secret::new("x".into())), "Secret(..)");
    }
}
