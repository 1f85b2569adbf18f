-- One index entry fewer per filed proposal. `proposals_bottle (bottle_id, created_at)` took
-- an entry for every row ever filed, archived ones included; its readers go through indexes
-- a new proposal does not enter or enters already: an agent's open proposals and its pending
-- egress through `proposals_open` and `proposals_pending_change`, the git gate's unused
-- approvals through the partial index below, written only when a push is approved or
-- modified. Documented in docs/SCHEMA.md.
DROP INDEX proposals_bottle;
CREATE INDEX proposals_gate_unused ON proposals (bottle_id, kind, decided_at)
    WHERE status IN ('approved', 'modified') AND gate_used_at IS NULL;
