#!/usr/bin/env bash
# What recording a push's content costs, with real git and the real console:
#
#   1. the git gate refusing a push of FILES new files, about 1 MiB of patch in all, through
#      its pre-receive hook (each run a new commit, so each files a new proposal with its
#      diff, flags and kept objects), against the same push refused by a hook that only
#      reads git's lines and exits 1: git's own cost, the floor under any gate, so the
#      ratio of the two is an upper bound on the gate's ratio to a gate that records
#      nothing;
#   2. the console rendering that push's proposal page, fetched with curl in a signed-in
#      session (time to first byte and to the last, on loopback).
#
# Usage: scripts/bench-push-review.sh [BIN_DIR] [RUNS] [FILES]
#   BIN_DIR  the directory holding `supervise` (default: $CARGO_TARGET_DIR/release, else
#            target/release; build it with `cargo build --release -p supervise-cli`)
#   RUNS     pushes and page fetches each (default 7); medians are printed
#   FILES    files in the pushed commit (default 200; 1 MiB of patch is spread over them)
set -euo pipefail

bin_dir=${1:-${CARGO_TARGET_DIR:-target}/release}
runs=${2:-7}
files=${3:-200}
supervise=$(realpath "$bin_dir/supervise")
[ -x "$supervise" ] || { echo "no $bin_dir/supervise: build it first" >&2; exit 2; }

