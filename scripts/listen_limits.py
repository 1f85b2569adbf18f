#!/usr/bin/env python3
"""What one bottle's subscriptions/listen streams cost the server (RELIABILITY.md, "One
bottle's listen streams"). Each part starts a fresh server on a throwaway database.

  python3 scripts/listen_limits.py fds [BIN]
      under a 1,024 open-file limit (soft and hard), bottle beta (127.0.0.2) opens streams
      until one is refused or unanswered for 2 s; then bottle gamma (127.0.0.3) proposes
      and /healthz is read, each timed.
  python3 scripts/listen_limits.py memory [BIN] [IDS] [LEN]
      VmRSS before and 2 s after 100 streams, each naming one task of its own and IDS-1
      unknown ids of LEN characters (defaults 64 and 36).

BIN defaults to target/release/supervise-server. Loopback traffic only.
"""
import json, os, socket, subprocess, sys, tempfile, time, urllib.request

META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "listen-limits", "version": "1"}}


def start(binary, port, bottles, prefix=()):
    d = tempfile.mkdtemp()
    args = [*prefix, binary, "--db", f"{d}/m.db", "--listen", f"127.0.0.1:{port}", "--grace", "0"]
    for b in bottles:
        args += ["--bottle", b]
    log = open(f"{d}/log", "w+")
    proc = subprocess.Popen(args, stderr=log, stdout=subprocess.DEVNULL)
    deadline = time.time() + 20
    while time.time() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1)
            return proc, log
        except OSError:
            time.sleep(0.1)
    sys.exit("the server did not start")


def send(port, src, method, params, name=None, timeout=10):
    body = json.dumps({"jsonrpc": "2.0", "id": 9, "method": method,
                       "params": {**params, "_meta": META}}).encode()
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout, source_address=(src, 0))
    extra = b"Mcp-Name: %s\r\n" % name.encode() if name else b""
    s.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
              b"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"
              b"Mcp-Method: %s\r\n%sContent-Length: %d\r\n\r\n"
              % (port, method.encode(), extra, len(body)) + body)
    return s


def task(port, src, host):
    s = send(port, src, "tools/call", {"name": "propose-egress",
             "arguments": {"host": host, "justification": "measure"}}, "propose-egress")
    data = b""
    while b"\r\n\r\n" not in data or not data.rstrip().endswith(b"}"):
        data += s.recv(65536)
    return json.loads(data.split(b"\r\n\r\n", 1)[1])["result"]["taskId"]


def vm_rss_kib(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])


def fds(binary):
    port = 7596
    proc, log = start(binary, port, ["beta=127.0.0.2", "gamma=127.0.0.3"],
                      ["prlimit", "--nofile=1024:1024"])
    try:
        tid = task(port, "127.0.0.2", "fd.example")
        streams, refused = [], None
        while refused is None:
            try:
                s = send(port, "127.0.0.2", "subscriptions/listen",
                         {"notifications": {"taskIds": [tid]}}, timeout=2)
                head = s.recv(4096)
            except OSError as e:
                refused = f"no answer ({e})"
                break
            if head.startswith(b"HTTP/1.1 200"):
                streams.append(s)
            else:
                refused = head.decode(errors="replace").split("\r\n\r\n")[-1][:200]
        print(f"beta held {len(streams)} streams; the next: {refused}")
        t = time.time()
        try:
            r = urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=10)
            print(f"/healthz {r.status} in {(time.time() - t) * 1000:.1f} ms")
        except OSError as e:
            print(f"/healthz failed after {(time.time() - t) * 1000:.0f} ms: {e}")
        t = time.time()
        try:
            task(port, "127.0.0.3", "gamma.example")
            print(f"gamma's propose answered in {(time.time() - t) * 1000:.1f} ms")
        except OSError as e:
            print(f"gamma's propose failed after {(time.time() - t) * 1000:.0f} ms: {e}")
    finally:
        proc.terminate()
        proc.wait()
        log.seek(0)
        print("".join(l for l in log if "wait caps" in l or "open-file" in l).strip())


def memory(binary, ids, length):
    port = 7598
    proc, _ = start(binary, port, ["alpha=127.0.0.1"])
    try:
        tid = task(port, "127.0.0.1", "memory.example")
        names = [tid] + [("019ad1e2-0000-7000-8000-%012d" % i).ljust(length, "x")
                         for i in range(ids - 1)]
        time.sleep(1)
        before = vm_rss_kib(proc.pid)
        streams = []
        for _ in range(100):
            s = send(port, "127.0.0.1", "subscriptions/listen", {"notifications": {"taskIds": names}})
            head = s.recv(4096)
            assert head.startswith(b"HTTP/1.1 200"), head[:300]
            streams.append(s)
        time.sleep(2)
        after = vm_rss_kib(proc.pid)
        print(f"100 streams x {ids} ids of {length} characters: VmRSS {before / 1024:.1f} -> "
              f"{after / 1024:.1f} MiB (+{(after - before) / 1024:.1f} MiB, "
              f"{(after - before) / 100:.0f} KiB a stream)")
    finally:
        proc.terminate()
        proc.wait()


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    binary = sys.argv[2] if len(sys.argv) > 2 else "target/release/supervise-server"
    if mode == "fds":
        fds(binary)
    elif mode == "memory":
        memory(binary, int(sys.argv[3]) if len(sys.argv) > 3 else 64,
               int(sys.argv[4]) if len(sys.argv) > 4 else 36)
    else:
        sys.exit(__doc__)
