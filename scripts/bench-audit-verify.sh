#!/usr/bin/env bash
# `supervise audit verify`'s rate on SQLite: a throwaway database with N chained events
# (written by python3 from docs/SCHEMA.md's canonical form, so the fill is fast and the
# form is checked once more), then `audit verify` pinned to CPU 1, best of 3.
#
# Usage: scripts/bench-audit-verify.sh [N] [SUPERVISE_BIN]  (default: 1000000, target/release/supervise)
set -euo pipefail
cd "$(dirname "$0")/.."

n="${1:-1000000}"
supervise="${2:-${CARGO_TARGET_DIR:-target}/release/supervise}"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
db="$dir/supervise.db"

"$supervise" --db "$db" --as bench bottle add demo --ip 10.9.0.2 > /dev/null
python3 - "$db" "$n" <<'PY'
import hashlib, sqlite3, sys
db, n = sys.argv[1], int(sys.argv[2])
c = sqlite3.connect(db)
prev = c.execute("SELECT hash FROM events ORDER BY seq DESC LIMIT 1").fetchone()[0]
def f(v):
    if v is None: return b"-"
    b = str(v).encode()
    return str(len(b)).encode() + b":" + b
rows = []
for i in range(n):
    r = ("2026-12-02T00:00:00.000Z", "grant-used", "system:squid", None, 1, None, None,
         "egress", '{"host":"a.example.com","port":443}', f"a.example.com:443 #{i}")
    prev = hashlib.sha256(prev.encode() + b"".join(f(v) for v in r)).hexdigest()
    rows.append(r + (prev,))
c.executemany("INSERT INTO events (at, event, actor, via, bottle_id, proposal_id, grant_id, "
              "kind, change, note, hash) VALUES (?,?,?,?,?,?,?,?,?,?,?)", rows)
c.commit()
PY
for _ in 1 2 3; do
    start=$(date +%s.%N)
    taskset -c 1 "$supervise" --db "$db" audit verify > "$dir/out"
    end=$(date +%s.%N)
    python3 -c "import sys; n=int(sys.argv[1]); s=float(sys.argv[3])-float(sys.argv[2]); print(f'{n} events in {s:.2f} s: {n/s:,.0f} events/s')" \
        "$((n + 1))" "$start" "$end"
done
cat "$dir/out"
