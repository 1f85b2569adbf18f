-- Where each event consumer stands in the change feed, kept durably so a restarted server
-- resumes its hooks where they stopped instead of at the end of the trail: `seq` is the
-- low-water mark, every event at or below it has been handled (its hook run finished or
-- was killed at its timeout). One row per consumer; the server's `--on-event` runner is
-- `on-event`. Not part of the audit trail: rows are updated in place, never appended.
-- Documented in docs/SCHEMA.md.

CREATE TABLE hook_cursors (
    name       TEXT PRIMARY KEY,
    seq        INTEGER NOT NULL CHECK (seq >= 0),
    updated_at TEXT NOT NULL
) STRICT;
