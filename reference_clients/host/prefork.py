"""Start-up paid once for many runs of the reference host: a fork server.

Importing the mcp SDK and openai is most of what a short conversation costs the reference host (about 1.4 s of
CPU of 1.55 s, for a scenario of a few turns). `python -m reference_clients.host --prefork SOCKET` imports them
once, listens on the Unix socket SOCKET, and forks a child for every host started with
`MCPX_HOST_PREFORK=SOCKET` in its environment: that host (the *starter*) sends its stdin, stdout and stderr, its
environment, its working directory and its arguments over the socket, and the child runs the host on them
exactly as the starter would have. The starter waits, and exits with the child's exit code.

Nothing changes for whoever runs the host: the child reads the starter's stdin and writes its stdout and
stderr, its environment is the starter's (and so is the environment of the servers it starts), and the child
ends when the starter does: the starter's connection closing (it was killed) ends the child's process group
(SIGTERM, 3 s, SIGKILL), and a child outlives no fork server (PR_SET_PDEATHSIG). When no fork server answers
(none was started, or it is gone), the starter runs the host itself after all.

Whoever can connect to SOCKET can run the host with an environment of their choosing: keep it in a directory only
its user can enter (the demo's is a fresh 0700 temporary directory). A request that is not one is dropped, and the
server goes on. The demo starts one for its host role (conformance/cli.py). The protocol is private to this package: a 4-byte
big-endian length and that many bytes of JSON (`argv`, `cwd`, `env`), sent with the three descriptors
(SCM_RIGHTS); then 4 bytes back, the child's exit code (128 + N for a signal).
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import socket
import struct
import sys
import time

ENV = "MCPX_HOST_PREFORK"
_CONNECT_FOR = 2.0  # seconds a starter waits for a fork server that is still starting up (its socket not bound yet)
_STOP_GRACE = 3.0


# ------------------------------------------------------------------------------------------ the starter

def hand_over(path: str) -> int | None:
    """Run this host as a child of the fork server at `path`: the child's exit code, or None when no fork server
    answers (the caller then runs the host itself)."""
    sock = _connect(path)
    if sock is None:
        return None
    payload = json.dumps({"argv": sys.argv, "cwd": os.getcwd(), "env": dict(os.environ)}).encode()
    try:
        socket.send_fds(sock, [struct.pack(">I", len(payload)) + payload], [0, 1, 2])
    except OSError:
        return None

    def stop(signum, _frame) -> None:  # the child's process group ends when this connection closes
        sock.close()
        os._exit(128 + signum)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, stop)
    status = _read_exactly(sock, 4)
    if status is None:
        print("reference host: the fork server went away during the run", file=sys.stderr)
        return 1
    return struct.unpack(">i", status)[0]


def _connect(path: str) -> socket.socket | None:
    deadline = time.monotonic() + _CONNECT_FOR
    while True:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(path)
            return sock
        except (FileNotFoundError, ConnectionRefusedError):
            sock.close()
            if time.monotonic() >= deadline or not os.path.isdir(os.path.dirname(path) or "."):
                return None
            time.sleep(0.02)
        except OSError:
            sock.close()
            return None


def _read_exactly(sock: socket.socket, size: int) -> bytes | None:
    data = b""
    while len(data) < size:
        try:
            chunk = sock.recv(size - len(data))
        except OSError:
            return None
        if not chunk:
            return None
        data += chunk
    return data


# ------------------------------------------------------------------------------------------ the fork server

def serve(path: str, run_host) -> int:
    """Preload the host's imports, then fork `run_host()` (an exit code) for every starter, until SIGTERM or SIGINT.
    Single-threaded, with no event loop, so that every fork is safe."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    try:
        listener.bind(path)
    except OSError as exc:  # e.g. a path past the 107 bytes AF_UNIX allows: starters run the host themselves
        print(f"reference host fork server: cannot listen on {path}: {exc}", file=sys.stderr)
        return 2
    # Listening before the imports: a starter that comes meanwhile waits in the backlog, not in a retry loop.
    listener.listen(64)
    _preload()
    stopping: list[int] = []
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda signum, _frame: stopping.append(signum))
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    children: dict[int, socket.socket] = {}  # pid -> its starter's connection
    ending: dict[int, float] = {}  # pid -> when it gets SIGKILL: its starter is gone, SIGTERM was sent
    try:
        while not stopping:
            for key, _ in selector.select(0.05):
                if key.fileobj is listener:
                    _accept(listener, selector, children, run_host)
                else:  # a starter's connection is readable only when it closed: its host is to end
                    conn = key.fileobj
                    assert isinstance(conn, socket.socket)
                    selector.unregister(conn)
                    for pid, held in list(children.items()):
                        if held is conn:
                            _signal_group(pid, signal.SIGTERM)
                            ending[pid] = time.monotonic() + _STOP_GRACE
            _reap(children, selector)
            for pid, when in list(ending.items()):
                if pid not in children:
                    del ending[pid]
                elif time.monotonic() >= when:
                    _signal_group(pid, signal.SIGKILL)
                    del ending[pid]
    finally:
        _stop_children(children, selector)
        listener.close()
        try:
            os.unlink(path)
        except OSError:
            pass
    return 0


