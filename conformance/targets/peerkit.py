"""One kit for the suite's own processes and SDK-free peers (standard library only).

Processes
---------
- Everything the suite starts runs in its own session, hence its own process group, so ending the
  group ends grandchildren too; every group is registered with `targets.reaper` while it runs, so an
  interpreter leaving through Ctrl-C still kills it.
- Stopping is by group: SIGTERM, a grace period, SIGKILL, and a last SIGKILL for whatever the leader
  left behind. `Group` does this for a `subprocess.Popen` (sync callers: cli, matrix, tests, the
  gateway's background servers through a worker thread); `open_group` / `stop_group` for an anyio
  Process (the stdio target, the host harness). anyio is imported only inside those two async helpers
  and `StderrTail.drain`, so the raw servers below import this module with nothing but the stdlib.
- stderr is kept as a bounded tail (`StderrTail`) that failure reasons quote, made printable.

Peers
-----
- `RpcError` is the JSON-RPC error a handler raises; `answer_line` / `serve_stdio` turn lines into
  responses for a handler `handle(request: dict) -> list[dict]` (the messages to write). A line that
  is not JSON is answered -32700 with id null, a value that is not an object -32600 (an array is a
  batch, answered item by item); `note(problem, raw, value)` hears of both, for peers that record junk.
- `answer_http` is the same for one Streamable HTTP request in JSON mode (no SSE), shared by the
  stdlib server here (`serve_http`) and the harness's in-process Starlette endpoint.

The reference implementations (reference_servers/, reference_clients/, built on the SDK) never import
this module: what judges them must not share code with them.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from typing import Any, Callable

# ------------------------------------------------------------------------------------------ ports


def free_port() -> int:
    """A loopback port nothing listens on right now (the OS picks it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, proc: subprocess.Popen, timeout: float = 30.0, host: str = "127.0.0.1") -> bool:
    """True once something accepts on host:port; False when `proc` exits first or time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.05)
    return False


# ------------------------------------------------------------------------------------------ output

# Terminal escape sequences (CSI, OSC, two-byte) and other control characters: what a hostile target could
# use to rewrite the user's terminal if its output reached it raw.
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]?")
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """`text` without terminal escape sequences; other control characters shown as \\xNN (newlines and tabs kept)."""
    text = _ESCAPES.sub("", text)
    return _CONTROLS.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def stderr_tail(data: bytes, lines: int = 3) -> str:
    """The last non-blank lines of a process's stderr, joined on one line and made printable, as reasons quote them."""
    text = data.decode("utf-8", "replace").strip()
    kept = [ln for ln in text.splitlines() if ln.strip()]
    return printable(" | ".join(kept[-lines:]))


class StderrTail:
    """The last `limit` bytes of a stream, fed in chunks: a chatty process costs bounded memory."""

    def __init__(self, limit: int = 8192):
        self.limit = limit
        self._chunks: deque[bytes] = deque()
        self._size = 0

    def add(self, chunk: bytes) -> None:
        self._chunks.append(chunk)
        self._size += len(chunk)
        while self._size > self.limit and len(self._chunks) > 1:
            self._size -= len(self._chunks.popleft())

    def bytes(self) -> bytes:
        return b"".join(self._chunks)[-self.limit:]

    def text(self, lines: int = 3) -> str:
        return stderr_tail(self.bytes(), lines)

    async def drain(self, stream) -> None:
        """Feed every chunk of an anyio byte stream until it ends."""
        import anyio

        while True:
            try:
                self.add(await stream.receive(65536))
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                return


# ------------------------------------------------------------------------------------------ process groups


def cannot_start(argv: list[str], exc: BaseException) -> str:
    """Why `argv` could not be started, as the user reads it: a missing or non-executable program named as such
    (not `FileNotFoundError: [Errno 2] ...`, which repeats the name)."""
    import shlex

    program = argv[0] if argv else ""
    named = "" if len(argv) == 1 else f" {program!r}"  # the command alone is the program: not twice
    if isinstance(exc, FileNotFoundError) and exc.filename == program:
        why = f"no such program{named}" + (" (no such file)" if "/" in program else " on PATH")
    elif isinstance(exc, PermissionError) and exc.filename == program:
        why = f"the program{named} is not an executable file"
    else:
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        why = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return f"cannot start {shlex.join(argv)!r}: {why}"


