"""The reference server's fork server (reference_servers/prefork.py), which most of these tests run their
reference servers through (conftest.py, `reference_server_env`): a started server runs as its child on the
starter's own pipes, arguments and environment, ends with its starter, and a starter of other code runs by
itself. The fork server itself is shared with the reference host's (tests/test_reference_host_prefork.py)."""

from __future__ import annotations

import json
import os
import signal
import site
import socket
import struct
import subprocess
import sys

import pytest

from reference_servers import prefork
from tests.helpers import ROOT, children_of, server_fork_server, wait_for

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "prefork", "version": "0"}}}


@pytest.fixture
def fork_server(tmp_path):
    path = str(tmp_path / "server.sock")
    with server_fork_server(path) as env:
        yield env, path


def start_server(env: dict, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "reference_servers.everything", *args], cwd=ROOT,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={"PATH": os.environ.get("PATH", ""), **env}, start_new_session=True)


def answer(proc: subprocess.Popen, message: dict) -> dict:
    assert proc.stdin and proc.stdout
    proc.stdin.write((json.dumps(message) + "\n").encode())
    proc.stdin.flush()
    line = proc.stdout.readline()
    assert line, proc.stderr.read().decode() if proc.stderr else "no stdout"
    return json.loads(line)


def fork_server_pid(path: str) -> int:
    """The pid of the process listening on `path` (the fork server), from the socket's peer credentials."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(path)
        pid, _uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                              struct.calcsize("3i")))
        return pid


def test_a_started_server_runs_as_the_fork_servers_child_with_the_starters_environment(fork_server):
    env, path = fork_server
    server = fork_server_pid(path)
    proc = start_server({**env, "MCPX_SATISFIED_REQUIREMENTS": "auth:role:memory_admin"})
    try:
        assert "result" in answer(proc, INIT)
        assert len(children_of(server)) == 1  # the server answering is the fork server's child, not the starter
        proc.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        # forget_memory needs auth:role:memory_admin: satisfied only through the starter's environment
        called = answer(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                               "params": {"name": "forget_memory", "arguments": {"id": 1}}})
        assert "auth:role:memory_admin" not in json.dumps(called), called
        proc.stdin.close()
        assert proc.wait(timeout=20) == 0  # stdin closed: the child exits 0, and its starter with its code
        assert wait_for(lambda: children_of(server) == [], timeout=10)
    finally:
        proc.kill()
        proc.wait()


def test_killing_the_starter_ends_its_server(fork_server):
    env, path = fork_server
    server = fork_server_pid(path)
    proc = start_server(env)
    try:
        assert "result" in answer(proc, INIT)
        assert len(children_of(server)) == 1
        proc.kill()
        proc.wait(timeout=5)
        assert wait_for(lambda: children_of(server) == [], timeout=10), children_of(server)
    finally:
        proc.kill()
        proc.wait()


def test_an_http_server_runs_as_a_child_and_ends_with_its_starter(fork_server):
    from conformance.targets.peerkit import free_port, spawn

    env, path = fork_server
    server, port = fork_server_pid(path), free_port()
    with spawn([sys.executable, "-m", "reference_servers.everything", "--http", str(port)], cwd=ROOT,
               env={**os.environ, **env}) as group:
        assert group.wait_listening(port), group.stderr_tail(lines=20)
        assert len(children_of(server)) == 1
    assert wait_for(lambda: children_of(server) == [], timeout=10), children_of(server)


def test_a_starter_of_other_code_is_refused_and_no_child_runs(fork_server, tmp_path):
    """Another installation's starter (a built wheel, an mcp 1.x virtualenv) gets REFUSED and runs its own code;
    the fork server never runs this tree's code in its place."""
    _env, path = fork_server
    server = fork_server_pid(path)
    request = json.dumps({"argv": ["x"], "cwd": str(tmp_path), "env": {}, "code": "another installation"}).encode()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock, open(os.devnull, "rb") as null:
        sock.connect(path)
        socket.send_fds(sock, [struct.pack(">I", len(request)) + request], [null.fileno()] * 3)
        sock.settimeout(10)
        assert struct.unpack(">i", sock.recv(4))[0] == prefork.REFUSED
    assert children_of(server) == []


def test_a_refused_starter_runs_the_server_itself(fork_server, tmp_path):
    """The whole path: a starter under another interpreter environment (a virtualenv of its own, which finds this
    tree and its packages through PYTHONPATH) is refused, and answers all the same, by itself."""
    env, path = fork_server
    server = fork_server_pid(path)
    venv = tmp_path / "other-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60)
    proc = subprocess.Popen([str(venv / "bin" / "python"), "-m", "reference_servers.everything"], cwd=ROOT,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={"PATH": os.environ.get("PATH", ""), "PYTHONPATH": os.pathsep.join(site.getsitepackages()),
                                 **env}, start_new_session=True)
    try:
        assert "result" in answer(proc, INIT)
        assert children_of(server) == []  # answered by the starter itself
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_stopping_the_fork_server_ends_every_server_and_its_starter(tmp_path):
    path = str(tmp_path / "server.sock")
    with server_fork_server(path) as env:
        server = fork_server_pid(path)
        proc = start_server(env)
        try:
            assert "result" in answer(proc, INIT)
            assert len(children_of(server)) == 1
        except BaseException:
            proc.kill()
            raise
    # the fork server ended its children (SIGTERM), and the starter ends with the child's code
    assert proc.wait(timeout=10) == 0, proc.stderr.read() if proc.stderr else ""  # SIGTERM: the server exits 0
    assert not os.path.exists(path)


def test_the_socket_path_appears_only_once_it_listens(tmp_path, monkeypatch):
    # Whoever waits for the path to appear connects at once; bound in place, a connect made between bind and
    # listen is refused (the race a loaded CI machine once hit).
    path = str(tmp_path / "server.sock")
    (tmp_path / "server.sock").write_text("stale")  # a stale file is replaced, never missing in between
    seen_at_listen: list[str] = []
    real_listen = socket.socket.listen

    def listen(self, *args):
        seen_at_listen.append((tmp_path / "server.sock").read_text())
        return real_listen(self, *args)

    monkeypatch.setattr(socket.socket, "listen", listen)
    listener = prefork._listen(path)
    try:
        assert seen_at_listen == ["stale"]  # at listen, `path` was still the old file
        fork_server_pid(path)  # connectable the moment it is there
        assert sorted(os.listdir(tmp_path)) == ["server.sock"]  # the temporary name is gone
    finally:
        listener.close()
