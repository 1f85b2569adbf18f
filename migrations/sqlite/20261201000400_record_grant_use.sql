-- The `grant-used` event (the egress proxy's helper records that a grant let a connection
-- through: first use, then at most once a minute per grant) and a cheaper way to grow the
-- event vocabulary. The event name was a CHECK on `events.event`, which SQLite can only
-- change by copying the whole trail; it is now checked by the trigger `events_known_event`,
-- so the next new event name is a DROP TRIGGER and a CREATE TRIGGER, whatever the trail's
-- size. This migration copies the trail once, rows and `seq` unchanged.
-- Documented in docs/SCHEMA.md.

DROP VIEW audit_log;

CREATE TABLE events_new (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    at          TEXT NOT NULL,
    event       TEXT NOT NULL,
    -- 'bottle:SLUG', 'operator:NAME' or 'system'
    actor       TEXT NOT NULL,
    bottle_id   INTEGER REFERENCES bottles (id),
    proposal_id TEXT REFERENCES proposals (id),
    grant_id    TEXT REFERENCES grants (id),
    kind        TEXT,
    change      TEXT CHECK (change IS NULL OR json_valid(change)),
    note        TEXT
) STRICT;

INSERT INTO events_new (seq, at, event, actor, bottle_id, proposal_id, grant_id, kind, change, note)
SELECT seq, at, event, actor, bottle_id, proposal_id, grant_id, kind, change, note FROM events;

-- Dropping the old table runs no trigger (SQLite's implicit DELETE of a DROP fires none).
DROP TABLE events;
ALTER TABLE events_new RENAME TO events;

CREATE INDEX events_proposal ON events (proposal_id) WHERE proposal_id IS NOT NULL;
CREATE INDEX events_bottle ON events (bottle_id, seq);
CREATE INDEX events_at ON events (at);

CREATE TRIGGER events_append_only_delete BEFORE DELETE ON events
BEGIN SELECT RAISE(ABORT, 'the audit trail is append-only'); END;
CREATE TRIGGER events_append_only_update BEFORE UPDATE ON events
BEGIN SELECT RAISE(ABORT, 'the audit trail is append-only'); END;

-- The event names this schema knows (the Rust `EventKind`, in the same order).
CREATE TRIGGER events_known_event BEFORE INSERT ON events
WHEN NEW.event NOT IN (
    'proposed', 'repeated', 'approved', 'modified', 'rejected', 'auto-rejected',
    'delivered', 'expired', 'withdrawn', 'grant-expired', 'grant-revoked',
    'bottle-added', 'bottle-updated', 'bottle-removed', 'grant-used')
BEGIN SELECT RAISE(ABORT, 'unknown event name'); END;

-- The event trail with bottle slugs, newest last (as before).
CREATE VIEW audit_log AS
SELECT e.seq, e.at, e.event, e.actor, b.slug AS bottle, e.proposal_id, e.grant_id,
       e.kind, e.change, e.note
FROM events e LEFT JOIN bottles b ON b.id = e.bottle_id
ORDER BY e.seq;
