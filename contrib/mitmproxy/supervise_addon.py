"""mitmproxy addon: every CONNECT and every request decided by supervise.

Runs `supervise decide` as a child process (found on PATH, or the `supervise_bin` option;
the database comes from SUPERVISE_DB / SUPERVISE_DB_FILE in the environment, which the child
inherits) and asks it about every CONNECT (the `http_connect` hook: source, host, port) and
every request (the `request` hook, inside intercepted TLS too: source, host, port, method,
path). An allowed request goes through; a refused one is answered here with a 403 whose
body names the proposal filed (or found) for it and tells the agent to poll
`check-proposal` with its id. The helper is restarted when it dies; while it cannot be
started or does not answer, every request is refused (fails closed).

    mitmdump -s contrib/mitmproxy/supervise_addon.py

Depends on mitmproxy only.
"""

import asyncio
import itertools
import os
import shutil

from mitmproxy import ctx, http

# How long one answer may take before the request is refused.
ANSWER_TIMEOUT = 5.0


class Helper:
    """One `supervise decide` child, asked over its stdin, answered in order on stdout."""

    def __init__(self, argv):
        self.argv = argv
        self.proc = None
        self.reader = None
        self.waiting = {}
        self.ids = itertools.count(1)
        self.lock = asyncio.Lock()

    async def start(self):
        self.proc = await asyncio.create_subprocess_exec(
            *self.argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env=os.environ.copy(),
        )
        self.reader = asyncio.ensure_future(self.read(self.proc))

    async def read(self, proc):
        try:
            while True:
                line = await proc.stdout.readline()
                if not line:
                    break
                parts = line.decode("utf-8", "replace").rstrip("\r\n").split(" ", 3)
                future = self.waiting.pop(parts[0], None)
                if future is not None and not future.done():
                    future.set_result(parts[1:])
        finally:
            # The helper is gone: every question still open is refused.
            for future in self.waiting.values():
                if not future.done():
                    future.set_result(None)
            self.waiting.clear()
            if self.proc is proc:
                self.proc = None

    async def ask(self, fields):
        """The answer's fields after the id (`["OK", GRANT]`, `["ERR", PROPOSAL, message]`),
        or None when the helper cannot answer."""
        async with self.lock:
            if self.proc is None or self.proc.returncode is not None:
                try:
                    await self.start()
                except OSError as e:
                    ctx.log.warn(f"supervise: cannot start {self.argv[0]}: {e}")
                    self.proc = None
                    return None
            ident = str(next(self.ids))
            future = asyncio.get_running_loop().create_future()
            self.waiting[ident] = future
            try:
                self.proc.stdin.write((ident + " " + " ".join(fields) + "\n").encode())
                await self.proc.stdin.drain()
            except (OSError, ConnectionError):
                self.waiting.pop(ident, None)
                return None
        try:
            return await asyncio.wait_for(future, ANSWER_TIMEOUT)
        except asyncio.TimeoutError:
            self.waiting.pop(ident, None)
            return None

    def stop(self):
        if self.proc is not None and self.proc.returncode is None:
            self.proc.stdin.close()


def source(flow):
    host = flow.client_conn.peername[0]
    return host[7:] if host.startswith("::ffff:") else host


def plain(text):
    """Text with no white space or control character (a field of the helper's line)."""
    return bool(text) and all(c.isprintable() and not c.isspace() for c in text)


def refusal(answer, what):
    """The 403 an agent reads: why, the proposal, and what to do next."""
    if answer is None:
        body = (
            f"supervise refused {what}: the egress decision is unavailable right now "
            "(the proxy fails closed). Try again in a moment.\n"
        )
        return http.Response.make(403, body, {"Content-Type": "text/plain; charset=utf-8"})
    proposal = answer[1] if len(answer) > 1 else "-"
    message = answer[2] if len(answer) > 2 else ""
    if message.startswith('message="') and message.endswith('"'):
        message = message[len('message="'):-1]
    lines = [f"supervise refused {what}: {message}"]
    headers = {"Content-Type": "text/plain; charset=utf-8"}
    if proposal != "-":
        lines.append(f"proposal_id: {proposal}")
        lines.append(
            f"The operator has been asked (proposal {proposal}). Poll check-proposal with "
            f"proposal_id {proposal} for the decision instead of proposing again; retry the "
            "request once it is approved."
        )
        headers["X-Supervise-Proposal"] = proposal
    else:
        lines.append("No proposal asks for it: use propose-egress to ask the operator.")
    response = http.Response.make(403, "\n".join(lines) + "\n", headers)
    if proposal != "-":
        # A client shows a refused CONNECT by its status line, not its body.
        response.reason = (
            f"Forbidden by supervise: poll check-proposal with proposal_id {proposal}"
        )
    return response


class SuperviseAddon:
    def __init__(self):
        self.helper = None
        # The host and port each client connection's CONNECT named: the destination of
        # the requests inside its tunnel (which is where mitmproxy connects them).
        self.tunnels = {}

    def load(self, loader):
        loader.add_option(
            "supervise_bin", str, "supervise", "The supervise CLI (a path, or a name on PATH)."
        )
        loader.add_option(
            "supervise_propose_on_deny",
            bool,
            True,
            "File (or count a hit on) an observed proposal for each refused request.",
        )
        loader.add_option(
            "supervise_record_use", bool, True, "Record grant-used events (once a minute per grant)."
        )

    def configure(self, updated):
        if self.helper is not None and not updated & {
            "supervise_bin",
            "supervise_propose_on_deny",
            "supervise_record_use",
        }:
            return
        binary = shutil.which(ctx.options.supervise_bin) or ctx.options.supervise_bin
        argv = [binary, "decide"]
        if ctx.options.supervise_propose_on_deny:
            argv.append("--propose-on-deny")
        if ctx.options.supervise_record_use:
            argv.append("--record-use")
        if self.helper is not None:
            self.helper.stop()
        self.helper = Helper(argv)

    async def ask(self, flow, fields):
        if not all(plain(f) for f in fields):
            return ["ERR", "-", 'message="the request cannot be asked about"']
        return await self.helper.ask(fields)

    async def http_connect(self, flow: http.HTTPFlow):
        req = flow.request
        answer = await self.ask(flow, [source(flow), req.host, str(req.port)])
        if answer is None or answer[0] not in ("OK", "INTERCEPT"):
            flow.response = refusal(answer, f"CONNECT {req.host}:{req.port}")
        else:
            self.tunnels[flow.client_conn.id] = (req.host, req.port)

    async def request(self, flow: http.HTTPFlow):
        req = flow.request
        if req.method == "CONNECT" or flow.response is not None:
            return
        host, port = self.tunnels.get(flow.client_conn.id, (req.host, req.port))
        fields = [source(flow), host, str(port), req.method, req.path]
        answer = await self.ask(flow, fields)
        if answer is None or answer[0] != "OK":
            flow.response = refusal(answer, f"{req.method} {host}:{port}{req.path}")

    def client_disconnected(self, client):
        self.tunnels.pop(client.id, None)

    def done(self):
        if self.helper is not None:
            self.helper.stop()


addons = [SuperviseAddon()]
