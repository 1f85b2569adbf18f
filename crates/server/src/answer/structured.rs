//! An answer's `structuredContent`: any JSON value, or a proposal's form kept as its parts
//! and written straight to the wire (the answer of every pending poll), in the same bytes
//! as the `Value` [`super::proposal_json`] builds.

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value};
use supervise_store::{Decision, Kind};

use super::AnswerStatus;

/// The structured facts of an answer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Structured {
    /// Any JSON value.
    Json(Value),
    /// A proposal's form, from its parts.
    Proposal(Box<ProposalForm>),
}

/// What [`super::proposal_json`] shows of a proposal, owned.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ProposalForm {
    pub(crate) id: String,
    pub(crate) status: AnswerStatus,
    pub(crate) kind: Kind,
    /// The change's members; `justification` is written after them.
    pub(crate) change: Map<String, Value>,
    pub(crate) justification: String,
    pub(crate) decision: Option<Decision>,
}

impl Structured {
    /// The value as JSON.
    pub(crate) fn to_value(&self) -> Value {
        match self {
            Structured::Json(v) => v.clone(),
            Structured::Proposal(p) => serde_json::to_value(p).expect("a proposal serialises"),
        }
    }

    /// The value as JSON, moved out when it is one.
    pub(crate) fn into_value(self) -> Value {
        match self {
            Structured::Json(v) => v,
            Structured::Proposal(_) => self.to_value(),
        }
    }
}

impl Serialize for Structured {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Structured::Json(v) => v.serialize(serializer),
            Structured::Proposal(p) => p.serialize(serializer),
        }
    }
}

/// `{"proposal_id", "status", "kind", "proposal": {…change, "justification"}, "decision"?}`,
/// in that order, as `super::structured` inserts them.
impl Serialize for ProposalForm {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("proposal_id", &self.id)?;
        map.serialize_entry("status", self.status.as_str())?;
        map.serialize_entry("kind", self.kind.as_str())?;
        map.serialize_entry(
            "proposal",
            &WithJustification {
                change: &self.change,
                justification: &self.justification,
            },
        )?;
        if let Some(d) = &self.decision {
            map.serialize_entry(
                "decision",
                &DecisionForm {
                    change: d.change.as_ref(),
                    note: d.note.as_deref(),
                    decided_by: &d.decided_by,
                    decided_at: &d.decided_at,
                },
            )?;
        }
        map.end()
    }
}

/// The change's members, then `justification`; a change that has a `justification` member
/// shows the justification in its place instead (as inserting into the map would).
struct WithJustification<'a> {
    change: &'a Map<String, Value>,
    justification: &'a str,
}

impl Serialize for WithJustification<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        let mut shown = false;
        for (key, value) in self.change {
            if key == "justification" {
                map.serialize_entry(key, self.justification)?;
                shown = true;
            } else {
                map.serialize_entry(key, value)?;
            }
        }
        if !shown {
            map.serialize_entry("justification", self.justification)?;
        }
        map.end()
    }
}

#[derive(serde::Serialize)]
struct DecisionForm<'a> {
    change: Option<&'a Value>,
    note: Option<&'a str>,
    decided_by: &'a str,
    decided_at: &'a supervise_store::Timestamp,
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use supervise_protocol::{ProtocolVersion, RequestId, Response, ResultResponse, modern_result};
    use supervise_store::{BottleId, Proposal, ProposalId, Quorum, Status, Timestamp, Via};

    use super::super::{Answer, delivered, list, pending, refused, unknown};
    use super::*;

    fn proposal(kind: Kind, change: Value, decision: Option<Decision>) -> Proposal {
        Proposal {
            id: serde_json::from_value::<ProposalId>(json!("019ad3c2-7f10-7b4e-9a51-4c2d8e6f0a11"))
                .unwrap(),
            host: "h".into(),
            bottle: "b".into(),
            bottle_id: BottleId::from_row(1),
            kind,
            change,
            justification: "needs \"pip\" <install>\n\u{7}".into(),
            status: Status::Pending,
            flags: vec![],
            hits: 1,
            created_at: Timestamp::now(),
            expires_at: Some("2999-01-02T18:00:00.000Z".parse().unwrap()),
            decision,
            archived_at: None,
            quorum: Quorum::single(),
        }
    }

    fn decision() -> Decision {
        Decision {
            change: Some(json!({"host": "pypi.org", "port": 443})),
            note: Some("ok ✓".into()),
            decided_by: "op".into(),
            via: Some(Via::Cli),
            decided_at: Timestamp::now(),
            grant_id: None,
            grant_expires_at: None,
        }
    }

    fn answers() -> Vec<Answer> {
        let egress = json!({"host": "pypi.org", "port": 443});
        let mut answers = vec![
            pending(proposal(Kind::Egress, egress.clone(), None)),
            pending(proposal(
                Kind::GitPush,
                json!({"remote": "origin", "refs": [{"ref": "refs/heads/x", "force": false}]}),
                None,
            )),
            // A member named like the justification is shown in its place.
            pending(proposal(
                Kind::Egress,
                json!({"justification": 1, "host": "a", "port": 1}),
                None,
            )),
            pending(proposal(Kind::Egress, json!("not an object"), None)),
            pending(proposal(Kind::Egress, egress.clone(), Some(decision()))),
            refused("invalid port: too big", Some("port"), "fix it."),
            unknown("019ad3c2-7f10-7b4e-9a51-4c2d8e6f0a11"),
            list(&[proposal(Kind::Egress, egress.clone(), None)]),
        ];
        let mut approved = proposal(Kind::Egress, egress, Some(decision()));
        approved.status = Status::Approved;
        answers.push(delivered(&approved));
        answers
    }

    /// What a client gets for a tool's answer is the same, byte for byte, whether it is
    /// written from its parts or through the result's `Value` tree.
    #[test]
    fn an_answer_on_the_wire_is_the_bytes_of_its_value_tree() {
        let info = crate::app::server_info();
        let meta = supervise_protocol::ServerInfoMeta::new(&info);
        for id in [RequestId::from(7), RequestId::from("a\"b")] {
            for a in answers() {
                for version in [
                    ProtocolVersion::V2025_03_26,
                    ProtocolVersion::V2025_06_18,
                    ProtocolVersion::V2025_11_25,
                    ProtocolVersion::V2026_07_28,
                ] {
                    for modern in [false, true] {
                        let tree = a.clone().into_result_value(version);
                        let tree = if modern {
                            modern_result(tree, &info)
                        } else {
                            tree
                        };
                        let want = serde_json::to_vec(&Response::result(id.clone(), tree)).unwrap();
                        let wire = a.to_wire(version, modern.then_some(&meta));
                        let got = serde_json::to_vec(&ResultResponse {
                            id: &id,
                            result: &wire,
                        })
                        .unwrap();
                        assert_eq!(
                            String::from_utf8(got).unwrap(),
                            String::from_utf8(want).unwrap(),
                            "{version:?} modern {modern}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn a_pending_answer_keeps_the_proposal_form_as_its_value() {
        let p = proposal(Kind::Egress, json!({"host": "pypi.org", "port": 443}), None);
        let a = pending(p.clone());
        assert!(matches!(a.structured, Structured::Proposal(_)));
        assert_eq!(
            a.structured.to_value(),
            super::super::proposal_json(&p, AnswerStatus::Pending)
        );
    }
}
