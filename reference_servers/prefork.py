"""Start-up paid once for many runs of a reference implementation: a fork server.

Importing the mcp SDK is most of what a short run of a reference implementation costs (the reference server:
about 1.3 s of CPU of 1.4 s for a session of a few calls; the reference host, with openai too: 1.4 s of 1.55 s).
A fork server imports what it is given once, listens on a Unix socket, and forks a child for every process of
the same implementation started with that socket's path in its environment (the implementation's own variable:
`MCPX_HOST_PREFORK` for the reference host, `MCPX_SERVER_PREFORK` for the reference server). That process (the
*starter*) sends its stdin, stdout and stderr, its environment, its working directory and its arguments over the
socket, and the child runs the implementation on them exactly as the starter would have. The starter waits, and
exits with the child's exit code.

Nothing changes for whoever runs the implementation: the child reads the starter's stdin and writes its stdout
and stderr, its environment is the starter's (and so is the environment of what it starts), and the child ends
when the starter does: the starter's connection closing (it was killed) ends the child's process group (SIGTERM,
3 s, SIGKILL), and a child outlives no fork server (PR_SET_PDEATHSIG). When no fork server answers (none was
started, or it is gone), or the one that answers runs other code (another installation, another interpreter),
the starter runs the implementation itself after all.

Whoever can connect to the socket can run the implementation with an environment of their choosing: keep it in a
directory only its user can enter (the demo's is a fresh 0700 temporary directory). A request that is not one
is dropped, and the server goes on. The protocol is private to these packages: a 4-byte big-endian length and
that many bytes of JSON (`argv`, `cwd`, `env`, and `code`: which files and which interpreter the starter runs),
sent with the three descriptors (SCM_RIGHTS); then 4 bytes back, the child's exit code (128 + N for a signal),
or -1 when this fork server runs other code than the starter.
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

REFUSED = -1  # the answer to a starter whose code is not this fork server's: it runs by itself
_CONNECT_FOR = 2.0  # seconds a starter waits for a fork server that is still starting up (its socket not bound yet)
_STOP_GRACE = 3.0


# ------------------------------------------------------------------------------------------ the starter

def code_identity() -> str:
    """Which code a process runs: this file and the interpreter's environment. A starter is served only by a fork
    server with the same, so that a starter of another installation (a built wheel, another virtualenv) never
    runs this tree's code."""
    return f"{os.path.realpath(__file__)}|{os.path.realpath(sys.prefix)}|{sys.version}"


def hand_over(path: str, name: str) -> None:
    """Run this process's implementation (`name`, for messages) as a child of the fork server at `path`, and exit
    with the child's exit code; return when no fork server answers or it runs other code (the caller then runs
    the implementation itself)."""
    code = _served(path, name)
    if code is not None:
        sys.exit(code)


def _served(path: str, name: str) -> int | None:
    sock = _connect(path)
    if sock is None:
        return None
    payload = json.dumps({"argv": sys.argv, "cwd": os.getcwd(), "env": dict(os.environ),
                          "code": code_identity()}).encode()
    try:
        socket.send_fds(sock, [struct.pack(">I", len(payload)) + payload], [0, 1, 2])
    except OSError:
        return None

    def stop(signum, _frame) -> None:  # the child's process group ends when this connection closes
        sock.close()
        os._exit(128 + signum)

    before = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
    status = _read_exactly(sock, 4)
    if status is None:
        print(f"{name}: the fork server went away during the run", file=sys.stderr)
        return 1
    code = struct.unpack(">i", status)[0]
    if code == REFUSED:
        for sig, handler in before.items():
            signal.signal(sig, handler)
        sock.close()
        return None
    return code


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

def serve(path: str, name: str, env: str, preload, run) -> int:
    """Call `preload()` (the implementation's imports), then fork `run()` (an exit code) for every starter, until
    SIGTERM or SIGINT. `env` is the variable starters find the socket in: a child's environment goes without it.
    Single-threaded, with no event loop, so that every fork is safe."""
    try:
        listener = _listen(path)
    except OSError as exc:  # e.g. a path past the 107 bytes AF_UNIX allows: starters run by themselves
        print(f"{name} fork server: cannot listen on {path}: {exc}", file=sys.stderr)
        return 2
    preload()
    identity = code_identity()
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
                    _accept(listener, selector, children, run, (name, env, identity))
                else:  # a starter's connection is readable only when it closed: its child is to end
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


