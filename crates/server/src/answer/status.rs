//! An answer's status: the proposal's state as the agent reads it, or why there is none
//! (`unknown`, `refused`). Its word is written only at the wire edge ([`AnswerStatus::as_str`]:
//! `structuredContent.status`, the tools' output schema).

use supervise_store::Status;

/// The `status` of a tool answer about one proposal (SPEC "MCP tools").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AnswerStatus {
    Pending,
    Approved,
    Modified,
    Rejected,
    Expired,
    Withdrawn,
    /// No open proposal of this bottle has the id.
    Unknown,
    /// The call was refused: invalid input, or a limit reached.
    Refused,
}

impl AnswerStatus {
    /// Every status, in the order the output schema lists them.
    pub(crate) const ALL: [AnswerStatus; 8] = [
        AnswerStatus::Pending,
        AnswerStatus::Approved,
        AnswerStatus::Modified,
        AnswerStatus::Rejected,
        AnswerStatus::Expired,
        AnswerStatus::Withdrawn,
        AnswerStatus::Unknown,
        AnswerStatus::Refused,
    ];

    /// The word on the wire.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            AnswerStatus::Pending => "pending",
            AnswerStatus::Approved => "approved",
            AnswerStatus::Modified => "modified",
            AnswerStatus::Rejected => "rejected",
            AnswerStatus::Expired => "expired",
            AnswerStatus::Withdrawn => "withdrawn",
            AnswerStatus::Unknown => "unknown",
            AnswerStatus::Refused => "refused",
        }
    }

    /// Whether the answer is an error (`isError`): the change will not happen as asked.
    pub(crate) fn is_error(self) -> bool {
        match self {
            AnswerStatus::Pending | AnswerStatus::Approved | AnswerStatus::Modified => false,
            AnswerStatus::Rejected
            | AnswerStatus::Expired
            | AnswerStatus::Withdrawn
            | AnswerStatus::Unknown
            | AnswerStatus::Refused => true,
        }
    }
}

impl From<Status> for AnswerStatus {
    fn from(status: Status) -> AnswerStatus {
        match status {
            Status::Pending => AnswerStatus::Pending,
            Status::Approved => AnswerStatus::Approved,
            Status::Modified => AnswerStatus::Modified,
            Status::Rejected => AnswerStatus::Rejected,
            Status::Expired => AnswerStatus::Expired,
            Status::Withdrawn => AnswerStatus::Withdrawn,
        }
    }
}

impl std::fmt::Display for AnswerStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_proposal_status_keeps_its_word() {
        for &status in Status::ALL {
            assert_eq!(AnswerStatus::from(status).as_str(), status.as_str());
        }
    }
}
