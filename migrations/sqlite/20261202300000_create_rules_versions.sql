-- Operator rules in Cedar, one row per version (`rules set`); the newest decides every
-- filing. A version is never changed or deleted: the trail names it by number and hash.
-- Documented in docs/SCHEMA.md and docs/RULES.md.
CREATE TABLE rules_versions (
    version INTEGER PRIMARY KEY CHECK (version > 0),
    -- the file as given; empty: no rules
    text    TEXT NOT NULL,
    -- SHA-256 of text, lowercase hex
    sha256  TEXT NOT NULL,
    -- 'operator:NAME' of whoever set it
    set_by  TEXT NOT NULL,
    set_at  TEXT NOT NULL
) STRICT;
CREATE TRIGGER rules_versions_keep BEFORE DELETE ON rules_versions
BEGIN SELECT RAISE(ABORT, 'rules versions are kept'); END;
CREATE TRIGGER rules_versions_fixed BEFORE UPDATE ON rules_versions
BEGIN SELECT RAISE(ABORT, 'rules versions are kept'); END;

-- The event names this schema knows (the Rust `EventKind`, in the same order), with the
-- rules' own: `rules-changed` (a version set) and `rule-matched` (a shadow rule matched).
DROP TRIGGER events_known_event;
CREATE TRIGGER events_known_event BEFORE INSERT ON events
WHEN NEW.event NOT IN (
    'proposed', 'repeated', 'approved', 'modified', 'rejected', 'auto-rejected',
    'delivered', 'expired', 'withdrawn', 'grant-expired', 'grant-revoked',
    'bottle-added', 'bottle-updated', 'bottle-removed', 'grant-used',
    'operator-added', 'operator-removed', 'signed-in',
    'rules-changed', 'rule-matched')
BEGIN SELECT RAISE(ABORT, 'unknown event name'); END;
