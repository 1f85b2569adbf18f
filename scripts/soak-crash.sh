#!/usr/bin/env bash
# Crash-safety soak for long manual runs: the same test as CI's
# `crash::sigkill_under_propose_load_loses_no_answered_proposal` in the suite (SIGKILL of supervise-server under propose-egress load, restart, every
# answered proposal must be in the database, integrity_check ok, CLI decisions delivered by
# the restarted server), with many more rounds, repeated over fresh databases until the time
# is up or a run fails.
#
#   scripts/soak-crash.sh                 # 10 minutes, 100 rounds per run, debug build
#   SECONDS_TOTAL=3600 ROUNDS=300 scripts/soak-crash.sh
#   PROFILE=release scripts/soak-crash.sh
#
# Prints one line per run and a summary (runs, rounds, proposals answered and found, time).
# Exit status: 0 when every run passed; 1 at the first failure (its output is kept in
# $WORK/failed-run-N.log). Needs the sqlite3 shell (Debian package sqlite3).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SECONDS_TOTAL="${SECONDS_TOTAL:-600}"
ROUNDS="${ROUNDS:-100}"
PROFILE="${PROFILE:-debug}"
WORK="${WORK:-$ROOT/target/soak-crash}"
mkdir -p "$WORK"
cd "$ROOT"

command -v sqlite3 >/dev/null || { echo "soak-crash: needs the sqlite3 shell (apt-get install sqlite3)" >&2; exit 2; }

release=()
[ "$PROFILE" = release ] && release=(--release)
cargo build -q "${release[@]}" -p supervise-server -p supervise-cli
cargo test -q "${release[@]}" -p supervise-tests --test suite --no-run

start=$(date +%s)
runs=0
rounds=0
proposals=0
while [ $(( $(date +%s) - start )) -lt "$SECONDS_TOTAL" ]; do
  runs=$((runs + 1))
  log="$WORK/run.log"
  if ! SUPERVISE_SOAK_ROUNDS="$ROUNDS" cargo test -q "${release[@]}" -p supervise-tests \
      --test suite -- --exact crash::sigkill_under_propose_load_loses_no_answered_proposal \
      --nocapture >"$log" 2>&1; then
    cp "$log" "$WORK/failed-run-$runs.log"
    echo "soak-crash: run $runs FAILED; output in $WORK/failed-run-$runs.log" >&2
    tail -n 30 "$log" >&2
    exit 1
  fi
  line=$(grep -E '^[0-9]+ rounds, [0-9]+ proposals answered' "$log" | tail -n 1)
  n=$(echo "$line" | sed -E 's/^[0-9]+ rounds, ([0-9]+) proposals.*/\1/')
  rounds=$((rounds + ROUNDS))
  proposals=$((proposals + n))
  echo "run $runs: $line"
done
elapsed=$(( $(date +%s) - start ))
echo "soak-crash: $runs runs, $rounds SIGKILL rounds, $proposals proposals answered and all found, 0 failures, ${elapsed} s ($PROFILE)"
