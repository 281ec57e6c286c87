"""stdio target: the suite starts the command and owns its process group.

Rules:
- The command runs in a new session (its own process group) with a scrubbed
  environment (`environment.scrubbed`), so closing the connection can end the
  whole tree, grandchildren included, and a user's secrets stay home.
- stdout is read as newline-delimited JSON-RPC, one message a line, each line
  capped at `max_message_bytes`: a longer line is recorded as a problem and
  skipped, so a flood cannot exhaust memory.
- stderr is drained into a bounded tail that failure reasons quote.
- Closing: stdin is closed (the polite end for stdio servers), then SIGTERM
  to the group after a grace period, then SIGKILL. Every group still alive at
  interpreter exit is killed too (`reaper`), which covers Ctrl-C.
"""

from __future__ import annotations

import shlex
import subprocess

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream, Process, TaskGroup

from ..core.model import describe
from . import prestart
from .base import Connection, TargetUnavailable, WireEvent, clip, json_line, now
from .environment import scrubbed
from .peerkit import StderrTail, cannot_start, open_group, stop_group

STDERR_TAIL_BYTES = 8192


def started_with(command: str | list[str], env: dict[str, str] | None) -> tuple[list[str], dict[str, str]]:
    """The argv and the environment a stdio target is started with: what a process started early is matched
    by (prestart.py)."""
    return (shlex.split(command) if isinstance(command, str) else list(command)), scrubbed(env)


class StdioConnection(Connection):
    kind = "stdio"

    def __init__(self, command: str | list[str], *, env: dict[str, str] | None = None, cwd: str | None = None,
                 grace: float = 1.0, **kw):
        super().__init__(**kw)
        self.argv, self.env = started_with(command, env)
        self.cwd = cwd
        self.grace = grace
        self.proc: Process | None = None
        self._stderr = StderrTail(STDERR_TAIL_BYTES)
        self._tg: TaskGroup | None = None
        self._write_lock = anyio.Lock()
        self._stderr_done = anyio.Event()

    # -- lifecycle -------------------------------------------------------------------------
    async def __aenter__(self) -> "StdioConnection":
        try:
            early = prestart.take(self.argv, self.env, self.cwd)  # started by the command line already
            if early is not None:
                self.proc = await prestart.adopt(early)  # type: ignore[assignment]
            else:
                self.proc = await open_group(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                             stderr=subprocess.PIPE, env=self.env, cwd=self.cwd)
        except (OSError, ValueError) as exc:
            raise TargetUnavailable(cannot_start(self.argv, exc)) from None
        self._tg = tg = anyio.create_task_group()
        await tg.__aenter__()
        tg.start_soon(self._read_stdout)
        tg.start_soon(self._read_stderr)
        return self

    async def __aexit__(self, *exc) -> None:
        with anyio.CancelScope(shield=True):
            await self._stop()
        assert self._tg is not None, "__aexit__ follows a successful __aenter__"
        self._tg.cancel_scope.cancel()
        await self._tg.__aexit__(None, None, None)
        if self.proc is not None:  # the process is gone: close its pipes inside the loop, not at garbage collection
            with anyio.CancelScope(shield=True), anyio.move_on_after(self.grace):
                await self.proc.aclose()

    async def _stop(self) -> None:
        proc = self.proc
        if proc is None:
            return
        if proc.stdin is not None:
            try:
                await proc.stdin.aclose()
            except Exception:
                pass
        with anyio.move_on_after(self.grace):
            await proc.wait()
        await stop_group(proc, self.grace)

    # -- transport --------------------------------------------------------------------------
    def _started(self) -> Process:
        """The process; asked only by sends and the readers, which follow `__aenter__` starting it."""
        assert self.proc is not None, "the connection is used after __aenter__"
        return self.proc

    def _stdin(self) -> ByteSendStream:
        stdin = self._started().stdin
        assert stdin is not None, "the process is started with stdin=PIPE"
        return stdin

    def _stdout(self) -> ByteReceiveStream:
        stdout = self._started().stdout
        assert stdout is not None, "the process is started with stdout=PIPE"
        return stdout

    async def _transmit(self, message: dict) -> None:
        data = json_line(message)
        async with self._write_lock:
            await self._stdin().send(data)

    async def _on_send_error(self, exc: BaseException) -> None:
        # A broken pipe usually means the process is gone: prefer the reason the
        # stdout reader gives (exit code, stderr tail) when it comes promptly.
        with anyio.move_on_after(1.0):
            while self._dead is None:
                await anyio.sleep(0.02)
        if self._dead is None:
            self._die(f"could not write to the server's stdin ({describe(exc)})")

    async def _read_stdout(self) -> None:
        lines = LineSplitter(self.max_message_bytes)
        try:
            while True:
                try:
                    chunk = await self._stdout().receive(65536)
                except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                    break
                await self._feed(lines, chunk)
                if self._dead:  # closed by the suite (a flood): stop reading, the reason is recorded
                    break
        finally:
            await self._on_stdout_closed()

    async def _feed(self, lines: "LineSplitter", chunk: bytes) -> None:
        for piece in lines.feed(chunk):
            if piece[1] is not None:
                self.wire.append(WireEvent(now(), "in", raw=piece[0], problem=piece[1]))
            else:
                await self._on_incoming(piece[0])

    async def _on_stdout_closed(self) -> None:
        code = None
        with anyio.move_on_after(0.5):
            code = await self._started().wait()
        with anyio.move_on_after(0.5):
            await self._stderr_done.wait()
        detail = f"exit code {code}" if code is not None else "still running"
        tail = self.stderr_tail()
        if tail:
            detail += f"; stderr ends: {clip(tail, 300)}"
        self._die(f"server closed stdout ({detail})")

    async def _read_stderr(self) -> None:
        await self._stderr.drain(self._started().stderr)
        self._stderr_done.set()

    def stderr_tail(self) -> str:
        return self._stderr.text()


class LineSplitter:
    """Newline-delimited messages from a byte stream, each capped at `limit` bytes.

    `feed` returns (line, None) for each complete line and (head, problem) for a
    line over the cap, whose rest is then skipped up to its newline: a flood or
    a giant message costs at most `limit` bytes of memory.
    """

    def __init__(self, limit: int):
        self.limit = limit
        self.buffer = bytearray()
        self.skipping = False

    def feed(self, chunk: bytes) -> list[tuple[bytes, None] | tuple[str, str]]:
        out: list[tuple[bytes, None] | tuple[str, str]] = []
        start = 0
        while True:
            nl = chunk.find(b"\n", start)
            if nl < 0:
                if not self.skipping:
                    self.buffer += chunk[start:]
                    if len(self.buffer) > self.limit:
                        head = clip(bytes(self.buffer[:200]).decode("utf-8", "replace"), 200)
                        out.append((head, f"a message over {self.limit} bytes (skipped)"))
                        self.buffer.clear()
                        self.skipping = True
                return out
            piece, start = chunk[start:nl], nl + 1
            if self.skipping:
                self.skipping = False
                continue
            self.buffer += piece
            line = bytes(self.buffer).strip()
            self.buffer.clear()
            if line:
                out.append((line, None))
