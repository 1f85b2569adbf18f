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
