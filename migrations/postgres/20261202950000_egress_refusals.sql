-- What the egress proxy's helpers refused, per bottle and destination, so the operator
-- deciding an egress proposal sees how often the bottle tried: the number of refusals
-- recorded (at most one a minute per bottle and destination) and when.
CREATE TABLE egress_refusals (
    bottle_id  BIGINT NOT NULL REFERENCES bottles (id),
    host       TEXT NOT NULL,
    port       INTEGER NOT NULL CHECK (port BETWEEN 1 AND 65535),
    count      BIGINT NOT NULL CHECK (count >= 1),
    first_seen TEXT NOT NULL,
    last_seen  TEXT NOT NULL,
    PRIMARY KEY (bottle_id, host, port)
);
