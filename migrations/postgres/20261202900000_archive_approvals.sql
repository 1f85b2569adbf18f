-- `audit archive` moves a proposal's approvals and recorded push content with it: like the
-- trail's other tables, approvals may leave only inside its transaction (with
-- `supervise.trail_unlock` set locally). They are still never updated or truncated.
-- Documented in docs/SCHEMA.md.
DROP TRIGGER approvals_keep ON approvals;
CREATE TRIGGER approvals_keep BEFORE DELETE ON approvals
    FOR EACH ROW EXECUTE FUNCTION supervise_refuse_locked('approvals are kept for audit');
CREATE TRIGGER approvals_fixed BEFORE UPDATE ON approvals
    FOR EACH ROW EXECUTE FUNCTION supervise_refuse('approvals are kept for audit');
