-- The git gate's one-shot approvals: `gate_used_at` is when a push through the gate used
-- this approval of exactly (ref, old, new). A separate fact from `archived_at` (the outcome
-- reached the agent): a bottle that polled the decision first can still push once with it,
-- and never twice. Documented in docs/SCHEMA.md.

ALTER TABLE proposals ADD COLUMN gate_used_at TEXT;
