"""Docker target: the server runs in a container the suite creates, attaches to, and removes.

stdio goes through the container's attached stdin/stdout (the Docker SDK's
attach socket, a multiplexed stream: 8-byte frame headers say stdout or
stderr and the length). The container is created with a label, optionally
without network (`network=False`, for servers that should not phone home),
and removed when the connection closes, whatever happened; containers still
present at interpreter exit (Ctrl-C) are removed by the reaper below.

Docker's SDK is synchronous: its calls run in worker threads; the attach
socket is read and written non-blocking on the event loop.
"""

from __future__ import annotations

import atexit
import socket
import struct
from typing import Any

import anyio
from anyio.abc import TaskGroup

from ..core.model import describe
from .base import Connection, TargetUnavailable, WireEvent, clip, json_line, now
from .peerkit import StderrTail
from .stdio import LineSplitter

LABEL = "mcp-ext-conformance"
# A server under test runs confined by default: no Linux capabilities, no privilege gain through setuid
# binaries, and memory, process-count and CPU limits, so a hostile image cannot take the host down with it.
MEMORY_LIMIT = "1g"
PIDS_LIMIT = 512
CPU_LIMIT = 1.0  # CPUs' worth of time (Docker's --cpus): a busy loop gets one core, the suite keeps the rest
CONFINED = {"cap_drop": ["ALL"], "security_opt": ["no-new-privileges"], "mem_limit": MEMORY_LIMIT,
            "pids_limit": PIDS_LIMIT, "nano_cpus": int(CPU_LIMIT * 1e9)}
_live: set[str] = set()
_ending = False  # set by _remove_leftovers: the interpreter is leaving


def _own(cid: str) -> None:
    """Track a container for removal at exit; once that has run, remove it at once (the recording thread
    may create one while the main thread is already leaving)."""
    _live.add(cid)
    if _ending:
        _remove_leftovers()


def _client():
    import docker

    return docker.from_env(timeout=30)


def _client_with(image: str):
    """A Docker client on an engine that has `image`, or TargetUnavailable saying which is missing."""
    import docker

    try:
        client = _client()
        client.images.get(image)
    except docker.errors.ImageNotFound:
        raise TargetUnavailable(f"no image {image!r} on this Docker engine (build or load it first)") from None
    except docker.errors.DockerException as exc:
        raise TargetUnavailable(f"no Docker engine reachable ({describe(exc)})") from None
    return client


@atexit.register
def _remove_leftovers() -> None:
    global _ending
    _ending = True
    if not _live:
        return
    try:
        client = _client()
        for cid in list(_live):
            try:
                client.api.remove_container(cid, force=True)
            except Exception:
                pass
            _live.discard(cid)
    except Exception:
        pass


class PublishedContainer:
    """A container serving Streamable HTTP on `port`, published on a free loopback port, for a whole run.

    `url` is where the suite reaches it (http://127.0.0.1:<host port><path>). The container is removed on
    exit from the `with` block, whatever happened.
    """

    def __init__(self, image: str, port: int, *, path: str = "/mcp", command: list[str] | None = None,
                 env: dict[str, str] | None = None, start_timeout: float = 30.0):
        self.image, self.port, self.path, self.command, self.env = image, port, path, command, env or {}
        self.start_timeout = start_timeout
        self.container_id: str | None = None
        self.url: str | None = None

    def __enter__(self) -> "PublishedContainer":
        import time

        client = _client_with(self.image)
        container = client.containers.run(self.image, self.command, detach=True, environment=self.env,
                                          labels={LABEL: "1"}, ports={f"{self.port}/tcp": ("127.0.0.1", None)},
                                          **CONFINED)
        self.container_id = container.id
        _own(container.id)
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            container.reload()
            if container.status == "exited":
                tail = container.logs(tail=5).decode("utf-8", "replace").strip().replace("\n", " | ")
                self.__exit__()
                raise TargetUnavailable(f"the container exited before serving HTTP: {clip(tail, 300)}")
            bindings = (container.attrs.get("NetworkSettings") or {}).get("Ports", {}).get(f"{self.port}/tcp")
            if bindings:
                host_port = int(bindings[0]["HostPort"])
                if _answers_http(f"http://127.0.0.1:{host_port}{self.path}"):
                    self.url = f"http://127.0.0.1:{host_port}{self.path}"
                    return self
            time.sleep(0.2)
        self.__exit__()
        raise TargetUnavailable(f"the container published no port {self.port} within {self.start_timeout:g} s")

    def __exit__(self, *exc) -> None:
        if self.container_id:
            try:
                _client().api.remove_container(self.container_id, force=True)
            except Exception:
                pass
            _live.discard(self.container_id)
            self.container_id = None


