-- Operator rules in Cedar, one row per version: the same table as the SQLite migration of
-- the same version. Documented in docs/SCHEMA.md and docs/RULES.md.
CREATE TABLE rules_versions (
    version BIGINT PRIMARY KEY CHECK (version > 0),
    text    TEXT NOT NULL,
    sha256  TEXT COLLATE "C" NOT NULL,
    set_by  TEXT COLLATE "C" NOT NULL,
    set_at  TEXT COLLATE "C" NOT NULL
);
CREATE TRIGGER rules_versions_keep BEFORE DELETE OR UPDATE ON rules_versions
    FOR EACH ROW EXECUTE FUNCTION supervise_refuse('rules versions are kept');
CREATE TRIGGER rules_versions_keep_truncate BEFORE TRUNCATE ON rules_versions
    FOR EACH STATEMENT EXECUTE FUNCTION supervise_refuse('rules versions are kept');

-- The event names this schema knows (the Rust `EventKind`, in the same order), with the
-- rules' own: `rules-changed` (a version set) and `rule-matched` (a shadow rule matched).
CREATE OR REPLACE FUNCTION events_known_event() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.event NOT IN (
        'proposed', 'repeated', 'approved', 'modified', 'rejected', 'auto-rejected',
        'delivered', 'expired', 'withdrawn', 'grant-expired', 'grant-revoked',
        'bottle-added', 'bottle-updated', 'bottle-removed', 'grant-used',
        'operator-added', 'operator-removed', 'signed-in',
        'rules-changed', 'rule-matched') THEN
        RAISE EXCEPTION 'unknown event name';
    END IF;
    RETURN NEW;
END $$;
