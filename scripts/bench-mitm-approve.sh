#!/usr/bin/env bash
# Approve -> first request allowed, and revoke -> first request refused, through a real
# mitmdump running contrib/mitmproxy/supervise_addon.py on loopback (the addon keeps no
# cache of its own: every request is asked of its `supervise decide` child).
#
# Per run: a request from bottle 127.0.0.2 to a new name under .test (sent to a local
# origin by a small resolver addon) is refused with a 403 naming the `observed` proposal
# the helper filed; a poller then sends the same plain-HTTP request through the proxy
# every POLL_MS (a new connection each time) while `supervise approve ID` runs, and the
# time from the approve command's start, and from its exit (its commit is just before),
# to the first 200 is taken; then the same for `supervise revoke GRANT` and the first 403.
# Prints each run and the medians.
#
# Usage: scripts/bench-mitm-approve.sh [RUNS] [BIN] [MITMDUMP]
#   RUNS default 7; BIN default target/release/supervise;
#   MITMDUMP default $SUPERVISE_TEST_MITMDUMP, else /work/py/bin/mitmdump. POLL_MS default 5.
set -euo pipefail
runs="${1:-7}"
bin="$(realpath "${2:-target/release/supervise}")"
mitmdump="${3:-${SUPERVISE_TEST_MITMDUMP:-/work/py/bin/mitmdump}}"
poll_ms="${POLL_MS:-5}"
here="$(cd "$(dirname "$0")/.." && pwd)"
dir="$(mktemp -d)"
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$dir"
}
trap cleanup EXIT
db="$dir/supervise.db"
"$bin" --db "$db" bottle add a --ip 127.0.0.2 >/dev/null 2>&1

cat >"$dir/origin.py" <<'EOF'
import http.server
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"hello\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
EOF
cat >"$dir/resolve.py" <<'EOF'
class Resolve:
    def server_connect(self, data):
        host, port = data.server.address
        if host.endswith(".test"):
            data.server.address = ("127.0.0.1", port)
addons = [Resolve()]
EOF
python3 "$dir/origin.py" >"$dir/origin.port" &
pids+=($!)
for _ in $(seq 1 100); do [ -s "$dir/origin.port" ] && break; sleep 0.05; done
origin="$(cat "$dir/origin.port")"
proxy="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
SUPERVISE_DB="$db" "$mitmdump" --listen-host 127.0.0.1 -p "$proxy" -q \
    --set confdir="$dir/conf" -s "$dir/resolve.py" -s "$here/contrib/mitmproxy/supervise_addon.py" \
    --set supervise_bin="$bin" >/dev/null 2>"$dir/mitm.log" &
pids+=($!)
for _ in $(seq 1 300); do
    python3 -c "import socket; socket.create_connection(('127.0.0.1', $proxy), 0.2)" 2>/dev/null && break
    sleep 0.1
done

python3 - "$bin" "$db" "$proxy" "$origin" "$runs" "$poll_ms" <<'EOF'
import socket, statistics, subprocess, sys, threading, time

bin, db, proxy, origin, runs, poll_ms = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5]), float(sys.argv[6])

def request(host):
    """One GET through the proxy from the bottle's address: (status, headers and body)."""
    s = socket.socket()
    s.bind(("127.0.0.2", 0))
    s.settimeout(10)
    s.connect(("127.0.0.1", proxy))
    s.sendall(f"GET http://{host}:{origin}/simple/ HTTP/1.1\r\nHost: {host}:{origin}\r\nConnection: close\r\n\r\n".encode())
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    text = data.decode("utf-8", "replace")
    return int(text.split(" ", 2)[1]), text

def timed(argv, want, host):
    """Runs argv while sending a request for `host` every poll_ms: the requests (sent,
    answered, status) and argv's start, exit and output."""
    seen = []
    stop = threading.Event()
    def poll():
        while not stop.is_set():
            sent = time.monotonic()
            status, _ = request(host)
            seen.append((sent, time.monotonic(), status))
            if status == want:
                return
            time.sleep(poll_ms / 1000)
    t = threading.Thread(target=poll, daemon=True)
    start = time.monotonic()
    t.start()
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    done = time.monotonic()
    t.join(30)
    stop.set()
    first = next((r for r in seen if r[2] == want), None)
    if first is None:
        sys.exit(f"no {want} within 30 s after {argv}")
    # A request sent after the command exited (its commit is before) with the old answer.
    stale = sum(1 for r in seen if r[0] > done and r[2] != want)
    trips = [r[1] - r[0] for r in seen]
    return (first[1] - start) * 1000, (first[1] - done) * 1000, stale, trips, out

cli = [bin, "--db", db, "--as", "bench"]
rows = {"approve": [], "approve_after": [], "revoke": [], "revoke_after": []}
stale, trips = 0, []
for i in range(runs):
    host = f"run{i}.test"
    status, text = request(host)
    assert status == 403, text
    proposal = next(l.split(": ", 1)[1].strip() for l in text.splitlines() if l.lower().startswith("x-supervise-proposal:"))
    a, a_after, s1, t1, out = timed(cli + ["approve", proposal, "--yes"], 200, host)
    grant = out.split("; grant ", 1)[1].split()[0]
    r, r_after, s2, t2, _ = timed(cli + ["revoke", grant], 403, host)
    for k, v in (("approve", a), ("approve_after", a_after), ("revoke", r), ("revoke_after", r_after)):
        rows[k].append(v)
    stale += s1 + s2
    trips += t1 + t2
    print(f"run {i + 1}: approve -> 200: {a:.1f} ms from its start, {a_after:.1f} ms after it exited; "
          f"revoke -> 403: {r:.1f} ms, {r_after:.1f} ms")
m = statistics.median
print(f"median of {runs} (a request every {poll_ms:g} ms, each {m(trips) * 1000:.1f} ms through the proxy, median of {len(trips)}): "
      f"approve -> first 200: {m(rows['approve']):.1f} ms from the command's start, {m(rows['approve_after']):.1f} ms after it exited; "
      f"revoke -> first 403: {m(rows['revoke']):.1f} ms, {m(rows['revoke_after']):.1f} ms; "
      f"{stale} requests sent after a command exited got the old answer")
EOF
