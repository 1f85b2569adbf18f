-- Bottles belong to a host (the server's `--host-id`, default the machine's hostname), so
-- one PostgreSQL database can serve a fleet in which two hosts reuse the same slugs and
-- addresses. A SQLite file is one host's, and records it too, so both schemas say the same:
-- `meta.host` is the host the file was first opened by, the default host id of every later
-- store on it, and rows from before this column are that host's (the store fills both in
-- when it first opens the file, since SQL cannot know the hostname).
-- Documented in docs/SCHEMA.md.

ALTER TABLE bottles ADD COLUMN host TEXT NOT NULL DEFAULT '';

DROP INDEX bottles_live_slug;
DROP INDEX bottles_live_ip;
CREATE UNIQUE INDEX bottles_live_slug ON bottles (host, slug) WHERE removed_at IS NULL;
CREATE UNIQUE INDEX bottles_live_ip ON bottles (host, ip) WHERE removed_at IS NULL;

DROP VIEW pending_proposals;
CREATE VIEW pending_proposals AS
SELECT p.id, b.host, b.slug AS bottle, p.kind, p.change, p.justification, p.flags, p.hits,
       p.created_at, p.expires_at
FROM proposals p JOIN bottles b ON b.id = p.bottle_id
WHERE p.status = 'pending'
  AND (p.expires_at IS NULL OR p.expires_at > strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
ORDER BY p.created_at;

DROP VIEW audit_log;
CREATE VIEW audit_log AS
SELECT e.seq, e.at, e.event, e.actor, e.via, b.host, b.slug AS bottle, e.proposal_id,
       e.grant_id, e.kind, e.change, e.note
FROM events e LEFT JOIN bottles b ON b.id = e.bottle_id
ORDER BY e.seq;

DROP VIEW grants_in_force;
CREATE VIEW grants_in_force AS
SELECT g.id, b.host, b.slug AS bottle, g.kind, g.change, g.granted_by, g.created_at,
       g.expires_at, g.proposal_id
FROM grants g JOIN bottles b ON b.id = g.bottle_id
WHERE g.ended_at IS NULL
  AND (g.expires_at IS NULL OR g.expires_at > strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
  AND NOT EXISTS (SELECT 1 FROM proposals u WHERE u.id = g.proposal_id
                  AND u.gate_used_at IS NOT NULL)
ORDER BY g.created_at;
