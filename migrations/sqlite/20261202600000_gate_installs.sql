-- Every `supervise gate install`: the hook it wrote, per host (a hook is a file on that
-- host), so `supervise doctor` checks that each is still there, still runs an existing
-- binary and holds no secret. Installing again over the same hook replaces its row.
CREATE TABLE gate_installs (
    host         TEXT NOT NULL,
    hook         TEXT NOT NULL,
    bottle       TEXT NOT NULL,
    remote       TEXT NOT NULL,
    installed_at TEXT NOT NULL,
    PRIMARY KEY (host, hook)
);
