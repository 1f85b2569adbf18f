#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance) against a real
# supervise-server: the scenarios that apply to a server without the suite's own fixture
# tools. Needs Node 22+; when `node` is older, Node 22 is installed from npm (the `node`
# package) into the work directory. Nothing is installed globally.
#
#   scripts/conformance.sh            # build (debug) and run everything
#   PROFILE=release scripts/conformance.sh
#   WORK=/tmp/conf scripts/conformance.sh
#
# Exit status: 0 when every scenario passed, apart from the checks listed in
# scripts/conformance-expected-failures.yml (they need the suite's own fixture tools); 1
# otherwise. Results land in $WORK/results/.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
# Cargo's target directory: CARGO_TARGET_DIR when set (relative to the workspace), else target/.
TARGET="${CARGO_TARGET_DIR:-target}"
case "$TARGET" in /*) ;; *) TARGET="$ROOT/$TARGET" ;; esac
WORK="${WORK:-$TARGET/conformance}"
PROFILE="${PROFILE:-debug}"
V01="${CONFORMANCE_V01:-0.1.16}"
V02="${CONFORMANCE_V02:-0.2.0-alpha.12}"
mkdir -p "$WORK"

log() { printf '== %s\n' "$*" >&2; }

# --- Node 22 --------------------------------------------------------------------------------
NODE=node
major() { "$1" --version 2>/dev/null | sed -E 's/^v([0-9]+).*/\1/'; }
if [ "$(major node || echo 0)" -lt 22 ] 2>/dev/null || ! command -v node >/dev/null; then
  if [ ! -x "$WORK/node22/node_modules/.bin/node" ]; then
    log "installing Node 22 from npm into $WORK/node22"
    mkdir -p "$WORK/node22"
    (cd "$WORK/node22" && npm install --no-audit --no-fund --silent node@22 >/dev/null)
  fi
  NODE="$WORK/node22/node_modules/.bin/node"
fi
log "node $("$NODE" --version)"

# --- the suite, both lines ------------------------------------------------------------------
install_suite() { # dir version
  if [ ! -f "$WORK/$1/node_modules/@modelcontextprotocol/conformance/package.json" ] ||
     ! grep -q "\"version\": \"$2\"" "$WORK/$1/node_modules/@modelcontextprotocol/conformance/package.json"; then
    log "installing @modelcontextprotocol/conformance@$2"
    mkdir -p "$WORK/$1"
    (cd "$WORK/$1" && npm install --no-audit --no-fund --silent "@modelcontextprotocol/conformance@$2" >/dev/null)
  fi
}
install_suite c01 "$V01"
install_suite c02 "$V02"

# --- the server -----------------------------------------------------------------------------
if [ "$PROFILE" = release ]; then
  (cd "$ROOT" && cargo build --release -p supervise-server >&2)
else
  (cd "$ROOT" && cargo build -p supervise-server >&2)
fi
BIN="$TARGET/$PROFILE/supervise-server"
# SUPERVISE_CONFORMANCE_DB: another database (e.g. a fresh postgres:// one, as .ci/run gives).
DB="${SUPERVISE_CONFORMANCE_DB:-$WORK/conformance.db}"
case "$DB" in
  postgres://*|postgresql://*) log "server database: PostgreSQL" ;;
  *) rm -f "$DB" "$DB-wal" "$DB-shm" ;;
esac
SERVER_LOG="$WORK/server.log"
"$BIN" --db "$DB" --listen 127.0.0.1:0 --bottle conformance=127.0.0.1 --grace 0 >"$SERVER_LOG" 2>&1 &
SERVER_PID=$!
trap 'kill -TERM $SERVER_PID 2>/dev/null || true; wait $SERVER_PID 2>/dev/null || true' EXIT
ADDR=""
for _ in $(seq 1 200); do
  ADDR="$(grep -o 'listening on http://[0-9.:]*' "$SERVER_LOG" | head -1 | sed 's#listening on http://##' || true)"
  [ -n "$ADDR" ] && break
  kill -0 "$SERVER_PID" 2>/dev/null || { cat "$SERVER_LOG" >&2; exit 1; }
  sleep 0.05
done
[ -n "$ADDR" ] || { log "server did not start"; cat "$SERVER_LOG" >&2; exit 1; }
URL="http://$ADDR/mcp"
log "server at $URL"

# --- scenarios ------------------------------------------------------------------------------
FAILED=()
PASSED=()
run() { # dir scenario [extra args]
  local dir="$1" scenario="$2"; shift 2
  local out="$WORK/results/$dir-$scenario"
  mkdir -p "$out"
  log "$dir: $scenario $*"
  if "$NODE" "$WORK/$dir/node_modules/@modelcontextprotocol/conformance/dist/index.js" \
       server --url "$URL" --scenario "$scenario" -o "$out" "$@" >"$out/stdout.txt" 2>&1; then
    PASSED+=("$dir:$scenario")
  else
    FAILED+=("$dir:$scenario")
  fi
  tail -n 25 "$out/stdout.txt" >&2
}

for s in server-initialize ping tools-list dns-rebinding-protection server-sse-multiple-streams; do
  run c01 "$s"
done
for s in server-stateless http-header-validation caching server-sse-multiple-streams dns-rebinding-protection; do
  run c02 "$s" --spec-version 2026-07-28 --expected-failures "$ROOT/scripts/conformance-expected-failures.yml"
done

log "passed: ${PASSED[*]:-none}"
log "failed: ${FAILED[*]:-none}"
[ "${#FAILED[@]}" -eq 0 ]
