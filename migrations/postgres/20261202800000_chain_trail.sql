-- The hash chain over the audit trail, and the one way rows leave it (`audit archive`).
-- See the SQLite migration; documented in docs/SCHEMA.md ("The hash chain").
CREATE TABLE trail_genesis (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    hash       TEXT COLLATE "C" NOT NULL CHECK (length(hash) = 64),
    created_at TEXT COLLATE "C" NOT NULL
);
INSERT INTO trail_genesis (id, hash, created_at)
VALUES (1, encode(sha256(convert_to(gen_random_uuid()::text || gen_random_uuid()::text
                                    || clock_timestamp()::text, 'UTF8')), 'hex'),
        to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'));
CREATE TRIGGER trail_genesis_keep_update BEFORE UPDATE ON trail_genesis
    FOR EACH ROW EXECUTE FUNCTION supervise_refuse('the chain''s genesis never changes');
CREATE TRIGGER trail_genesis_keep_delete BEFORE DELETE ON trail_genesis
    FOR EACH ROW EXECUTE FUNCTION supervise_refuse('the chain''s genesis never changes');
CREATE TRIGGER trail_genesis_keep_truncate BEFORE TRUNCATE ON trail_genesis
    FOR EACH STATEMENT EXECUTE FUNCTION supervise_refuse('the chain''s genesis never changes');

-- The append-only triggers let rows leave (or be hashed) only inside a transaction that
-- set `supervise.trail_unlock` to 'on' with SET LOCAL: `audit archive`, and the one-time
-- hashing of rows older than the chain at open. It ends with the transaction.
CREATE FUNCTION supervise_refuse_locked() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF coalesce(current_setting('supervise.trail_unlock', true), '') = 'on' THEN
        IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;
        RETURN NEW;
    END IF;
    RAISE EXCEPTION '%', TG_ARGV[0];
END $$;

ALTER TABLE events ADD COLUMN hash TEXT COLLATE "C";
CREATE FUNCTION events_hashed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.hash IS NULL THEN
        RAISE EXCEPTION 'an event is written with its hash';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER events_hashed BEFORE INSERT ON events
    FOR EACH ROW EXECUTE FUNCTION events_hashed();
CREATE INDEX events_archived ON events (seq) WHERE event = 'archived-trail';

DROP TRIGGER events_append_only_delete ON events;
CREATE TRIGGER events_append_only_delete BEFORE DELETE ON events
    FOR EACH ROW EXECUTE FUNCTION supervise_refuse_locked('the audit trail is append-only');
DROP TRIGGER events_append_only_update ON events;
CREATE TRIGGER events_append_only_update BEFORE UPDATE ON events
    FOR EACH ROW EXECUTE FUNCTION supervise_refuse_locked('the audit trail is append-only');
DROP TRIGGER proposals_keep ON proposals;
CREATE TRIGGER proposals_keep BEFORE DELETE ON proposals
    FOR EACH ROW EXECUTE FUNCTION supervise_refuse_locked('proposals are kept for audit');
DROP TRIGGER grants_keep ON grants;
CREATE TRIGGER grants_keep BEFORE DELETE ON grants
    FOR EACH ROW EXECUTE FUNCTION supervise_refuse_locked('grants are kept for audit');
DROP TRIGGER tasks_keep ON tasks;
CREATE TRIGGER tasks_keep BEFORE DELETE ON tasks
    FOR EACH ROW EXECUTE FUNCTION supervise_refuse_locked('tasks are kept for audit');

-- The event names this schema knows: every name SPEC lists, `archived-trail` included.
CREATE OR REPLACE FUNCTION events_known_event() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.event NOT IN (
        'proposed', 'repeated', 'approved', 'modified', 'rejected', 'auto-rejected',
        'delivered', 'expired', 'withdrawn', 'grant-expired', 'grant-revoked',
        'bottle-added', 'bottle-updated', 'bottle-removed', 'grant-used',
        'operator-added', 'operator-removed', 'signed-in', 'push-accepted',
        'approval-added', 'rules-changed', 'rule-matched', 'archived-trail') THEN
        RAISE EXCEPTION 'unknown event name';
    END IF;
    RETURN NEW;
END $$;
