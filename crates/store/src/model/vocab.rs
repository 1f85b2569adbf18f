//! The closed sets of words that cross crates: change kinds, statuses, event names, risk
//! flags and grant end reasons. Each is text only at the SQL and JSON edges, with the same
//! names in both, and an unknown name is an error, never a guess.

use std::fmt;
use std::str::FromStr;

/// A name that is not one of a vocabulary's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{name:?} is not a known {what}")]
pub struct UnknownName {
    /// Which vocabulary: `kind`, `status`, `event`, `flag`, `end reason`, `role`, `via`,
    /// `time`.
    pub what: &'static str,
    pub name: String,
}

/// Defines a vocabulary enum with `as_str`, `ALL`, `FromStr`, `Display` and serde as the
/// same names.
macro_rules! vocabulary {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident ($what:literal) {
            $( $(#[$vmeta:meta])* $variant:ident = $text:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        $vis enum $name {
            $( $(#[$vmeta])* $variant, )+
        }

        impl $name {
            /// Every word, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The name used in the database, in JSON and on the command line.
            pub fn as_str(self) -> &'static str {
                match self {
                    $( $name::$variant => $text, )+
                }
            }
        }

        impl FromStr for $name {
            type Err = UnknownName;

            fn from_str(s: &str) -> Result<$name, UnknownName> {
                match s {
                    $( $text => Ok($name::$variant), )+
                    other => Err(UnknownName { what: $what, name: other.to_string() }),
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.pad(self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<$name, D::Error> {
                let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
                text.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}

pub(super) use vocabulary;

vocabulary! {
    /// The kinds of policy change an agent can propose.
    pub enum Kind ("kind") {
        /// Reach a host (and port) through the egress proxy.
        Egress = "egress",
        /// Push a ref to a remote through the git gate.
        GitPush = "git-push",
    }
}

impl Kind {
    /// Parses `egress` or `git-push`.
    pub fn parse(s: &str) -> Option<Kind> {
        s.parse().ok()
    }
}

vocabulary! {
    /// A proposal's state. `Pending` may be decided, expire or be withdrawn; the rest are final.
    pub enum Status ("status") {
        Pending = "pending",
        Approved = "approved",
        Modified = "modified",
        Rejected = "rejected",
        Expired = "expired",
        Withdrawn = "withdrawn",
    }
}

impl Status {
    /// Approved, modified or rejected: an operator's decision.
    pub fn is_decision(self) -> bool {
        matches!(self, Status::Approved | Status::Modified | Status::Rejected)
    }
}

vocabulary! {
    /// The name of an audit event (SPEC "Events"): what the `event` column holds.
    pub enum EventKind ("event") {
        /// A bottle filed a new proposal.
        Proposed = "proposed",
        /// A bottle asked again for a change that is still undecided.
        Repeated = "repeated",
        Approved = "approved",
        Modified = "modified",
        Rejected = "rejected",
        /// An identical change was rejected within the cooldown.
        AutoRejected = "auto-rejected",
        /// The outcome reached the agent; the proposal is archived.
        Delivered = "delivered",
        /// An undecided proposal ran out of time.
        Expired = "expired",
        /// The agent withdrew its proposal, or its bottle was removed.
        Withdrawn = "withdrawn",
        GrantExpired = "grant-expired",
        GrantRevoked = "grant-revoked",
        BottleAdded = "bottle-added",
        /// A bottle registered at server start moved to another address.
        BottleUpdated = "bottle-updated",
        BottleRemoved = "bottle-removed",
        /// A grant let a connection through the egress proxy (first use, then at most
        /// once a minute per grant).
        GrantUsed = "grant-used",
        /// An admin added a console operator.
        OperatorAdded = "operator-added",
        /// An admin removed a console operator; their sessions, token and links ended.
        OperatorRemoved = "operator-removed",
        /// An operator spent a sign-in link and began a console session.
        SignedIn = "signed-in",
        /// An operator's approval was counted toward a proposal's quorum ("1 of 2").
        ApprovalAdded = "approval-added",
        /// `audit archive` moved the events before a time to a file; the row's note is
        /// the checkpoint the rest of the chain starts from.
        ArchivedTrail = "archived-trail",
        /// The git gate let a ref update through: an approval or a standing grant covered
        /// it (the change is the update, the note what covered it and its content flags).
        PushAccepted = "push-accepted",
        /// An admin stored a new rules version (note: the version and its SHA-256).
        RulesChanged = "rules-changed",
        /// A shadow rule matched a filed proposal (note: what it would have decided).
        RuleMatched = "rule-matched",
    }
}

impl EventKind {
    /// The event an operator's decision records (`None` for a status that is not one).
    pub fn of_decision(status: Status) -> Option<EventKind> {
        match status {
            Status::Approved => Some(EventKind::Approved),
            Status::Modified => Some(EventKind::Modified),
            Status::Rejected => Some(EventKind::Rejected),
            Status::Pending | Status::Expired | Status::Withdrawn => None,
        }
    }
}

vocabulary! {
    /// A risk flag: a short, stable name an operator sees before deciding.
    pub enum Flag ("flag") {
        WildcardHost = "wildcard-host",
        IpLiteral = "ip-literal",
        /// An IPv4 address written as something other than a dotted quad.
        DisguisedIp = "disguised-ip",
        UnusualPort = "unusual-port",
        CloudMetadata = "cloud-metadata",
        Loopback = "loopback",
        PrivateIp = "private-ip",
        LinkLocal = "link-local",
        Cgnat = "cgnat",
        Unspecified = "unspecified",
        DefaultBranch = "default-branch",
        Tag = "tag",
        RefOutsideHeads = "ref-outside-heads",
        /// A remote or ref component that looks like `origin`, `main` or `master` but is
        /// spelled otherwise (another case, or letters of another script).
        Lookalike = "lookalike",
        /// An operator's modified change allows more than the proposed one.
        Widened = "widened",
        /// A gate push whose old commit is not an ancestor of the new one.
        ForcePush = "force-push",
        /// A gate push that deletes the ref.
        RefDeletion = "ref-deletion",
        /// A gate push of over 100 commits or over 10,000 changed lines.
        LargePush = "large-push",
        /// Filed by the egress proxy's helper for a connection it refused, not asked for by
        /// the agent: what the bottle actually tried.
        Observed = "observed",
        /// A wildcard over a suffix a company opens to its customers (the public suffix
        /// list's private section: `*.github.io`, `*.s3.amazonaws.com`): it covers every
        /// customer's names, not one owner's.
        SharedSuffix = "shared-suffix",
        /// An added line of a gate push matches a secret rule (gitleaks' rule set).
        SecretInDiff = "secret-in-diff",
        /// A gate push adds an executable file, makes one executable, or adds a symlink
        /// that points outside the repository.
        ExecutableAdded = "executable-added",
        /// A gate push changes a CI definition (`.github/workflows/`, `.gitlab-ci.yml`, ...).
        CiConfig = "ci-config",
        /// A gate push adds a package lifecycle script (`preinstall`, `postinstall`,
        /// `prepare`, ... in `package.json`).
        InstallScript = "install-script",
    }
}

vocabulary! {
    /// Why a grant stopped being in force.
    pub enum EndReason ("end reason") {
        Revoked = "revoked",
        Expired = "expired",
        BottleRemoved = "bottle-removed",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trips<T>(all: &[T])
    where
        T: Copy + PartialEq + fmt::Debug + fmt::Display + FromStr<Err = UnknownName>,
        T: serde::Serialize + serde::de::DeserializeOwned,
    {
        for &word in all {
            let text = word.to_string();
            assert_eq!(text.parse::<T>().unwrap(), word);
            let json = serde_json::to_string(&word).unwrap();
            assert_eq!(json, format!("\"{text}\""));
            assert_eq!(serde_json::from_str::<T>(&json).unwrap(), word);
        }
        assert!("no-such-word".parse::<T>().is_err());
        assert!(serde_json::from_str::<T>("\"no-such-word\"").is_err());
    }

    #[test]
    fn every_word_round_trips_and_unknown_names_are_refused() {
        round_trips(Kind::ALL);
        round_trips(Status::ALL);
        round_trips(EventKind::ALL);
        round_trips(Flag::ALL);
        round_trips(EndReason::ALL);
        assert_eq!(
            "withdrawnx".parse::<Status>(),
            Err(UnknownName {
                what: "status",
                name: "withdrawnx".into()
            })
        );
    }

    #[test]
    fn display_pads_like_a_string() {
        assert_eq!(format!("{:<10}|", EventKind::Proposed), "proposed  |");
    }
}
