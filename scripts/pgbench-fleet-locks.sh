#!/usr/bin/env bash
# What each way of serialising PostgreSQL writers costs, modelled with pgbench: one write
# is a proposal row and its event, one commit (docs/ARCHITECTURE.md, "Writers of different
# hosts in parallel"; figures in docs/PERFORMANCE.md, "Fleet-wide writes"). Each client is
# a host (its own host lock, `:client_id`). Models:
#   raw        the bench's one-row INSERT (`baseline-pg`), no lock
#   lock       the store's write lock, held through "COMMIT;" (what runs)
#   section    per-host locks, the fleet-wide lock only from the event insert to COMMIT
#   sequencer  per-host locks, events queued; then a pass under the fleet lock moves the
#              queue into `events` (every write waits for the lock)
#   combine    the same, but a writer that misses the lock waits for the holder's pass
#   fastpath   combine, and a writer that gets the lock before its event inserts directly
#   nolock     per-host locks, events inserted directly: skips and forks; an upper bound
#
#   scripts/pgbench-fleet-locks.sh ADMIN_URL [SECONDS] [CLIENTS...]
#   scripts/pgbench-fleet-locks.sh postgres://postgres@127.0.0.1:5432/postgres 8 1 8
#
# Needs a cluster with fsync=on and synchronous_commit=on (the bench's settings) to mean
# anything; creates and drops the database `fleet_locks`.
set -euo pipefail
admin=$1 secs=${2:-8}
shift $(( $# < 2 ? $# : 2 ))
clients=("$@")
[ ${#clients[@]} -eq 0 ] && clients=(1 8)
db=${admin%/*}/fleet_locks
dir=$(mktemp -d)
trap 'rm -rf "$dir"; psql -q "$admin" -c "DROP DATABASE IF EXISTS fleet_locks" >/dev/null' EXIT
psql -q "$admin" -c "DROP DATABASE IF EXISTS fleet_locks" -c "CREATE DATABASE fleet_locks"
row="'egress', '{\"host\":\"m.example\"}', '{\"host\":\"m.example\"}', 'load', 'pending', '[]', 0, '2026-12-01T00:00:00.000Z'"
cols="id TEXT COLLATE \"C\" PRIMARY KEY, bottle_id BIGINT NOT NULL, kind TEXT NOT NULL, change TEXT NOT NULL, change_key TEXT NOT NULL, justification TEXT NOT NULL, status TEXT NOT NULL, flags TEXT NOT NULL, hits BIGINT NOT NULL, created_at TEXT NOT NULL"
psql -q "$db" <<SQL
CREATE TABLE one ($cols);
CREATE TABLE props ($cols);
CREATE TABLE events (seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, at TEXT NOT NULL,
    event TEXT NOT NULL, actor TEXT NOT NULL, proposal_id TEXT, change TEXT, hash TEXT NOT NULL);
CREATE TABLE event_queue (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, at TEXT NOT NULL,
    event TEXT NOT NULL, actor TEXT NOT NULL, proposal_id TEXT, change TEXT);
SQL
fleet="SELECT pg_advisory_xact_lock(8319679467651230067);"
host="SELECT pg_advisory_xact_lock(29, :client_id);"
prop="INSERT INTO props VALUES (gen_random_uuid()::text, 1, $row);"
direct="INSERT INTO events (at, event, actor, proposal_id, change, hash) SELECT '2026-12-01T00:00:00.000Z', 'proposed', 'bottle-x', 'p', '{\"host\":\"m.example\"}', md5(COALESCE((SELECT hash FROM events ORDER BY seq DESC LIMIT 1), 'g'));"
queued="INSERT INTO event_queue (at, event, actor, proposal_id, change) VALUES ('2026-12-01T00:00:00.000Z', 'proposed', 'bottle-x', 'p', '{\"host\":\"m.example\"}');"
pass="WITH moved AS (DELETE FROM event_queue RETURNING *) INSERT INTO events (at, event, actor, proposal_id, change, hash) SELECT at, event, actor, proposal_id, change, md5(id::text) FROM moved ORDER BY id;"
try_pass="SELECT pg_try_advisory_xact_lock(8319679467651230067) AS got \\gset
\\if :got
$pass
\\else
SELECT pg_advisory_xact_lock_shared(8319679467651230067);
\\endif"
printf '%s\n' "INSERT INTO one VALUES (gen_random_uuid()::text, 1, $row);" > "$dir/raw.sql"
printf '%s\n' "BEGIN;" "$fleet" "$prop" "$direct" "COMMIT;" > "$dir/lock.sql"
printf '%s\n' "BEGIN;" "$host" "$prop" "$fleet" "$direct" "COMMIT;" > "$dir/section.sql"
printf '%s\n' "BEGIN;" "$host" "$prop" "$queued" "COMMIT;" "BEGIN;" "$fleet" "$pass" "COMMIT;" > "$dir/sequencer.sql"
printf '%s\n' "BEGIN;" "$host" "$prop" "$queued" "COMMIT;" "BEGIN;" "$try_pass" "COMMIT;" > "$dir/combine.sql"
printf '%s\n' "BEGIN;" "$host" "$prop" \
    "SELECT pg_try_advisory_xact_lock(8319679467651230067) AS direct \\gset" '\if :direct' \
    "$direct" "COMMIT;" '\else' "$queued" "COMMIT;" "BEGIN;" "$try_pass" "COMMIT;" '\endif' > "$dir/fastpath.sql"
printf '%s\n' "BEGIN;" "$host" "$prop" "$direct" "COMMIT;" > "$dir/nolock.sql"
for model in raw lock section sequencer combine fastpath nolock; do
    for c in "${clients[@]}"; do
        tps=$(pgbench -n -M prepared -c "$c" -j "$(( c < 2 ? 1 : 2 ))" -T "$secs" \
            -f "$dir/$model.sql" "$db" 2>&1 | sed -n 's/^tps = \([0-9.]*\).*/\1/p')
        printf '%-10s -c %-3s %8.1f tps\n' "$model" "$c" "${tps:-0}"
    done
done