def _preload() -> None:
    # What a host imports before its first turn; modules imported here are shared by every child.
    import ctypes  # noqa: F401 - _die_with_parent's

    import openai  # noqa: F401
    from mcp.client import stdio, streamable_http  # noqa: F401

    from . import host, interceptors, llm, logic, servers  # noqa: F401


def _accept(listener, selector, children: dict, run_host) -> None:
    conn, _ = listener.accept()
    conn.settimeout(5.0)  # a starter sends everything at once; one that does not is dropped
    fds: list[int] = []
    try:
        head, fds, _flags, _addr = socket.recv_fds(conn, 4 + 65536, 3)
        if len(head) < 4 or len(fds) != 3:
            raise ValueError("no request")
        size, have = struct.unpack(">I", head[:4])[0], head[4:]
        rest = _read_exactly(conn, size - len(have)) if size > len(have) else b""
        if rest is None:
            raise ValueError("a short request")
        request = json.loads(have + rest)
        request["env"].pop(ENV, None)
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
        print(f"reference host fork server: a starter was dropped: {exc}", file=sys.stderr)
        for fd in fds:
            os.close(fd)
        conn.close()
        return
    pid = os.fork()
    if pid == 0:  # the child: becomes the host the starter would have been
        code = 1
        try:
            selector.close()
            listener.close()
            for other in children.values():
                other.close()
            conn.close()
            code = _become(request, fds, run_host)
        finally:
            os._exit(code)
    for fd in fds:  # the parent keeps no end of the starter's pipes: the suite must see them close
        os.close(fd)
    conn.setblocking(False)
    children[pid] = conn
    selector.register(conn, selectors.EVENT_READ)


def _become(request: dict, fds: list[int], run_host) -> int:
    os.setpgid(0, 0)  # its own group: the servers it starts end with it
    _die_with_parent()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.argv = list(request["argv"])
    try:
        code = run_host()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:  # noqa: BLE001 - the host's own handler prints what it can; the code says it failed
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    return code


def _die_with_parent() -> None:
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the fork server's stop ends its children instead
        pass
    if os.getppid() == 1:  # the fork server died before the call above
        os._exit(1)


def _reap(children: dict, selector) -> None:
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        conn = children.pop(pid, None)
        if conn is None:
            continue
        code = os.waitstatus_to_exitcode(status)
        try:
            selector.unregister(conn)
        except (KeyError, ValueError):
            pass
        try:
            conn.setblocking(True)
            conn.sendall(struct.pack(">i", code if code >= 0 else 128 - code))
        except OSError:
            pass
        conn.close()


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _stop_children(children: dict, selector) -> None:
    for pid in children:
        _signal_group(pid, signal.SIGTERM)
    deadline = time.monotonic() + _STOP_GRACE
    while children and time.monotonic() < deadline:
        _reap(children, selector)
        time.sleep(0.02)
    for pid in list(children):
        _signal_group(pid, signal.SIGKILL)
    while children:
        try:
            pid, _ = os.waitpid(-1, 0)
        except ChildProcessError:
            break
        conn = children.pop(pid, None)
        if conn is not None:
            conn.close()
