-- What a push through the git gate contains, recorded with the proposal filed for it so a
-- console on another host renders it: the commits, per file paths, status, mode, counts and
-- the unified patch (capped, truncation stated), and the content findings (a matched secret
-- only masked). One row per proposal; `diff` is the store's `PushDiff` as JSON.
-- The `push-accepted` event: an update the gate let through, and what covered it.
-- Documented in docs/SCHEMA.md.

CREATE TABLE push_diffs (
    proposal_id TEXT COLLATE "C" PRIMARY KEY NOT NULL REFERENCES proposals (id),
    created_at  TEXT COLLATE "C" NOT NULL,
    truncated   BIGINT NOT NULL CHECK (truncated IN (0, 1)),
    diff        TEXT COLLATE "C" NOT NULL CHECK (json_valid(diff))
);

CREATE OR REPLACE FUNCTION events_known_event() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.event NOT IN (
        'proposed', 'repeated', 'approved', 'modified', 'rejected', 'auto-rejected',
        'delivered', 'expired', 'withdrawn', 'grant-expired', 'grant-revoked',
        'bottle-added', 'bottle-updated', 'bottle-removed', 'grant-used',
        'operator-added', 'operator-removed', 'signed-in', 'push-accepted') THEN
        RAISE EXCEPTION 'unknown event name';
    END IF;
    RETURN NEW;
END $$;
