"""Shared helpers of the suite's own tests: run the server role in-process and collect verdicts."""

from __future__ import annotations

import os
import shlex
import sys
from contextlib import contextmanager
from pathlib import Path

from conformance import server
from conformance.model import REGISTRY
from conformance.peerkit import free_port, spawn
from conformance.runner import evaluate
from conformance.targets import TargetSpec

ROOT = Path(__file__).resolve().parent.parent
FAKE = ROOT / "tests" / "servers" / "fake_server.py"
PY = shlex.quote(sys.executable)
SERVER_CHECKS = sorted(c for c in REGISTRY if REGISTRY[c].role == "server")
NOT_OK = ("fail", "warn", "stale")


def fake_command(*flags: str) -> str:
    return " ".join([PY, shlex.quote(str(FAKE)), *map(shlex.quote, flags)])


def reference_command() -> str:
    return f"{PY} -m reference_servers.everything"


@contextmanager
def reference_http_server(*args: str, python: str = sys.executable, env: dict | None = None):
    """The reference server over Streamable HTTP on a free loopback port (yielded), its group ended afterwards."""
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


def server_verdicts(spec: TargetSpec, claimed: set[str] = frozenset(), run_timeout: float = 60.0) -> dict:
    """Every server-role check's Result, by id, from one recording per profile."""
    recordings = server.record_sync(spec, server.PROFILES, claimed=set(claimed), run_timeout=run_timeout)
    return {cid: evaluate(REGISTRY[cid], recordings[REGISTRY[cid].profile]) for cid in SERVER_CHECKS}


def not_ok(verdicts: dict) -> dict:
    return {cid: f"{r.outcome}: {r.reason}" for cid, r in verdicts.items() if r.outcome in NOT_OK}
