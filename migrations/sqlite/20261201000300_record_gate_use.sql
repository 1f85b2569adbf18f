-- The git gate's one-shot approvals: `gate_used_at` is when a push through the gate used
-- this approval of exactly (ref, old, new). A separate fact from `archived_at` (the outcome
-- reached the agent): a bottle that polled the decision first can still push once with it,
-- and never twice. Documented in docs/SCHEMA.md.

ALTER TABLE proposals ADD COLUMN gate_used_at TEXT;

-- A one-shot approval the gate has used is no longer in force.
DROP VIEW grants_in_force;
CREATE VIEW grants_in_force AS
SELECT g.id, b.slug AS bottle, g.kind, g.change, g.granted_by, g.created_at, g.expires_at,
       g.proposal_id
FROM grants g JOIN bottles b ON b.id = g.bottle_id
WHERE g.ended_at IS NULL
  AND (g.expires_at IS NULL OR g.expires_at > strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
  AND NOT EXISTS (SELECT 1 FROM proposals u WHERE u.id = g.proposal_id
                  AND u.gate_used_at IS NOT NULL)
ORDER BY g.created_at;