def signal_group(pid: int, sig: int) -> bool:
    """Send `sig` to the process group led by `pid`; False when the group is gone."""
    try:
        os.killpg(pid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def group_alive(pid: int) -> bool:
    return signal_group(pid, 0)


def _track(pid: int) -> None:
    from . import reaper  # imported when used: the raw servers need no part of the targets package

    reaper.track(pid)


def _untrack(pid: int) -> None:
    from . import reaper

    reaper.untrack(pid)


class Group:
    """A command run with `subprocess.Popen` in its own process group, its stderr kept as a bounded tail.

    Use as a context manager (or `start()` / `close()`): leaving ends the whole group, allowing it `grace`
    seconds after SIGTERM.
    """

    def __init__(self, argv: list[str], *, env: dict[str, str] | None = None, cwd=None,
                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, tail_bytes: int = 8192, grace: float = 1.0):
        self.argv, self.env, self.cwd, self.stdin, self.stdout = list(argv), env, cwd, stdin, stdout
        self.tail_bytes, self.grace = tail_bytes, grace
        self.proc: subprocess.Popen | None = None
        self._stderr = tempfile.TemporaryFile()  # a file, not a pipe: nobody has to drain it

    def start(self) -> "Group":
        """Start the command; OSError or ValueError when it cannot be."""
        self.proc = subprocess.Popen(self.argv, stdin=self.stdin, stdout=self.stdout, stderr=self._stderr,
                                     env=self.env, cwd=self.cwd, start_new_session=True)
        _track(self.proc.pid)
        return self

    def _started(self) -> subprocess.Popen:
        assert self.proc is not None, "the group is asked about after start()"
        return self.proc

    @property
    def pid(self) -> int:
        return self._started().pid

    @property
    def returncode(self) -> int | None:
        return self._started().poll()

    def wait_listening(self, port: int, timeout: float = 30.0, host: str = "127.0.0.1") -> bool:
        return wait_for_port(port, self._started(), timeout, host)

    def stderr_tail(self, lines: int = 3) -> str:
        if self._stderr.closed:
            return ""
        end = self._stderr.seek(0, 2)
        self._stderr.seek(max(0, end - self.tail_bytes))
        return stderr_tail(self._stderr.read(), lines)

    def stop(self, grace: float | None = None) -> int | None:
        """End the group (SIGTERM, `grace` seconds, SIGKILL); the leader's exit code."""
        proc, grace = self.proc, self.grace if grace is None else grace
        if proc is None:
            return None
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if proc.poll() is not None and not group_alive(proc.pid):
                break
            signal_group(proc.pid, sig)
            try:
                proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                pass
        signal_group(proc.pid, signal.SIGKILL)  # leave no grandchild behind
        _untrack(proc.pid)
        return proc.poll()

    def close(self) -> None:
        self.stop()
        self._stderr.close()

    def __enter__(self) -> "Group":
        return self.start() if self.proc is None else self

    def __exit__(self, *exc) -> None:
        self.close()


def spawn(argv: list[str], **kw) -> Group:
    """A started `Group` (see there)."""
    return Group(argv, **kw).start()


async def open_group(argv: list[str], **kw):
    """`anyio.open_process` in a new session, registered with the reaper; stop it with `stop_group`."""
    import anyio

    proc = await anyio.open_process(argv, start_new_session=True, **kw)
    _track(proc.pid)
    return proc


async def stop_group(proc, grace: float = 1.0) -> int | None:
    """End an anyio Process's group (SIGTERM, `grace` seconds, SIGKILL); the leader's exit code if known."""
    import anyio

    for sig in (signal.SIGTERM, signal.SIGKILL):
        if proc.returncode is not None and not group_alive(proc.pid):
            break
        signal_group(proc.pid, sig)
        with anyio.move_on_after(grace):
            await proc.wait()
    signal_group(proc.pid, signal.SIGKILL)  # leave no grandchild behind
    _untrack(proc.pid)
    return proc.returncode


# ------------------------------------------------------------------------------------------ JSON-RPC peers

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR = -32700, -32600, -32601, -32602, -32603

Handler = Callable[[dict], list]  # one request object -> the messages to write (none for notifications)
Note = Callable[[str, str, Any], None]  # (problem, raw text, parsed value or None)


class RpcError(Exception):
    """A JSON-RPC error for a handler to raise; `response(id)` is the message that answers with it."""

    def __init__(self, code: int, message: str, data: Any = None):
        super().__init__(message)
        self.code, self.message, self.data = code, message, data

    def error(self) -> dict:
        return {"code": self.code, "message": self.message, **({"data": self.data} if self.data is not None else {})}

    def response(self, rid: Any) -> dict:
        return {"jsonrpc": "2.0", "id": rid, "error": self.error()}


def answer(value: Any, handle: Handler, note: Note | None = None, raw: str = "") -> list[dict]:
    """The messages to write for one parsed JSON value: a request object goes to `handle`."""
    if isinstance(value, dict):
        return handle(value)
    if isinstance(value, list) and value:  # a batch (JSON-RPC 2.0): each item on its own
        return [out for item in value for out in answer(item, handle, note, raw)]
    if note:
        note("not an object", raw, value)
    return [RpcError(INVALID_REQUEST, "Invalid Request: not a JSON object").response(None)]


def _not_json(constant: str):
    raise ValueError(f"{constant} is not JSON")


def strict_loads(text: str | bytes) -> Any:
    """json.loads, refusing what Python's parser takes and JSON does not (RFC 8259 section 6): the tokens NaN,
    Infinity and -Infinity. A peer that writes one has sent no JSON, and a report that kept it as a float would be
    no JSON either."""
    return json.loads(text, parse_constant=_not_json)


def _parse(line: str | bytes, note: Note | None) -> tuple[Any, str, dict | None]:
    """(value, raw text for notes, the -32700 response when the line is not JSON)."""
    raw = (line.decode("utf-8", "replace") if isinstance(line, bytes) else line)[:200]
    try:
        return strict_loads(line), raw, None
    except ValueError:
        if note:
            note("not JSON", raw, None)
        return None, raw, RpcError(PARSE_ERROR, "Parse error").response(None)


def answer_line(line: str | bytes, handle: Handler, note: Note | None = None) -> list[dict]:
    """The messages to write for one received line."""
    value, raw, failed = _parse(line, note)
    return [failed] if failed else answer(value, handle, note, raw)


def dumps(message: Any) -> str:
    return json.dumps(message, ensure_ascii=False)


def serve_stdio(handle: Handler, note: Note | None = None, stdin=None, stdout=None) -> None:
    """Newline-delimited JSON-RPC until stdin closes: one JSON line per message written, flushed per line read."""
    stdin, stdout = stdin or sys.stdin, stdout or sys.stdout
    for line in stdin:
        line = line.strip()
        if not line:
            continue
        for out in answer_line(line, handle, note):
            stdout.write(dumps(out) + "\n")
        stdout.flush()


def answer_http(method: str, path: str, body: bytes, handle: Handler, note: Note | None = None,
                session: str | None = None) -> tuple[int, dict[str, str], bytes]:
    """(status, headers, body) for one Streamable HTTP request to /mcp, JSON responses only.

    No server-initiated stream (GET is 405, as the transport allows); DELETE ends nothing and says 200.
    A POST carrying only notifications or responses is 202; a body that is not a request is 400 with
    the JSON-RPC error. Messages a handler writes before its response (requests of its own) have no
    place in a JSON answer and are dropped.
    """
    if path.split("?")[0] != "/mcp":
        return 404, {}, b""
    if method == "GET":
        return 405, {"Allow": "POST, DELETE"}, b""
    if method == "DELETE":
        return 200, {}, b""
    if method != "POST":
        return 405, {"Allow": "POST, DELETE"}, b""
    headers = {"Content-Type": "application/json"}
    value, raw, failed = _parse(body or b"null", note)
    if failed or not (isinstance(value, dict) or isinstance(value, list) and value):
        return 400, headers, dumps(failed or answer(value, handle, note, raw)[0]).encode()
    out = [m for m in answer(value, handle, note, raw) if "method" not in m]
    if not out:
        return 202, {}, b""
    if session:
        headers["Mcp-Session-Id"] = session
    return 200, headers, dumps(out if isinstance(value, list) else out[-1]).encode()


def serve_http(handle: Handler, port: int, host: str = "127.0.0.1", *, note: Note | None = None,
               session: str | None = None, name: str = "server") -> None:
    """Serve `answer_http` on host:port with the standard library until interrupted, one message at a time."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    lock = threading.Lock()  # one message at a time, as on stdio: handlers keep state

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body leave in separate writes: no 40 ms delayed-ACK stall

        def log_message(self, *args):  # keep stderr for real problems
            pass

        def _answer(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0)) if self.command == "POST" else b""
            with lock:
                status, headers, payload = answer_http(self.command, self.path, body, handle, note, session)
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            if payload:
                self.wfile.write(payload)

        do_GET = do_POST = do_DELETE = _answer

    httpd = ThreadingHTTPServer((host, port), Handler)
    httpd.daemon_threads = True
    print(f"{name} on http://{host}:{httpd.server_port}/mcp", file=sys.stderr, flush=True)
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass
