#!/usr/bin/env bash
# Instructions (callgrind Ir) the server spends per call of one bench scenario, by
# difference: two runs of the same scenario under callgrind, short and long, each from a
# fresh server; (Ir_long - Ir_short) / (calls_long - calls_short) cancels start-up, the
# scenario's own set-up (check-pending files its proposals first) and connection opening.
#
#   scripts/callgrind-per-call.sh SCENARIO STYLE [SHORT_SECS LONG_SECS] [BIN_DIR]
#   scripts/callgrind-per-call.sh propose 2025-11-25
#   scripts/callgrind-per-call.sh check-pending 2026-07-28 4 12 target/release
#
# With PG_ADMIN=postgres://USER@HOST:PORT/DB (a running PostgreSQL server) each run's
# server gets a fresh database of its own there (created with psql) instead of a SQLite file.
# Writes callgrind.out.SCENARIO.STYLE.{short,long} into $OUT (default target/callgrind);
# `callgrind_annotate --inclusive=yes FILE` shows where the long run's instructions went.
set -euo pipefail
scenario=$1 style=$2 short=${3:-4} long=${4:-12} bin=${5:-target/release}
out=${OUT:-target/callgrind}
conns=${CONNS:-16}
mkdir -p "$out"
bottles=()
for i in $(seq 2 33); do bottles+=(--bottle "b$i=127.0.0.$i"); done

run() { # secs tag -> prints "IR CALLS"
    local secs=$1 tag=$2 dir db port pid file calls ir
    dir=$(mktemp -d)
    db="$dir/s.db"
    if [ -n "${PG_ADMIN:-}" ]; then
        local name="callgrind_${tag}_$$_$RANDOM"
        psql -q "$PG_ADMIN" -c "CREATE DATABASE $name" >/dev/null
        db="${PG_ADMIN%/*}/$name"
    fi
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    file="$out/callgrind.out.$scenario.$style.$tag"
    SUPERVISE_LOG=warn valgrind --tool=callgrind --callgrind-out-file="$file" \
        "$bin/supervise-server" --db "$db" --listen "127.0.0.1:$port" --grace 0 \
        --max-pending-per-bottle 0 "${bottles[@]}" 2>"$dir/valgrind.log" &
    pid=$!
    for _ in $(seq 1 600); do
        curl -sf "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
        sleep 0.1
    done
    "$bin/supervise-bench" --url "http://127.0.0.1:$port" --db "$db" \
        --scenario "$scenario" --style "$style" --connections "$conns" \
        --warmup 0 --duration "$secs" --json "$dir/bench.json" >"$dir/bench.txt" 2>&1
    kill -TERM "$pid"
    wait "$pid" || true
    calls=$(python3 -c 'import json,sys; r=[x for x in json.load(open(sys.argv[1]))["rows"] if x["scenario"]==sys.argv[2]][0]; print(r["requests"])' "$dir/bench.json" "$scenario")
    ir=$(grep -m1 '^summary:' "$file" | awk '{print $2}')
    rm -rf "$dir"
    echo "$ir $calls"
}
read -r ir1 n1 < <(run "$short" short)
read -r ir2 n2 < <(run "$long" long)
python3 -c "import sys; ir1,n1,ir2,n2=map(int,sys.argv[1:]); print(f'$scenario $style: {(ir2-ir1)/(n2-n1):,.0f} Ir per call ({n1} and {n2} calls; {ir1:,} and {ir2:,} Ir)')" "$ir1" "$n1" "$ir2" "$n2"
