-- The whole supervise schema: bottles, proposals, grants, the append-only event log,
-- and the views an auditor reads with sqlite3. Documented in docs/SCHEMA.md.
-- Times are UTC RFC 3339 text with milliseconds ('2026-11-30T12:00:00.000Z'), so text
-- comparison orders them; ids are UUIDv7 text (unguessable, time-ordered).

-- Marks the file as a supervise database; open() refuses files without it.
CREATE TABLE meta (
    key   TEXT PRIMARY KEY NOT NULL,
    value TEXT NOT NULL
) STRICT;
INSERT INTO meta (key, value) VALUES ('application', 'supervise');

-- One row per bottle *generation*: removing a bottle sets removed_at, and adding the same
-- slug again makes a new row (new id), so a re-added bottle never sees old proposals.
CREATE TABLE bottles (
    id         INTEGER PRIMARY KEY,
    slug       TEXT NOT NULL CHECK (length(slug) BETWEEN 1 AND 63),
    ip         TEXT NOT NULL,
    created_at TEXT NOT NULL,
    removed_at TEXT
) STRICT;
CREATE UNIQUE INDEX bottles_live_slug ON bottles (slug) WHERE removed_at IS NULL;
CREATE UNIQUE INDEX bottles_live_ip ON bottles (ip) WHERE removed_at IS NULL;

CREATE TABLE proposals (
    id              TEXT PRIMARY KEY NOT NULL,
    bottle_id       INTEGER NOT NULL REFERENCES bottles (id),
    kind            TEXT NOT NULL CHECK (kind IN ('egress', 'git-push')),
    -- the normalised change as JSON, e.g. {"host":"example.com","port":443}
    change          TEXT NOT NULL CHECK (json_valid(change)),
    -- canonical text of the change, for spotting identical re-proposals
    change_key      TEXT NOT NULL,
    justification   TEXT NOT NULL,
    status          TEXT NOT NULL DEFAULT 'pending' CHECK (status IN
                        ('pending', 'approved', 'modified', 'rejected', 'expired', 'withdrawn')),
    -- risk flags of the proposed change, JSON array of short names
    flags           TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(flags)),
    -- times this change was asked for: 1 when filed, +1 per coalesced repeat or cooldown hit
    hits            INTEGER NOT NULL DEFAULT 1,
    created_at      TEXT NOT NULL,
    -- when an undecided proposal stops being pending (NULL: never)
    expires_at      TEXT,
    decided_at      TEXT,
    decided_by      TEXT,
    decision_note   TEXT,
    -- the change granted (approve: as proposed; modify: the operator's); NULL for reject
    decision_change TEXT CHECK (decision_change IS NULL OR json_valid(decision_change)),
    -- set when the outcome reached the agent (or can no longer reach it): terminal
    archived_at     TEXT,
    CHECK ((status = 'pending') = (decided_at IS NULL) OR status IN ('expired', 'withdrawn'))
) STRICT;
-- At most one undecided proposal per bottle and change: the dedupe rule, enforced.
CREATE UNIQUE INDEX proposals_pending_change ON proposals (bottle_id, kind, change_key)
    WHERE status = 'pending';
-- The operator's queue and the agents' lists only ever scan unarchived rows.
CREATE INDEX proposals_open ON proposals (bottle_id, created_at) WHERE archived_at IS NULL;
CREATE INDEX proposals_open_status ON proposals (status, created_at) WHERE archived_at IS NULL;
-- Rejection cooldown lookups.
CREATE INDEX proposals_rejected_change ON proposals (bottle_id, kind, change_key, decided_at)
    WHERE status = 'rejected';
CREATE INDEX proposals_bottle ON proposals (bottle_id, created_at);

