"""Shared helpers of the suite's own tests: start the implementations under test, record them in-process
(one role at a time, as the plugin does) and collect every check's verdict with `runner.evaluate_all`."""

from __future__ import annotations

import os
import shlex
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from conformance.core.roles import GATEWAY, HOST, SERVER
from conformance.core.runner import evaluate_all
from conformance.gateway import record as gateway_record
from conformance.gateway.launch import gateway_factory
from conformance.host import record as host_record
from conformance.server import record as server_record
from conformance.targets import TargetSpec
from conformance.targets.peerkit import free_port, spawn

ROOT = Path(__file__).resolve().parent.parent
PY = shlex.quote(sys.executable)
NOT_OK = ("fail", "warn", "stale")

SERVER_CHECKS = SERVER.check_ids()
HOST_CHECKS = HOST.check_ids()
TRANSPARENCY_CHECKS = [c for c in GATEWAY.check_ids() if c.split("/")[0] in gateway_record.PROFILES]

FAKE = ROOT / "tests" / "servers" / "fake_server.py"
FAKE_HOST = ROOT / "tests" / "hosts" / "fake_host.py"
BROKEN_PROXY = ROOT / "tests" / "gateway" / "broken_proxy.py"


def not_ok(verdicts: dict) -> dict:
    return {cid: f"{r.outcome}: {r.reason}" for cid, r in verdicts.items() if r.outcome in NOT_OK}


# -- server role --------------------------------------------------------------------------------------------


def fake_command(*flags: str) -> str:
    return " ".join([PY, shlex.quote(str(FAKE)), *map(shlex.quote, flags)])


def reference_command() -> str:
    return f"{PY} -m reference_servers.everything"


@contextmanager
def _fork_server(argv: list[str], path: str):
    """A fork server (reference_servers/prefork.py) started with `argv`, yielded (its process group) once it
    listens on the Unix socket `path` (the path appears then, before its imports: prefork._listen). Its group
    ends, and every child with it, on leaving."""
    with spawn(argv, cwd=ROOT, grace=5.0) as server:
        assert wait_for(lambda: os.path.exists(path) or server.returncode is not None, timeout=30) \
            and server.returncode is None, server.stderr_tail()
        yield server


@contextmanager
def server_fork_server(path: str):
    """The reference server's fork server (`python -m reference_servers.everything --prefork`); yields the
    environment that makes a reference server started with it run as its child."""
    with _fork_server([sys.executable, "-m", "reference_servers.everything", "--prefork", path], path):
        yield {"MCPX_SERVER_PREFORK": path}


@contextmanager
def doubles_fork_server(path: str):
    """The test doubles' fork server (tests/prefork_doubles.py); yields the environment that makes a double
    started with it run as its child."""
    from tests import prefork_doubles

    with _fork_server([sys.executable, prefork_doubles.__file__, path], path):
        yield {prefork_doubles.ENV: path}


@contextmanager
def reference_http_server(*args: str, python: str = sys.executable, env: dict | None = None):
    """The reference server over Streamable HTTP on a free loopback port (yielded), its group ended afterwards.
    With the `reference_server_env` fixture's variable in `env`, it runs as a child of that fork server."""
    port = free_port()
    with spawn([python, "-m", "reference_servers.everything", "--http", str(port), *args], cwd=ROOT, env=env) as srv:
        assert srv.wait_listening(port), srv.stderr_tail(lines=20) if srv.returncode is not None else "no listen"
        yield port


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is gone for our purposes
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def gone_within(pid: int, seconds: float = 3.0) -> bool:
    """True once `pid` is dead or a zombie, waiting up to `seconds`: a SIGKILL takes effect when the process is
    next scheduled, not when kill() returns (on a loaded machine, milliseconds later)."""
    deadline = time.monotonic() + seconds
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def proc_state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read()
    except OSError as exc:
        return str(exc)


def children_of(pid: int) -> list[int]:
    """The live children of `pid` (zombies left out), from /proc."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[0] != "Z" and int(fields[1]) == pid:
                found.append(int(entry))
    return found


def wait_for(predicate, timeout: float = 20.0) -> bool:
    """True once `predicate()` is, polling for up to `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def server_verdicts(spec: TargetSpec, claimed: set[str] = frozenset(), run_timeout: float = 60.0,
                    isolate: bool = False) -> dict:
    """Every server-role check's Result, by id, from one recording per profile (on one connection, or each on
    its own with `isolate`)."""
    return evaluate_all("server", server_record.record_sync(spec, server_record.PROFILES, claimed=set(claimed),
                                                            run_timeout=run_timeout, isolate=isolate))


# -- host role ----------------------------------------------------------------------------------------------
def fake_host(*flags: str) -> str:
    return " ".join([PY, shlex.quote(str(FAKE_HOST)), *map(shlex.quote, flags)])


def reference_host() -> str:
    return f"{PY} -m reference_clients.host"


def host_fork_server(path: str):
    """The reference host's fork server (reference_clients/host/prefork.py) on the Unix socket `path`; yields its
    process group once it listens, ended (and its children with it) on leaving."""
    return _fork_server([sys.executable, "-m", "reference_clients.host", "--prefork", path], path)


def host_verdicts(command: str, profiles=host_record.PROFILES, claimed=frozenset(host_record.PROFILES), *,
                  timeout: float = HOST.default_timeout, env: dict | None = None, **kw) -> dict:
    """Every host-role check's Result (of the given profiles), by id. `features=host_record.FEATURES` also claims
    the optional features (--claim); without it their checks are skipped as not claimed."""
    spec = TargetSpec("stdio", command=command, timeout=timeout, env=env or {})
    return evaluate_all("host", host_record.record_hosts_sync(spec, profiles, claimed=set(claimed), **kw))


# -- gateway role -------------------------------------------------------------------------------------------
def reference_gateway(*flags: str) -> str:
    return " ".join([PY, "-m", "reference_servers.gateway", *flags])


def broken_proxy(mode: str | None = None) -> str:
    return f"{PY} {BROKEN_PROXY}" + (f" --break {mode}" if mode else "")


def gateway_verdicts(command: str, *, url: str | None = None, upstream: str = "stdio", timeout: float = 5.0,
                     run_timeout: float = 30.0, claimed=frozenset(), env: dict | None = None) -> dict:
    """Every transparency check's Result, by id, from one recording per profile through the gateway."""
    factory = gateway_factory(TargetSpec("http" if url else "stdio", command=command, url=url, timeout=timeout,
                                         env=env or {}))
    return evaluate_all("gateway", gateway_record.record_gateway_sync(
        factory, gateway_record.PROFILES, claimed=set(claimed), upstream=upstream, run_timeout=run_timeout))
