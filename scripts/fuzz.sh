#!/usr/bin/env bash
# Timed fuzzing. cargo-fuzz needs a nightly toolchain that CI and a
# fresh machine do not have, so the fuzzers are proptest properties; this runs their timed
# loops for a fixed time each and prints execs, time and failures:
#
#   1. parse_message and the request-reading helpers (crates/protocol/tests/protocol/fuzz.rs,
#      in process: arbitrary bytes, arbitrary JSON, byte-mutated valid requests);
#   2. dispatch through a real supervise-server (crates/tests/tests/suite/fuzz.rs:
#      generated and mutated tools/call requests over loopback HTTP).
#
#   scripts/fuzz.sh                        # 300 s each, release build
#   FUZZ_SECONDS=3600 scripts/fuzz.sh
#   PROFILE=debug scripts/fuzz.sh
#
# The normal `cargo test` run covers the same properties with a small bounded case count.
# Exit status: 0 when no property failed; 1 otherwise (the failing input is printed).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
FUZZ_SECONDS="${FUZZ_SECONDS:-300}"
PROFILE="${PROFILE:-release}"
cd "$ROOT"

release=()
[ "$PROFILE" = release ] && release=(--release)
cargo build -q "${release[@]}" -p supervise-server -p supervise-cli

status=0
run() { # package test-binary test-path
  local out
  if ! out=$(SUPERVISE_FUZZ_SECONDS="$FUZZ_SECONDS" cargo test -q "${release[@]}" -p "$1" \
      --test "$2" -- --ignored --exact "$3" --nocapture 2>&1); then
    status=1
  fi
  echo "$out" | grep -E '^fuzz ' || { echo "$out" | tail -n 40; status=1; }
}
run supervise-protocol protocol fuzz::fuzz_for_a_fixed_time
run supervise-tests suite fuzz::fuzz_dispatch_for_a_fixed_time
[ "$status" = 0 ] && echo "fuzz: no failures ($PROFILE, ${FUZZ_SECONDS} s per target)"
exit "$status"
