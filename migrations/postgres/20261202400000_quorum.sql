-- Quorum: a proposal that needs the approvals of several distinct operators. Documented in
-- docs/SCHEMA.md.

-- Approvals it needs, fixed when it is filed (1: the first decision decides).
ALTER TABLE proposals ADD COLUMN quorum BIGINT NOT NULL DEFAULT 1 CHECK (quorum >= 1);
-- Which count of approvals is running: a modify starts a new one.
ALTER TABLE proposals ADD COLUMN approval_round BIGINT NOT NULL DEFAULT 0;
-- The change under approval once a modify replaced it (NULL: the proposed change).
ALTER TABLE proposals ADD COLUMN approving_change TEXT COLLATE "C"
    CHECK (approving_change IS NULL OR json_valid(approving_change));

-- Each approval counted toward a quorum: who approved which exact change, when and through
-- what. One operator counts once per round, whatever surface it used.
CREATE TABLE approvals (
    proposal_id TEXT COLLATE "C" NOT NULL REFERENCES proposals (id),
    round       BIGINT NOT NULL,
    operator    TEXT COLLATE "C" NOT NULL,
    change      TEXT COLLATE "C" NOT NULL CHECK (json_valid(change)),
    at          TEXT COLLATE "C" NOT NULL,
    via         TEXT COLLATE "C" NOT NULL CHECK (via IN ('cli', 'console', 'gate')),
    note        TEXT COLLATE "C",
    PRIMARY KEY (proposal_id, round, operator)
);

-- An approval is history: never changed, never deleted (TRUNCATE included).
CREATE TRIGGER approvals_keep BEFORE DELETE OR UPDATE ON approvals
    FOR EACH ROW EXECUTE FUNCTION supervise_refuse('approvals are kept for audit');
CREATE TRIGGER approvals_keep_truncate BEFORE TRUNCATE ON approvals
    FOR EACH STATEMENT EXECUTE FUNCTION supervise_refuse('approvals are kept for audit');

-- The event names this schema knows (the Rust `EventKind`, in the same order).
CREATE OR REPLACE FUNCTION events_known_event() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.event NOT IN (
        'proposed', 'repeated', 'approved', 'modified', 'rejected', 'auto-rejected',
        'delivered', 'expired', 'withdrawn', 'grant-expired', 'grant-revoked',
        'bottle-added', 'bottle-updated', 'bottle-removed', 'grant-used',
        'operator-added', 'operator-removed', 'signed-in', 'approval-added') THEN
        RAISE EXCEPTION 'unknown event name';
    END IF;
    RETURN NEW;
END $$;
