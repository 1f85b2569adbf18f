-- What each host's server applies, recorded at its start so the other processes on that
-- host (the egress proxy's helpers, the git gate) apply the same: its `--reject-cooldown`,
-- in milliseconds, 0 when off. One row per host id (a fleet shares one database, each
-- host's server may run with its own flags); a host whose server never started has none.
CREATE TABLE host_settings (
    host               TEXT NOT NULL PRIMARY KEY,
    reject_cooldown_ms BIGINT NOT NULL CHECK (reject_cooldown_ms >= 0),
    recorded_at        TEXT NOT NULL
);
