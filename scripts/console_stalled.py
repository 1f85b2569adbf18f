#!/usr/bin/env python3
"""Stalled clients against a real `supervise console` whose soft open-file limit is 1,024.

Usage: python3 scripts/console_stalled.py PATH/TO/supervise [N]

Opens N connections (default 1000, half stopping mid-header, half mid-body), then makes an
operator's API call with a token; prints as JSON how long the call took, how long after the
first stalled connection the console had closed them all, and the console's VmRSS (MiB)
idle, at the peak and after. Loopback only; the database is a throwaway in a temp dir."""
import os, resource, select, socket, subprocess, sys, tempfile, time, json, urllib.request
BIN = sys.argv[1]
N = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
resource.setrlimit(resource.RLIMIT_NOFILE, (4096, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
d = tempfile.mkdtemp()
db = os.path.join(d, "s.db")
def cli(*args):
    return subprocess.run([BIN, "--db", db, "--as", "root", *args], check=True, capture_output=True, text=True).stdout
cli("bottle", "add", "demo", "--ip", "127.0.0.2")
cli("operator", "add", "ops", "--role", "approver")
token = [w for w in cli("operator", "token", "ops").split() if w.startswith("sv_")][0]
port = 17000 + os.getpid() % 1000
url = f"http://127.0.0.1:{port}"
def limit():
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
con = subprocess.Popen([BIN, "--db", db, "console", "--listen", f"127.0.0.1:{port}", "--public-url", url],
                       preexec_fn=limit, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
def rss():
    for line in open(f"/proc/{con.pid}/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1]) // 1024
for _ in range(100):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close(); break
    except OSError:
        time.sleep(0.1)
def call():
    req = urllib.request.Request(f"{url}/api/v1/proposals", headers={"Authorization": f"Bearer {token}"})
    return urllib.request.urlopen(req, timeout=120).status
call()
base = rss()
socks = []
t0 = time.monotonic()
from concurrent.futures import ThreadPoolExecutor
def one(i):
    s = socket.create_connection(("127.0.0.1", port))
    if i % 2 == 0:
        s.sendall(f"GET /api/v1/proposals HTTP/1.1\r\nHost: x\r\nX-Slow: ".encode())
    else:
        s.sendall(f"POST /api/v1/grants/g/revoke HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\nContent-Length: 100\r\n\r\n{{".encode())
    s.setblocking(False)
    return s
with ThreadPoolExecutor(64) as pool:
    socks = list(pool.map(one, range(N)))
opened = time.monotonic() - t0
time.sleep(0.5)
peak = rss()
tc = time.monotonic()
status = call()
answered = time.monotonic() - tc
open_ = set(socks); last = 0; peaks = [peak]
while open_ and time.monotonic() - t0 < 120:
    r, _, _ = select.select(list(open_)[:1000], [], [], 0.5)
    for s in r:
        try:
            if s.recv(4096) == b"":
                open_.discard(s); last = time.monotonic() - t0
        except OSError:
            open_.discard(s); last = time.monotonic() - t0
    peaks.append(rss())
after = rss()
status2 = call()
con.terminate(); con.wait()
print(json.dumps({"stalled": N, "opened_in_s": round(opened, 1), "api_status": status, "api_answered_in_s": round(answered, 1),
                  "still_open": len(open_), "all_closed_after_s": round(last, 1), "rss_mib": {"idle": base, "peak": max(peaks), "after": after},
                  "api_after": status2}))
