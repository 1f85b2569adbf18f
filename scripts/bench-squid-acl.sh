#!/usr/bin/env bash
# The proxy helpers' lookup rate against one helper process (what one Squid child, or the
# mitmproxy addon, gets): a fresh database with one bottle and 10 grants (the decide run
# adds a GET-only grant under /simple/ for an 11th host), N lookups half allowed, half
# refused, piped through `supervise squid-acl` (or `supervise decide`) in one go.
# Usage: scripts/bench-squid-acl.sh [N] [BIN] [squid-acl|decide]
set -euo pipefail
n="${1:-20000}"
bin="${2:-target/release/supervise}"
helper="${3:-squid-acl}"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
db="$dir/supervise.db"
"$bin" --db "$db" bottle add a --ip 127.0.0.2 >/dev/null 2>&1
for i in $(seq 1 11); do
    printf '127.0.0.2 host%d.example.test 443\n' "$i" | "$bin" --db "$db" squid-acl --propose-on-deny >/dev/null
done
# `list` is oldest first: the i-th proposal is host i's.
i=0
for id in $("$bin" --db "$db" list --json | sed -n 's/.*"id": "\([^"]*\)".*/\1/p'); do
    i=$((i + 1))
    host="host$i.example.test"
    if [ "$host" = host11.example.test ]; then
        "$bin" --db "$db" modify "$id" --change '{"methods": ["GET"], "path_prefix": "/simple/"}' >/dev/null
    elif [ "$host" != host10.example.test ] || [ "$helper" = squid-acl ]; then
        "$bin" --db "$db" approve "$id" >/dev/null
    fi
done
if [ "$helper" = decide ]; then
    # hosts 1-9 unlimited, 11 limited: GET /simple/ passes, POST is refused; 10, 12-20 refused.
    awk -v n="$n" 'BEGIN { for (i = 0; i < n; i++) { h = (i % 20) + 1;
        m = (h == 11 && i % 40 >= 20) ? "POST" : "GET";
        printf "%d 127.0.0.2 host%d.example.test 443 %s /simple/pkg%d/\n", i, h, m, i % 7 } }' >"$dir/lines"
else
    awk -v n="$n" 'BEGIN { for (i = 0; i < n; i++) printf "%d 127.0.0.2 host%d.example.test 443\n", i % 8, (i % 20) + 1 }' >"$dir/lines"
fi
start=$(date +%s.%N)
TIMEFORMAT='%U %S'
{ time "$bin" --db "$db" "$helper" <"$dir/lines" >"$dir/out" 2>/dev/null; } 2>"$dir/cpu"
end=$(date +%s.%N)
cpu=$(awk '{ print $1 + $2 }' "$dir/cpu")
ok=$(grep -c ' OK\( \|$\)' "$dir/out" || true)
err=$(grep -c ' ERR ' "$dir/out" || true)
awk -v n="$n" -v s="$start" -v e="$end" -v ok="$ok" -v err="$err" -v h="$helper" -v c="$cpu" \
    'BEGIN { printf "%s: %d lookups (%d OK, %d ERR) in %.2f s: %.0f lookups/s, %.1f us each; CPU %.2f s (%.1f us each, start-up included)\n", h, n, ok, err, e - s, n / (e - s), (e - s) / n * 1e6, c, c / n * 1e6 }'
