-- The hash chain over the audit trail, and the one way rows leave it (`audit archive`).
-- Documented in docs/SCHEMA.md ("The hash chain").
--
-- `trail_genesis` holds the chain's starting value: 32 random bytes as lowercase hex,
-- drawn once when this migration runs (when the database is created, or first opened by a
-- build that chains). It never changes.
CREATE TABLE trail_genesis (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    hash       TEXT NOT NULL CHECK (length(hash) = 64),
    created_at TEXT NOT NULL
) STRICT;
INSERT INTO trail_genesis (id, hash, created_at)
VALUES (1, lower(hex(randomblob(32))), strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));
CREATE TRIGGER trail_genesis_keep_update BEFORE UPDATE ON trail_genesis
BEGIN SELECT RAISE(ABORT, 'the chain''s genesis never changes'); END;
CREATE TRIGGER trail_genesis_keep_delete BEFORE DELETE ON trail_genesis
BEGIN SELECT RAISE(ABORT, 'the chain''s genesis never changes'); END;

-- A row here exists only inside the transaction of `audit archive` (and of the one-time
-- hashing of rows older than the chain, at open): the append-only triggers let rows leave
-- or be hashed only while it is there, and the transaction deletes it before it commits.
CREATE TABLE trail_unlock (
    id INTEGER PRIMARY KEY CHECK (id = 1)
) STRICT;

-- Each event's link in the chain: lowercase hex SHA-256 (docs/SCHEMA.md gives the form).
-- NULL only on rows written before the chain, until the store hashes them at open.
ALTER TABLE events ADD COLUMN hash TEXT;
CREATE TRIGGER events_hashed BEFORE INSERT ON events WHEN NEW.hash IS NULL
BEGIN SELECT RAISE(ABORT, 'an event is written with its hash'); END;
CREATE INDEX events_archived ON events (seq) WHERE event = 'archived-trail';

DROP TRIGGER events_append_only_delete;
CREATE TRIGGER events_append_only_delete BEFORE DELETE ON events
WHEN NOT EXISTS (SELECT 1 FROM trail_unlock)
BEGIN SELECT RAISE(ABORT, 'the audit trail is append-only'); END;
DROP TRIGGER events_append_only_update;
CREATE TRIGGER events_append_only_update BEFORE UPDATE ON events
WHEN NOT EXISTS (SELECT 1 FROM trail_unlock)
BEGIN SELECT RAISE(ABORT, 'the audit trail is append-only'); END;
DROP TRIGGER proposals_keep;
CREATE TRIGGER proposals_keep BEFORE DELETE ON proposals
WHEN NOT EXISTS (SELECT 1 FROM trail_unlock)
BEGIN SELECT RAISE(ABORT, 'proposals are kept for audit'); END;
DROP TRIGGER grants_keep;
CREATE TRIGGER grants_keep BEFORE DELETE ON grants
WHEN NOT EXISTS (SELECT 1 FROM trail_unlock)
BEGIN SELECT RAISE(ABORT, 'grants are kept for audit'); END;
DROP TRIGGER tasks_keep;
CREATE TRIGGER tasks_keep BEFORE DELETE ON tasks
WHEN NOT EXISTS (SELECT 1 FROM trail_unlock)
BEGIN SELECT RAISE(ABORT, 'tasks are kept for audit'); END;

-- The event names this schema knows: every name SPEC lists, `archived-trail` included.
DROP TRIGGER events_known_event;
CREATE TRIGGER events_known_event BEFORE INSERT ON events
WHEN NEW.event NOT IN (
    'proposed', 'repeated', 'approved', 'modified', 'rejected', 'auto-rejected',
    'delivered', 'expired', 'withdrawn', 'grant-expired', 'grant-revoked',
    'bottle-added', 'bottle-updated', 'bottle-removed', 'grant-used',
    'operator-added', 'operator-removed', 'signed-in', 'push-accepted',
    'approval-added', 'rules-changed', 'rule-matched', 'archived-trail')
BEGIN SELECT RAISE(ABORT, 'unknown event name'); END;
