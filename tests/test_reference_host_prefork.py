"""The reference host's fork server (reference_clients/host/prefork.py, on reference_servers/prefork.py), which the demo runs its host role through:
a started host runs as the server's child on the starter's own stdin, stdout, stderr and environment, ends with
its starter, and no host outlives the server. Without a server answering, the host runs by itself."""

from __future__ import annotations

import os
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import ROOT, children_of, host_fork_server, wait_for

READY = "ready in"
FORKED = "(forked by the fork server)"


@pytest.fixture
def fork_server(tmp_path):
    path = str(tmp_path / "host.sock")
    with host_fork_server(path) as server:  # listening (its imports may go on)
        yield path, server


def start_host(path: str, tmp_path: Path, stdin=subprocess.DEVNULL, **env) -> tuple[subprocess.Popen, Path]:
    err = tmp_path / f"host-{time.monotonic_ns()}.err"
    proc = subprocess.Popen([sys.executable, "-m", "reference_clients.host"], cwd=ROOT, stdin=stdin,
                            stdout=subprocess.PIPE, stderr=err.open("wb"), start_new_session=True,
                            env={"PATH": os.environ.get("PATH", ""), "MCPX_HOST_PREFORK": path, **env})
    return proc, err


def finish(proc: subprocess.Popen, timeout: float = 30.0) -> bytes:
    """The host's stdout once it exits; a host still running after `timeout` is killed, its group with it."""
    try:
        return proc.communicate(timeout=timeout)[0]
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise


def test_a_started_host_runs_as_the_servers_child_on_the_starters_streams_and_environment(fork_server, tmp_path):
    path, _ = fork_server
    proc, err = start_host(path, tmp_path, MCPX_LOG_LEVEL="DEBUG", MCPX_CONFIG=str(tmp_path / "missing.json"))
    out = finish(proc)
    log = err.read_text()
    assert proc.returncode == 0, log
    assert out == b""  # stdin closed at once: no turn, no line
    assert FORKED in log, log
    assert "missing.json" in log  # MCPX_CONFIG came from the starter's environment
    assert "DEBUG" in log  # and so did MCPX_LOG_LEVEL


def test_without_a_fork_server_the_host_runs_by_itself(tmp_path):
    proc, err = start_host(str(tmp_path / "no-such-dir" / "host.sock"), tmp_path)
    finish(proc)
    log = err.read_text()
    assert proc.returncode == 0, log
    assert READY in log and FORKED not in log, log


def test_killing_the_starter_ends_its_host_and_what_the_host_started(fork_server, tmp_path):
    path, server = fork_server
    proc, err = start_host(path, tmp_path, stdin=subprocess.PIPE)
    try:
        assert wait_for(lambda: READY in err.read_text()), err.read_text()
        hosts = children_of(server.pid)
        assert len(hosts) == 1, hosts
        proc.kill()
        proc.wait(timeout=5)
        assert wait_for(lambda: not children_of(server.pid), timeout=10), children_of(server.pid)
    finally:
        proc.kill()
        proc.wait()


def test_stopping_the_fork_server_ends_every_host_and_their_starters(fork_server, tmp_path):
    path, server = fork_server
    started = [start_host(path, tmp_path, stdin=subprocess.PIPE) for _ in range(2)]
    try:
        assert wait_for(lambda: all(READY in err.read_text() for _, err in started))
        assert len(children_of(server.pid)) == 2
        server.stop()
        for proc, err in started:  # the host ends on SIGTERM as on any other (exit 0), and its starter with it
            assert proc.wait(timeout=10) in (0, 1), err.read_text()
    finally:
        for proc, _ in started:
            proc.kill()
            proc.wait()


def test_a_host_killed_by_a_signal_gives_its_starter_the_shells_exit_code(fork_server, tmp_path):
    path, server = fork_server
    proc, err = start_host(path, tmp_path, stdin=subprocess.PIPE)
    try:
        assert wait_for(lambda: READY in err.read_text()), err.read_text()
        (host,) = children_of(server.pid)
        os.kill(host, signal.SIGKILL)
        assert proc.wait(timeout=10) == 128 + signal.SIGKILL
    finally:
        proc.kill()
        proc.wait()


def test_a_fork_server_that_cannot_listen_says_so_in_one_line(tmp_path):
    too_long = tmp_path / ("x" * 120) / "host.sock"  # AF_UNIX paths end at 107 bytes
    done = subprocess.run([sys.executable, "-m", "reference_clients.host", "--prefork", str(too_long)], cwd=ROOT,
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "cannot listen on" in done.stderr and "Traceback" not in done.stderr


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(garbage=st.one_of(st.binary(max_size=64),
                         st.binary(max_size=64).map(lambda tail: struct.pack(">I", len(tail) + 3) + tail),
                         st.text(max_size=20).map(lambda text: struct.pack(">I", 1 << 20) + text.encode())))
def test_a_connection_that_is_no_request_is_dropped_and_the_server_goes_on(fork_server, garbage):
    """Bytes that are not a request (no descriptors, a short or lying length, not JSON) end that connection only,
    and leave no child behind."""
    path, server = fork_server
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(path)
        sock.sendall(garbage)
        sock.shutdown(socket.SHUT_WR)
        sock.settimeout(10)
        assert sock.recv(4) == b""  # closed without an exit code: no host ran
    assert server.returncode is None and children_of(server.pid) == []


def test_after_garbage_a_real_starter_is_still_served(fork_server, tmp_path):
    path, _ = fork_server
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(path)
        sock.sendall(b"\xff" * 10)
    proc, err = start_host(path, tmp_path)
    finish(proc)
    assert proc.returncode == 0 and FORKED in err.read_text(), err.read_text()
