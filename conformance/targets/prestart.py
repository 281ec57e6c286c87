"""A stdio target started while the suite is still loading, handed to the first connection that asks for it.

The command line knows the target once its arguments are read; the recording opens its first connection about
a quarter of a second later (pytest, the checks and jsonschema are imported in between). A server's own start-up
is often a second of imports of its own, on the other core. So the command line starts the process at once
(`start`) and the connection that would have started the same command, with the same environment, in the same
directory takes it (`take`) and drives it through `Adopted`, as one it started itself: the same pipes, the same
process group (a new session, tracked by the reaper from the moment it exists), the same ending. A process no
connection takes is ended with the suite's other groups when the interpreter leaves (reaper.py), and one that
could not be started is reported by the connection that asks for it, as a start of its own would be.
"""

from __future__ import annotations

import os
import subprocess
import threading

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream

Key = tuple[tuple[str, ...], tuple[tuple[str, str], ...], str | None]

_lock = threading.Lock()
_waiting: dict[Key, subprocess.Popen | OSError | ValueError] = {}


def _key(argv: list[str], env: dict[str, str], cwd: str | None) -> Key:
    return tuple(argv), tuple(sorted(env.items())), cwd


def start(argv: list[str], env: dict[str, str], cwd: str | None = None) -> None:
    """Start `argv` now, in a session of its own, for a connection to take; an error starting it is kept for
    that connection to report."""
    from . import reaper

    outcome: subprocess.Popen | OSError | ValueError
    try:
        outcome = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   env=env, cwd=cwd, start_new_session=True)
    except (OSError, ValueError) as exc:  # ValueError: a NUL in an argument
        outcome = exc
    else:
        reaper.track(outcome.pid)
    with _lock:
        _waiting[_key(argv, env, cwd)] = outcome


def take(argv: list[str], env: dict[str, str], cwd: str | None = None) -> subprocess.Popen | None:
    """The process started for exactly this command, environment and directory, once; None when there is none
    (every later connection starts its own). Raises the OSError or ValueError its start ended with."""
    with _lock:
        proc = _waiting.pop(_key(argv, env, cwd), None)
    if isinstance(proc, (OSError, ValueError)):
        raise proc
    return proc


async def adopt(proc: subprocess.Popen) -> "Adopted":
    """`proc`'s pipes on the running event loop (asyncio's), as the streams anyio's own processes have."""
    import asyncio

    loop = asyncio.get_running_loop()
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None, "started with pipes"
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, proc.stdin)
    stdin = _SendPipe(asyncio.StreamWriter(transport, protocol, None, loop))
    stdout, stderr = await _receive_pipe(loop, proc.stdout), await _receive_pipe(loop, proc.stderr)
    return Adopted(proc, stdin, stdout, stderr)


async def _receive_pipe(loop, pipe) -> "_ReceivePipe":
    import asyncio

    reader = asyncio.StreamReader(loop=loop)
    transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader, loop=loop), pipe)
    return _ReceivePipe(reader, transport)


class _SendPipe(ByteSendStream):
    def __init__(self, writer):
        self._writer = writer
        self._closed = False

    async def send(self, item: bytes) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        try:
            self._writer.write(item)
            await self._writer.drain()
        except (BrokenPipeError, ConnectionResetError, RuntimeError) as exc:  # RuntimeError: the transport closed
            raise anyio.BrokenResourceError from exc

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            self._writer.close()
            try:
                await self._writer.wait_closed()
            except (BrokenPipeError, ConnectionResetError):
                pass


class _ReceivePipe(ByteReceiveStream):
    def __init__(self, reader, transport):
        self._reader = reader
        self._transport = transport
        self._closed = False

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if self._closed:
            raise anyio.ClosedResourceError
        try:
            data = await self._reader.read(max_bytes)
        except (ConnectionResetError, BrokenPipeError) as exc:
            raise anyio.BrokenResourceError from exc
        if not data:
            raise anyio.EndOfStream
        return data

    async def aclose(self) -> None:
        self._closed = True
        self._transport.close()


class Adopted:
    """What StdioConnection and peerkit.stop_group use of an anyio Process, for a process started earlier."""

    def __init__(self, proc: subprocess.Popen, stdin: _SendPipe, stdout: _ReceivePipe, stderr: _ReceivePipe):
        self._proc = proc
        self.stdin, self.stdout, self.stderr = stdin, stdout, stderr

    @property
    def pid(self) -> int:
        return self._proc.pid

    @property
    def returncode(self) -> int | None:
        return self._proc.poll()

    async def wait(self) -> int:
        """The exit code, once the process has ended: a pidfd becomes readable then (Linux); else polled."""
        if self._proc.poll() is not None:
            return self._proc.returncode
        try:
            fd = os.pidfd_open(self._proc.pid)
        except (AttributeError, OSError):
            while self._proc.poll() is None:
                await anyio.sleep(0.05)
            return self._proc.returncode
        try:
            await anyio.wait_readable(fd)
        finally:
            os.close(fd)
        return self._proc.wait()

    async def aclose(self) -> None:
        for stream in (self.stdin, self.stdout, self.stderr):
            await stream.aclose()
        await self.wait()
