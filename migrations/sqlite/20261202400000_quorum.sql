-- Quorum: a proposal that needs the approvals of several distinct operators. Documented in
-- docs/SCHEMA.md.

-- Approvals it needs, fixed when it is filed (1: the first decision decides).
ALTER TABLE proposals ADD COLUMN quorum INTEGER NOT NULL DEFAULT 1 CHECK (quorum >= 1);
-- Which count of approvals is running: a modify starts a new one.
ALTER TABLE proposals ADD COLUMN approval_round INTEGER NOT NULL DEFAULT 0;
-- The change under approval once a modify replaced it (NULL: the proposed change).
ALTER TABLE proposals ADD COLUMN approving_change TEXT
    CHECK (approving_change IS NULL OR json_valid(approving_change));

-- Each approval counted toward a quorum: who approved which exact change, when and through
-- what. One operator counts once per round, whatever surface it used.
CREATE TABLE approvals (
    proposal_id TEXT NOT NULL REFERENCES proposals (id),
    round       INTEGER NOT NULL,
    operator    TEXT NOT NULL,
    change      TEXT NOT NULL CHECK (json_valid(change)),
    at          TEXT NOT NULL,
    via         TEXT NOT NULL CHECK (via IN ('cli', 'console', 'gate')),
    note        TEXT,
    PRIMARY KEY (proposal_id, round, operator)
) STRICT;

-- An approval is history: never changed, never deleted.
CREATE TRIGGER approvals_keep BEFORE DELETE ON approvals
BEGIN SELECT RAISE(ABORT, 'approvals are kept for audit'); END;
CREATE TRIGGER approvals_fixed BEFORE UPDATE ON approvals
BEGIN SELECT RAISE(ABORT, 'approvals are kept for audit'); END;

-- The event names this schema knows (the Rust `EventKind`, in the same order).
DROP TRIGGER events_known_event;
CREATE TRIGGER events_known_event BEFORE INSERT ON events
WHEN NEW.event NOT IN (
    'proposed', 'repeated', 'approved', 'modified', 'rejected', 'auto-rejected',
    'delivered', 'expired', 'withdrawn', 'grant-expired', 'grant-revoked',
    'bottle-added', 'bottle-updated', 'bottle-removed', 'grant-used',
    'operator-added', 'operator-removed', 'signed-in', 'approval-added')
BEGIN SELECT RAISE(ABORT, 'unknown event name'); END;
