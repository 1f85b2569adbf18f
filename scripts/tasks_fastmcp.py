#!/usr/bin/env python3
"""A second real client of the tasks extension, in another language: FastMCP (with
fastmcp-tasks) calls propose-egress on a real supervise-server; the call becomes a task
that the client polls with tasks/get, and `call_tool` returns the decision once an operator
approves it with the real `supervise` CLI, as its own process.

Usage: tasks_fastmcp.py SERVER_BIN CLI_BIN   (run by .ci/run inside its virtual environment)
"""

import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import fastmcp_tasks  # noqa: F401  (importing it turns on the client's task support)
from fastmcp import Client


def start_server(server_bin: str, db: str) -> tuple[subprocess.Popen, str]:
    env = dict(os.environ, SUPERVISE_LOG="info")
    env.pop("SUPERVISE_DB", None)
    proc = subprocess.Popen(
        [server_bin, "--db", db, "--listen", "127.0.0.1:0", "--bottle", "alpha=127.0.0.1",
         "--task-poll-interval", "1s", "--log-format", "json"],
        env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
    )
    deadline = time.time() + 20
    for line in proc.stderr:
        m = re.search(r"http://(127\.0\.0\.1:\d+)/mcp", line)
        if m:
            return proc, f"http://{m.group(1)}/mcp"
        if time.time() > deadline:
            break
    proc.kill()
    sys.exit("supervise-server did not report its address")


def supervise(cli_bin: str, db: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([cli_bin, "--db", db, *args], capture_output=True, text=True,
                          check=False)


async def operator_approves(cli_bin: str, db: str, note: str) -> str:
    """Waits for the pending proposal and approves it; returns its id."""
    for _ in range(200):
        out = supervise(cli_bin, db, "list", "--json")
        pending = json.loads(out.stdout or '{"proposals": []}')["proposals"]
        if pending:
            pid = pending[0]["id"]
            done = supervise(cli_bin, db, "approve", pid, "--note", note)
            assert done.returncode == 0, done.stderr
            return pid
        await asyncio.sleep(0.05)
    raise AssertionError("no proposal reached the operator's queue")


async def main(server_bin: str, cli_bin: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        # SUPERVISE_TASKS_DB: another database (e.g. a fresh postgres:// one, as .ci/run gives).
        db = os.environ.get("SUPERVISE_TASKS_DB") or os.path.join(tmp, "supervise.db")
        proc, url = start_server(server_bin, db)
        try:
            async with Client(url) as client:
                call = asyncio.create_task(client.call_tool(
                    "propose-egress",
                    {"host": "pypi.org", "port": 443, "justification": "install the build deps"},
                    timeout=60,
                ))
                pid = await operator_approves(cli_bin, db, "from the fastmcp test")
                result = await asyncio.wait_for(call, 60)
            status = (result.structured_content or {}).get("status")
            text = " ".join(getattr(c, "text", "") for c in result.content)
            assert status == "approved", (status, text)
            assert "from the fastmcp test" in text, text
            assert not result.is_error
            # It came back as a task: the server logged one, and the proposal was delivered
            # to it (check-proposal would now say unknown).
            shown = supervise(cli_bin, db, "show", pid, "--json")
            assert '"delivered"' in shown.stdout, shown.stdout
            print(f"ok: FastMCP call_tool returned {status} for task {pid}")
        finally:
            proc.terminate()
            proc.wait(timeout=15)
            log = proc.stderr.read() if proc.stderr else ""
    assert "answered with a task" in log, "the call was not answered with a task"


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    asyncio.run(main(sys.argv[1], sys.argv[2]))
