-- Operators of the review console and its API, how they sign in, and through what each
-- decision was made. A secret (sign-in link, session cookie, API token) is never stored:
-- each table keys it by the SHA-256 of the secret, as lowercase hex.
-- Documented in docs/SCHEMA.md.

-- An operator is removed, never deleted: the trail names operators, and a name removed and
-- added again is another row (its old links, sessions and token stay dead).
CREATE TABLE operators (
    id          INTEGER PRIMARY KEY,
    name        TEXT NOT NULL,
    role        TEXT NOT NULL CHECK (role IN ('viewer', 'approver', 'admin')),
    -- JSON array of bottle slug globs; empty: every bottle
    bottles     TEXT NOT NULL DEFAULT '[]'
                CHECK (json_valid(bottles) AND json_type(bottles) = 'array'),
    created_at  TEXT NOT NULL,
    -- 'operator:NAME' of whoever added it
    created_by  TEXT NOT NULL,
    removed_at  TEXT
) STRICT;

CREATE UNIQUE INDEX operators_live_name ON operators (name) WHERE removed_at IS NULL;

CREATE TRIGGER operators_keep BEFORE DELETE ON operators
BEGIN SELECT RAISE(ABORT, 'operators are removed, not deleted'); END;

-- One-time sign-in links: spent by the first sign-in, dead after expires_at.
CREATE TABLE sign_in_links (
    hash        TEXT PRIMARY KEY,
    operator_id INTEGER NOT NULL REFERENCES operators (id),
    created_at  TEXT NOT NULL,
    expires_at  TEXT NOT NULL,
    spent_at    TEXT
) STRICT;

CREATE INDEX sign_in_links_operator ON sign_in_links (operator_id);

-- Console sessions: the cookie's hash, its CSRF token, idle and absolute limits.
CREATE TABLE sessions (
    hash         TEXT PRIMARY KEY,
    operator_id  INTEGER NOT NULL REFERENCES operators (id),
    csrf         TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    last_seen_at TEXT NOT NULL,
    expires_at   TEXT NOT NULL,
    ended_at     TEXT
) STRICT;

CREATE INDEX sessions_operator ON sessions (operator_id);

-- API tokens: at most one live per operator; a new one ends the old.
CREATE TABLE api_tokens (
    hash         TEXT PRIMARY KEY,
    operator_id  INTEGER NOT NULL REFERENCES operators (id),
    created_at   TEXT NOT NULL,
    last_used_at TEXT,
    ended_at     TEXT
) STRICT;

CREATE UNIQUE INDEX api_tokens_live ON api_tokens (operator_id) WHERE ended_at IS NULL;

-- Through what a decision, and an event, was made (NULL: before this column, or by the
-- system or a bottle).
ALTER TABLE proposals ADD COLUMN decided_via TEXT
    CHECK (decided_via IS NULL OR decided_via IN ('cli', 'console', 'gate'));
ALTER TABLE events ADD COLUMN via TEXT
    CHECK (via IS NULL OR via IN ('cli', 'console', 'gate'));

-- The event names this schema knows (the Rust `EventKind`, in the same order).
DROP TRIGGER events_known_event;
CREATE TRIGGER events_known_event BEFORE INSERT ON events
WHEN NEW.event NOT IN (
    'proposed', 'repeated', 'approved', 'modified', 'rejected', 'auto-rejected',
    'delivered', 'expired', 'withdrawn', 'grant-expired', 'grant-revoked',
    'bottle-added', 'bottle-updated', 'bottle-removed', 'grant-used',
    'operator-added', 'operator-removed', 'signed-in')
BEGIN SELECT RAISE(ABORT, 'unknown event name'); END;

-- The event trail with bottle slugs, newest last, and through what each was done.
DROP VIEW audit_log;
CREATE VIEW audit_log AS
SELECT e.seq, e.at, e.event, e.actor, e.via, b.slug AS bottle, e.proposal_id, e.grant_id,
       e.kind, e.change, e.note
FROM events e LEFT JOIN bottles b ON b.id = e.bottle_id
ORDER BY e.seq;