def _answers_http(url: str) -> bool:
    """Any HTTP answer counts: docker-proxy accepts TCP before the server inside listens."""
    import httpx

    try:
        with httpx.Client(timeout=1.0, trust_env=False) as client:
            with client.stream("GET", url, headers={"Accept": "text/event-stream"}):
                return True
    except httpx.HTTPError:
        return False


class DockerConnection(Connection):
    kind = "docker"

    def __init__(self, image: str, *, command: list[str] | None = None, env: dict[str, str] | None = None,
                 network: bool = True, grace: float = 1.0, **kw):
        super().__init__(**kw)
        self.image, self.command, self.env, self.network, self.grace = image, command, env or {}, network, grace
        self.container_id: str | None = None
        self._sock: socket.socket | None = None
        self._attach: Any = None  # docker's attach socket (a SocketIO around the raw socket)
        self._stderr = StderrTail()
        self._tg: TaskGroup | None = None
        # Requests of a profile go out concurrently: one writer at a time, so lines never interleave (and
        # only one task waits on the socket, as anyio requires).
        self._write_lock = anyio.Lock()

    async def __aenter__(self) -> "DockerConnection":
        try:
            self.container_id, self._attach = await anyio.to_thread.run_sync(self._create)
        except TargetUnavailable:
            raise
        except Exception as exc:
            raise TargetUnavailable(f"cannot start a container of {self.image!r}: {describe(exc)}") from None
        self._sock = self._attach._sock
        self._sock.setblocking(False)
        self._tg = tg = anyio.create_task_group()
        await tg.__aenter__()
        tg.start_soon(self._read)
        return self

    def _socket(self) -> socket.socket:
        """The attached socket; asked only by sends, the reader and the exit, which follow `__aenter__`."""
        assert self._sock is not None, "the connection is used after __aenter__"
        return self._sock

    def _create(self):
        client = _client_with(self.image)
        container = client.api.create_container(
            self.image, command=self.command, stdin_open=True, tty=False, environment=self.env,
            labels={LABEL: "1"}, network_disabled=not self.network,
            host_config=client.api.create_host_config(network_mode="none" if not self.network else None, **CONFINED))
        cid = container["Id"]
        _own(cid)
        attach = client.api.attach_socket(cid, params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1})
        client.api.start(cid)
        return cid, attach

    async def __aexit__(self, *exc) -> None:
        with anyio.CancelScope(shield=True):
            try:
                self._socket().shutdown(socket.SHUT_WR)  # stdin EOF: the polite end for a stdio server
            except OSError:
                pass
            with anyio.move_on_after(self.grace):
                while self._dead is None:
                    await anyio.sleep(0.05)
        assert self._tg is not None, "__aexit__ follows a successful __aenter__"
        self._tg.cancel_scope.cancel()
        await self._tg.__aexit__(None, None, None)
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(self._remove)

    def _remove(self) -> None:
        try:
            self._attach.close()
        except Exception:
            pass
        try:
            _client().api.remove_container(self.container_id, force=True)
        except Exception:
            pass
        _live.discard(self.container_id)

    async def _transmit(self, message: dict) -> None:
        data = json_line(message)
        view = memoryview(data)
        async with self._write_lock:
            while view:
                sock = self._socket()
                await anyio.wait_writable(sock)
                try:
                    sent = sock.send(view)
                except BlockingIOError:
                    continue
                view = view[sent:]

    async def _read(self) -> None:
        lines = LineSplitter(self.max_message_bytes)
        pending = bytearray()
        try:
            sock = self._socket()
            while True:
                await anyio.wait_readable(sock)
                try:
                    chunk = sock.recv(65536)
                except BlockingIOError:
                    continue
                except OSError:
                    break
                if not chunk:
                    break
                pending += chunk
                while len(pending) >= 8:  # one frame: stream type, 3 zero bytes, big-endian length
                    kind, size = pending[0], struct.unpack(">I", bytes(pending[4:8]))[0]
                    if len(pending) < 8 + size:
                        break
                    payload = bytes(pending[8:8 + size])
                    del pending[:8 + size]
                    if kind == 2:
                        self._stderr.add(payload)
                        continue
                    for piece in lines.feed(payload):
                        if piece[1] is not None:
                            self.wire.append(WireEvent(now(), "in", raw=piece[0], problem=piece[1]))
                        else:
                            await self._on_incoming(piece[0])
                if self._dead:  # closed by the suite (a flood): stop reading, the reason is recorded
                    break
        finally:
            tail = self._stderr.text()
            self._die("the container closed stdout" + (f"; stderr ends: {clip(tail, 300)}" if tail else ""))
