#!/usr/bin/env bash
# The Squid helper's lookup rate against one helper process (what one Squid child gets):
# a fresh database with one bottle and 10 grants, N lookups half allowed, half refused,
# piped through `supervise squid-acl` in one go. Usage: scripts/bench-squid-acl.sh [N] [BIN]
set -euo pipefail
n="${1:-20000}"
bin="${2:-target/release/supervise}"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
db="$dir/supervise.db"
"$bin" --db "$db" bottle add a --ip 127.0.0.2 >/dev/null 2>&1
for i in $(seq 1 10); do
    printf '127.0.0.2 host%d.example.test 443\n' "$i" | "$bin" --db "$db" squid-acl --propose-on-deny >/dev/null
done
for id in $("$bin" --db "$db" list --json | sed -n 's/.*"id": "\([^"]*\)".*/\1/p'); do
    "$bin" --db "$db" approve "$id" >/dev/null
done
awk -v n="$n" 'BEGIN { for (i = 0; i < n; i++) printf "%d 127.0.0.2 host%d.example.test 443\n", i % 8, (i % 20) + 1 }' >"$dir/lines"
start=$(date +%s.%N)
"$bin" --db "$db" squid-acl <"$dir/lines" >"$dir/out"
end=$(date +%s.%N)
ok=$(grep -c ' OK$' "$dir/out" || true)
err=$(grep -c ' ERR ' "$dir/out" || true)
awk -v n="$n" -v s="$start" -v e="$end" -v ok="$ok" -v err="$err" \
    'BEGIN { printf "%d lookups (%d OK, %d ERR) in %.2f s: %.0f lookups/s, %.1f us each\n", n, ok, err, e - s, n / (e - s), (e - s) / n * 1e6 }'