-- The policy in force: one row per approve/modify. In force while ended_at IS NULL and
-- (expires_at IS NULL OR expires_at > now).
CREATE TABLE grants (
    id          TEXT PRIMARY KEY NOT NULL,
    bottle_id   INTEGER NOT NULL REFERENCES bottles (id),
    proposal_id TEXT NOT NULL UNIQUE REFERENCES proposals (id),
    kind        TEXT NOT NULL CHECK (kind IN ('egress', 'git-push')),
    change      TEXT NOT NULL CHECK (json_valid(change)),
    granted_by  TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    expires_at  TEXT,
    ended_at    TEXT,
    end_reason  TEXT CHECK (end_reason IN ('revoked', 'expired', 'bottle-removed')),
    ended_by    TEXT,
    CHECK ((ended_at IS NULL) = (end_reason IS NULL))
) STRICT;
CREATE INDEX grants_live ON grants (bottle_id, created_at) WHERE ended_at IS NULL;
CREATE INDEX grants_expiring ON grants (expires_at) WHERE ended_at IS NULL AND expires_at IS NOT NULL;

-- The audit trail and the change feed: append-only, seq is monotonic.
CREATE TABLE events (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    at          TEXT NOT NULL,
    event       TEXT NOT NULL CHECK (event IN (
                    'proposed', 'repeated', 'approved', 'modified', 'rejected', 'auto-rejected',
                    'delivered', 'expired', 'withdrawn', 'grant-expired', 'grant-revoked',
                    'bottle-added', 'bottle-updated', 'bottle-removed')),
    -- 'bottle:SLUG', 'operator:NAME' or 'system'
    actor       TEXT NOT NULL,
    bottle_id   INTEGER REFERENCES bottles (id),
    proposal_id TEXT REFERENCES proposals (id),
    grant_id    TEXT REFERENCES grants (id),
    kind        TEXT,
    change      TEXT CHECK (change IS NULL OR json_valid(change)),
    note        TEXT
) STRICT;
CREATE INDEX events_proposal ON events (proposal_id) WHERE proposal_id IS NOT NULL;
CREATE INDEX events_bottle ON events (bottle_id, seq);
CREATE INDEX events_at ON events (at);

-- Normal operation never deletes: make it impossible by accident too.
CREATE TRIGGER events_append_only_delete BEFORE DELETE ON events
BEGIN SELECT RAISE(ABORT, 'the audit trail is append-only'); END;
CREATE TRIGGER events_append_only_update BEFORE UPDATE ON events
BEGIN SELECT RAISE(ABORT, 'the audit trail is append-only'); END;
CREATE TRIGGER proposals_keep BEFORE DELETE ON proposals
BEGIN SELECT RAISE(ABORT, 'proposals are kept for audit'); END;
CREATE TRIGGER grants_keep BEFORE DELETE ON grants
BEGIN SELECT RAISE(ABORT, 'grants are kept for audit'); END;

-- What the operator has to decide now (undecided and not past its expiry).
CREATE VIEW pending_proposals AS
SELECT p.id, b.slug AS bottle, p.kind, p.change, p.justification, p.flags, p.hits,
       p.created_at, p.expires_at
FROM proposals p JOIN bottles b ON b.id = p.bottle_id
WHERE p.status = 'pending'
  AND (p.expires_at IS NULL OR p.expires_at > strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
ORDER BY p.created_at;

-- The event trail with bottle slugs, newest last.
CREATE VIEW audit_log AS
SELECT e.seq, e.at, e.event, e.actor, b.slug AS bottle, e.proposal_id, e.grant_id,
       e.kind, e.change, e.note
FROM events e LEFT JOIN bottles b ON b.id = e.bottle_id
ORDER BY e.seq;

-- Grants in force now, with their bottle.
CREATE VIEW grants_in_force AS
SELECT g.id, b.slug AS bottle, g.kind, g.change, g.granted_by, g.created_at, g.expires_at,
       g.proposal_id
FROM grants g JOIN bottles b ON b.id = g.bottle_id
WHERE g.ended_at IS NULL
  AND (g.expires_at IS NULL OR g.expires_at > strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
ORDER BY g.created_at;
