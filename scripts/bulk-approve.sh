#!/usr/bin/env bash
# Times `supervise approve --bottle ... --match ...` over N pending proposals of one bottle.
# Usage: scripts/bulk-approve.sh [N] [BIN_DIR]   (defaults: 158, target/release)
# The proposals are filed through a real server (grace 0, no pending cap); the bottle also
# holds N grants in force already, so a per-line reload of its grants would show.
set -euo pipefail
n=${1:-158}
bin=${2:-${CARGO_TARGET_DIR:-target}/release}
dir=$(mktemp -d)
trap 'kill "$server" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$dir"' EXIT
export SUPERVISE_DB="$dir/supervise.db"
"$bin/supervise-server" --listen 127.0.0.1:0 --grace 0 --max-pending-per-bottle 0 \
  --bottle demo=127.0.0.1 2>"$dir/server.log" &
server=$!
port=
for _ in $(seq 100); do
  port=$(sed -n 's/.*listening on http:\/\/127\.0\.0\.1:\([0-9]*\)\/mcp.*/\1/p' "$dir/server.log")
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "$port" ] || { echo "the server did not start:" >&2; cat "$dir/server.log" >&2; exit 1; }
propose() { # $1 = host
  curl -s "http://127.0.0.1:$port/mcp" -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' \
    -d "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"propose-egress\",\"arguments\":{\"host\":\"$1\",\"justification\":\"bench\"}}}" >/dev/null
}
# Grants already in force for the bottle (approved one by one, untimed).
for i in $(seq "$n"); do propose "old$i.example.org"; done
"$bin/supervise" approve --bottle demo --kind egress --match '*.example.org' --color never >/dev/null
for i in $(seq "$n"); do propose "h$i.example.com"; done
start=$(date +%s.%N)
"$bin/supervise" approve --bottle demo --kind egress --match '*.example.com' --for 30m \
  --color never >"$dir/out.txt"
end=$(date +%s.%N)
tail -1 "$dir/out.txt"
echo "bulk approve of $n: $(echo "$end - $start" | bc) s"
