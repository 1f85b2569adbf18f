#!/usr/bin/env bash
# Fuzzes the console's JSON API from its own OpenAPI document with schemathesis (PyPI,
# pinned, in a virtual environment under target/): a console on a throwaway database
# with a few real proposals (filed through the real MCP server), an admin's bearer token,
# and every operation of /api/v1/openapi.json. Passes when no answer is a 5xx and every
# answer matches the document (status code, content type, schema).
#
# Usage: scripts/api_schemathesis.sh [SUPERVISE_BIN SERVER_BIN]  (default: target/debug/...)
set -euo pipefail
cd "$(dirname "$0")/.."

target="${CARGO_TARGET_DIR:-target}"
supervise="${1:-$target/debug/supervise}"
server="${2:-$target/debug/supervise-server}"
version=4.32.5
venv="$target/py-schemathesis"

[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -m pip show schemathesis 2>/dev/null | grep -q "^Version: $version$" \
    || "$venv/bin/pip" install -q "schemathesis==$version"

work="$(mktemp -d)"
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

db="$work/supervise.db"
"$supervise" --db "$db" bottle add demo --ip 127.0.0.1 >/dev/null
"$supervise" --db "$db" --as ci operator add fuzz --role admin >/dev/null
token="$("$supervise" --db "$db" --as ci operator token fuzz | grep -oE 'sv_[A-Za-z0-9_-]+' | head -1)"
[ -n "$token" ] || { echo "no API token printed" >&2; exit 1; }

# A few proposals, filed the way an agent files them.
mcp_port="$(free_port)"
"$server" --db "$db" --listen "127.0.0.1:$mcp_port" --grace 0 >"$work/server.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do
    curl -fsS "http://127.0.0.1:$mcp_port/healthz" >/dev/null 2>&1 && break
    sleep 0.1
done
for host in pypi.org crates.io 10.0.0.5; do
    curl -fsS "http://127.0.0.1:$mcp_port/mcp" \
        -H 'content-type: application/json' -H 'accept: application/json, text/event-stream' \
        -H 'mcp-protocol-version: 2025-06-18' \
        -d "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"propose-egress\",\"arguments\":{\"host\":\"$host\",\"justification\":\"schemathesis fixture\"}}}" \
        >/dev/null
done

port="$(free_port)"
"$supervise" --db "$db" console --listen "127.0.0.1:$port" >"$work/console.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do
    grep -q "listening on" "$work/console.log" 2>/dev/null && break
    sleep 0.1
done

"$venv/bin/schemathesis" run "http://127.0.0.1:$port/api/v1/openapi.json" \
    --url "http://127.0.0.1:$port" \
    --header "Authorization: Bearer $token" \
    --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance \
    --phases examples,coverage,fuzzing \
    --max-examples 40 \
    --seed 7 \
    --no-color
