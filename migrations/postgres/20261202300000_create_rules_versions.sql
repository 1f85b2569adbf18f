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
