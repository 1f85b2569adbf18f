-- `audit archive` moves a proposal's approvals and recorded push content with it: like the
-- trail's other tables, approvals may leave only inside its transaction (while the
-- `trail_unlock` row exists). They are still never updated. Documented in docs/SCHEMA.md.
DROP TRIGGER approvals_keep;
CREATE TRIGGER approvals_keep BEFORE DELETE ON approvals
WHEN NOT EXISTS (SELECT 1 FROM trail_unlock)
BEGIN SELECT RAISE(ABORT, 'approvals are kept for audit'); END;