work=$(mktemp -d)
console_pid=
cleanup() {
    [ -n "$console_pid" ] && kill "$console_pid" 2>/dev/null && wait "$console_pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
db=$work/supervise.db
export USER=bench GIT_AUTHOR_NAME=agent GIT_AUTHOR_EMAIL=agent@example.test
export GIT_COMMITTER_NAME=agent GIT_COMMITTER_EMAIL=agent@example.test
unset SUPERVISE_DB SUPERVISE_DB_FILE SUPERVISE_CONSOLE_URL
sv() { "$supervise" --db "$db" "$@"; }

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# The agent's clone with one commit, and two bare repositories holding it: the gate, and
# the floor (a pre-receive hook that refuses without looking).
sv bottle add demo --ip 127.0.0.2 >/dev/null
git init -q -b main "$work/agent"
echo "# demo" >"$work/agent/README.md"
git -C "$work/agent" add README.md
git -C "$work/agent" commit -qm "start"
for repo in gate floor; do
    git clone -q --bare "$work/agent" "$work/$repo.git"
done
sv gate install "$work/gate.git" --bottle demo >/dev/null
printf '#!/bin/sh\ncat >/dev/null\necho "refused" >&2\nexit 1\n' >"$work/floor.git/hooks/pre-receive"
chmod +x "$work/floor.git/hooks/pre-receive"
git -C "$work/agent" remote add gate "$work/gate.git"
git -C "$work/agent" remote add floor "$work/floor.git"

# FILES new files of prose-like lines (nothing a secret rule matches), 1 MiB over them.
per_file=$((1024 * 1024 / files))
python3 - "$work/agent/src" "$files" "$per_file" <<'EOF'
import os, sys
root, files, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
words = "the gate records what an agent pushes so the operator reads it before deciding".split()
for f in range(files):
    d = os.path.join(root, f"mod{f // 20}")
    os.makedirs(d, exist_ok=True)
    lines, n, i = [], 0, 0
    while n < size:
        line = f"    step_{f}_{i} = " + " ".join(words[(i + k) % len(words)] for k in range(7)) + "\n"
        lines.append(line)
        n += len(line) + 1  # the patch's "+" per line
        i += 1
    with open(os.path.join(d, f"part{f}.py"), "w") as out:
        out.writelines(lines)
EOF
git -C "$work/agent" add -A
git -C "$work/agent" commit -qm "add the generated modules"

# One push, timed: wall time, and the CPU time of git and everything it ran (the hook and
# supervise included), which a loaded machine distorts far less. The commit is amended
# first so each run is a new update.
push() {
    local remote=$1 run=$2
    git -C "$work/agent" commit -q --amend -m "add the generated modules ($remote, run $run)"
    if /usr/bin/time -f '%e %U %S' -o "$work/time" \
        git -C "$work/agent" push -q "$remote" main 2>"$work/push.err"; then
        echo "the push to $remote was accepted; expected a refusal" >&2
        exit 1
    fi
    tail -1 "$work/time" | awk -v w="$work/$remote" '{ print $1 >> (w ".wall"); print $2 + $3 >> (w ".cpu") }'
}
for run in $(seq "$runs"); do
    push floor "$run"
    push gate "$run"
done
grep -q "need an operator's decision" "$work/push.err" || { cat "$work/push.err" >&2; exit 1; }
gate=$(median <"$work/gate.wall")
floor=$(median <"$work/floor.wall")
gate_cpu=$(median <"$work/gate.cpu")
floor_cpu=$(median <"$work/floor.cpu")
patch=$(git -C "$work/agent" show --format= HEAD | wc -c)

# The git commands the recording adds to the gate (docs/ARCHITECTURE.md, gate/diff.rs and
# gate/keep.rs), run by hand on the same commit, CPU timed: the commits, the file list and
# counts, the patch, and the copy of the objects kept under refs/supervise/ID.
record_git() {
    local a=$work/agent
    git -C "$a" log -z --format='%H%x1f%an <%ae>%x1f%s' -n 101 HEAD~1..HEAD >/dev/null
    git -C "$a" diff --raw -z -M --no-abbrev HEAD~1 HEAD -- >/dev/null
    git -C "$a" diff --numstat -z -M HEAD~1 HEAD -- >/dev/null
    git -C "$a" diff -p -M -U3 --no-color --no-ext-diff --no-textconv HEAD~1 HEAD -- >/dev/null
    git -C "$a" rev-list --objects HEAD --not HEAD~1 | git -C "$a" pack-objects --stdout -q |
        git -C "$work/keep.git" index-pack --stdin >/dev/null
}
export -f record_git
export work
git init -q --bare "$work/keep.git"
for _ in $(seq "$runs"); do
    /usr/bin/time -f '%U %S' -o "$work/time" bash -c record_git
    tail -1 "$work/time" | awk '{ print $1 + $2 }' >>"$work/record.cpu"
done
record_cpu=$(median <"$work/record.cpu")

# The console: an admin signs in with the link (the sign-in POST needs only the Origin),
# then the newest proposal's page is fetched RUNS times.
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
url=http://127.0.0.1:$port
"$supervise" --db "$db" console --listen "127.0.0.1:$port" --public-url "$url" \
    >"$work/console.log" 2>&1 &
console_pid=$!
for _ in $(seq 100); do
    curl -fs "$url/healthz" >/dev/null 2>&1 && break
    sleep 0.1
done
link=$(sv operator add bench --role admin --public-url "$url" | grep -o "$url/sign-in/[^ ]*")
curl -fs -c "$work/jar" -o /dev/null -X POST -H "Origin: $url" "$link"
id=$(sv list --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["proposals"][-1]["id"])')
# The console's own CPU time per page, from /proc (utime + stime, in clock ticks).
ticks() { awk '{ print $14 + $15 }' "/proc/$console_pid/stat"; }
hz=$(getconf CLK_TCK)
: >"$work/first.s"
: >"$work/total.s"
: >"$work/cpu.s"
for _ in $(seq "$runs"); do
    before=$(ticks)
    read -r first total size < <(curl -fs -b "$work/jar" -o /dev/null \
        -w '%{time_starttransfer} %{time_total} %{size_download}\n' "$url/proposals/$id")
    echo "($(ticks) - $before) / $hz" | bc -l >>"$work/cpu.s"
    echo "$first" >>"$work/first.s"
    echo "$total" >>"$work/total.s"
done
curl -fs -b "$work/jar" -o "$work/page.html" "$url/proposals/$id"
grep -q "part$((files - 1)).py" "$work/page.html" ||
    { echo "the proposal page does not show the pushed files" >&2; exit 1; }

printf 'push of %s files, %s bytes of patch, %s runs each (medians)\n' "$files" "$patch" "$runs"
printf '  refused by the gate:                 %.3f s wall, %.3f s CPU\n' "$gate" "$gate_cpu"
printf '  refused by a hook that only exits 1: %.3f s wall, %.3f s CPU (git alone)\n' \
    "$floor" "$floor_cpu"
printf '  ratio:                               %.2fx wall, %.2fx CPU\n' \
    "$(echo "$gate / $floor" | bc -l)" "$(echo "$gate_cpu / $floor_cpu" | bc -l)"
printf '  the recording'"'"'s git commands alone: %.3f s CPU\n' "$record_cpu"
printf 'console proposal page (%s bytes)\n' "$size"
printf '  first byte: %.1f ms, last byte: %.1f ms, console CPU: %.0f ms\n' \
    "$(echo "$(median <"$work/first.s") * 1000" | bc -l)" \
    "$(echo "$(median <"$work/total.s") * 1000" | bc -l)" \
    "$(echo "$(median <"$work/cpu.s") * 1000" | bc -l)"
uptime
