-- A proposal filed by a call that asked for a task (the 2026-07-28 tasks extension). The
-- task is a second way to read the proposal's outcome, kept apart from delivery: the
-- proposal's `archived_at` says the outcome reached the agent (after which
-- `check-proposal` says `unknown`), while this row says the outcome stays readable by
-- `tasks/get` until `readable_until` (the task's createdAt + ttlMs; NULL: for as long as
-- the file lives). `cancelled_at`: the agent cancelled the task (`tasks/cancel`) while the
-- proposal was undecided; the proposal itself is then `withdrawn`. One row per proposal;
-- filing the same change again as a task finds the same row. Not part of the audit trail
-- (its events are the proposal's); never deleted. Documented in docs/SCHEMA.md.

CREATE TABLE tasks (
    proposal_id    TEXT PRIMARY KEY REFERENCES proposals (id),
    bottle_id      INTEGER NOT NULL REFERENCES bottles (id),
    created_at     TEXT NOT NULL,
    readable_until TEXT,
    cancelled_at   TEXT
) STRICT;

CREATE TRIGGER tasks_keep BEFORE DELETE ON tasks
BEGIN SELECT RAISE(ABORT, 'tasks are kept for audit'); END;
