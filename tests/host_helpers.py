"""Shared helpers of the suite's own host-role tests: run hosts through the harness in-process."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from conformance.host import record as recorder
from conformance.model import REGISTRY
from conformance.runner import evaluate

ROOT = Path(__file__).resolve().parent.parent
FAKE_HOST = ROOT / "tests" / "hosts" / "fake_host.py"
PY = shlex.quote(sys.executable)
HOST_CHECKS = sorted(c for c in REGISTRY if REGISTRY[c].role == "host")


def fake_host(*flags: str) -> str:
    return " ".join([PY, shlex.quote(str(FAKE_HOST)), *map(shlex.quote, flags)])


def reference_host() -> str:
    return f"{PY} -m reference_clients.host"


def host_verdicts(command: str, profiles=recorder.PROFILES, claimed=frozenset(recorder.PROFILES), **kw) -> dict:
    """Every host-role check's Result (of the given profiles), by id."""
    recordings = recorder.record_hosts_sync(command, profiles, claimed=set(claimed), **kw)
    return {cid: evaluate(REGISTRY[cid], recordings[REGISTRY[cid].profile]) for cid in HOST_CHECKS
            if REGISTRY[cid].profile in recordings}
