-- Less work per filed proposal: one index entry fewer, and no temporary B-tree per event.
--
-- One index entry fewer per filed proposal. `proposals_bottle (bottle_id, created_at)` took
-- an entry for every row ever filed, archived ones included; its readers go through indexes
-- a new proposal does not enter or enters already: an agent's open proposals and its pending
-- egress through `proposals_open` and `proposals_pending_change`, the git gate's unused
-- approvals through the partial index below, written only when a push is approved or
-- modified. Documented in docs/SCHEMA.md.
DROP INDEX proposals_bottle;
CREATE INDEX proposals_gate_unused ON proposals (bottle_id, kind, decided_at)
    WHERE status IN ('approved', 'modified') AND gate_used_at IS NULL;

-- The event names this schema knows, as one comparison after another, the most written first
-- (a `proposed` event is told apart by one): SQLite evaluates `NOT IN (list)` by building a
-- temporary B-tree of the whole list, on every row inserted. The names are those of
-- 20261202800000_chain_trail.sql; a new name is a DROP TRIGGER and a CREATE TRIGGER in this
-- form.
DROP TRIGGER events_known_event;
CREATE TRIGGER events_known_event BEFORE INSERT ON events
WHEN NEW.event <> 'proposed'
    AND NEW.event <> 'delivered'
    AND NEW.event <> 'approved'
    AND NEW.event <> 'repeated'
    AND NEW.event <> 'grant-used'
    AND NEW.event <> 'modified'
    AND NEW.event <> 'rejected'
    AND NEW.event <> 'auto-rejected'
    AND NEW.event <> 'expired'
    AND NEW.event <> 'withdrawn'
    AND NEW.event <> 'grant-expired'
    AND NEW.event <> 'grant-revoked'
    AND NEW.event <> 'rule-matched'
    AND NEW.event <> 'approval-added'
    AND NEW.event <> 'push-accepted'
    AND NEW.event <> 'bottle-added'
    AND NEW.event <> 'bottle-updated'
    AND NEW.event <> 'bottle-removed'
    AND NEW.event <> 'operator-added'
    AND NEW.event <> 'operator-removed'
    AND NEW.event <> 'signed-in'
    AND NEW.event <> 'rules-changed'
    AND NEW.event <> 'archived-trail'
BEGIN SELECT RAISE(ABORT, 'unknown event name'); END;