def _listen(path: str) -> socket.socket:
    """A socket listening at `path`, which exists only once it listens: bound under a temporary name in the same
    directory, then renamed. (Bound at `path` itself, a connect between bind and listen is refused, and whoever
    waits for the file to appear would meet that.) Listening before the imports: a starter that comes meanwhile
    waits in the backlog, not in a retry loop."""
    temporary = os.path.join(os.path.dirname(path), f".{os.getpid()}.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        _unlink(temporary)
        try:
            listener.bind(temporary)
        except OSError:  # e.g. the temporary name is past AF_UNIX's length where `path` is not: bind in place
            _unlink(path)
            listener.bind(path)
            listener.listen(64)
            return listener
        listener.listen(64)
        os.replace(temporary, path)  # atomic: a stale socket at `path` is replaced, never missing in between
    except OSError:
        listener.close()
        _unlink(temporary)
        raise
    return listener


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _accept(listener, selector, children: dict, run, served: tuple[str, str, str]) -> None:
    name, env, identity = served
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
        request["env"].pop(env, None)
        other_code = request["code"] != identity
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
        print(f"{name} fork server: a starter was dropped: {exc}", file=sys.stderr)
        _turn_away(conn, fds, b"")
        return
    if other_code:  # another installation's starter: it runs its own code
        _turn_away(conn, fds, struct.pack(">i", REFUSED))
        return
    for stream in (sys.stdout, sys.stderr):  # nothing of the server's own output may be written twice
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
    pid = os.fork()
    if pid == 0:  # the child: becomes the process the starter would have been
        code = 1
        try:
            selector.close()
            listener.close()
            for other in children.values():
                other.close()
            conn.close()
            code = _become(request, fds, run)
        finally:
            os._exit(code)
    for fd in fds:  # the parent keeps no end of the starter's pipes: the suite must see them close
        os.close(fd)
    conn.setblocking(False)
    children[pid] = conn
    selector.register(conn, selectors.EVENT_READ)


def _turn_away(conn: socket.socket, fds: list[int], answer: bytes) -> None:
    """End a starter's connection without a child: `answer` sent, its descriptors closed."""
    for fd in fds:
        os.close(fd)
    try:
        conn.sendall(answer)
    except OSError:
        pass
    conn.close()


def _become(request: dict, fds: list[int], run) -> int:
    os.setpgid(0, 0)  # its own group: what it starts ends with it
    _die_with_parent()
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # as in any Python process: KeyboardInterrupt
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.argv = list(request["argv"])
    _std_streams()
    # Ends as the interpreter ends a program: sys.exit(None) is 0, sys.exit("why") prints why and is 1, and an
    # uncaught exception prints its traceback and is 1.
    try:
        code = run()
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or 0
        else:
            print(exc.code, file=sys.stderr)
            code = 1
    except BaseException:  # noqa: BLE001
        import traceback

        traceback.print_exc()
        code = 1
    code = code if isinstance(code, int) else 0  # run() returned None: a program that ran to its end
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    return code


def _std_streams() -> None:
    """sys.stdin, sys.stdout and sys.stderr on the starter's descriptors, buffered as the interpreter would have
    buffered them for the starter: write-through under PYTHONUNBUFFERED, else stdout line-buffered only on a
    terminal and stderr line-buffered (the fork server's own streams were set up for its own environment)."""
    import io

    unbuffered = bool(os.environ.get("PYTHONUNBUFFERED"))
    encoding = sys.stdout.encoding if sys.stdout else "utf-8"
    errors = sys.stdout.errors if sys.stdout else "strict"
    sys.stdin = io.TextIOWrapper(io.open(0, "rb", closefd=False), encoding=encoding, errors=errors)
    for fd, name in ((1, "stdout"), (2, "stderr")):
        raw = io.open(fd, "wb", buffering=0 if unbuffered else -1, closefd=False)
        stream = io.TextIOWrapper(raw, encoding=encoding, errors=errors if fd == 1 else "backslashreplace",
                                  line_buffering=not unbuffered and (fd == 2 or os.isatty(fd)),
                                  write_through=unbuffered)
        setattr(sys, name, stream)
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr


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
