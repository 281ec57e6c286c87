"""Determinism: repeated runs, and runs split over pytest-xdist workers, give identical verdicts.

The default test run does a few reruns against the fast SDK-free implementations;
`nox -s determinism` does twenty against the reference implementations
(MCPX_RERUNS=20 MCPX_DETERMINISM_TARGETS=reference).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conformance.targets import TargetSpec
from tests.helpers import (
    ROOT,
    fake_command,
    fake_host,
    host_verdicts,
    reference_command,
    reference_host,
    server_verdicts,
)

RERUNS = int(os.environ.get("MCPX_RERUNS", "3"))
REFERENCE = os.environ.get("MCPX_DETERMINISM_TARGETS") == "reference"


def outcomes(verdicts: dict) -> dict[str, str]:
    return {cid: r.outcome for cid, r in sorted(verdicts.items())}


def doubles(request) -> dict[str, str]:
    """The environment of the worker's doubles fork server (conftest.py), unless the reference targets were asked
    for: those start plainly, as a user starts them."""
    return {} if REFERENCE else request.getfixturevalue("doubles_env")


def test_server_role_reruns_give_identical_verdicts(request):
    command = reference_command() if REFERENCE else fake_command()
    runs = [outcomes(server_verdicts(TargetSpec("stdio", command=command, env=doubles(request))))
            for _ in range(RERUNS)]
    assert all(run == runs[0] for run in runs), [sorted(set(r.items()) ^ set(runs[0].items())) for r in runs]
    assert set(runs[0].values()) <= {"pass", "info", "skip"}


def evidence(verdicts: dict) -> dict[str, tuple[str, tuple[str, ...]]]:
    """Each check's outcome and the evidence its verdict shows, in the order shown."""
    return {cid: (r.outcome, tuple(e["label"] for e in r.exchanges)) for cid, r in sorted(verdicts.items())}


def test_host_role_reruns_give_identical_verdicts(request):
    """The first run records one scenario at a time, the others as many at once as there are CPUs: the verdicts
    and the order of the evidence beside each are the same."""
    command = reference_host() if REFERENCE else fake_host()
    runs = [evidence(host_verdicts(command, jobs=1 if i == 0 else None, env=doubles(request))) for i in range(RERUNS)]
    assert all(run == runs[0] for run in runs), [sorted(set(r.items()) ^ set(runs[0].items())) for r in runs]


def _pytest_run(tmp_path, name: str, role_args: list[str], extra: list[str]) -> dict[str, str]:
    report = tmp_path / name
    subprocess.run([sys.executable, "-m", "pytest", "--pyargs", "conformance", "-p", "no:cacheprovider", "-q",
                    *role_args, "--mcp-report-dir", str(report), *extra], cwd=tmp_path, capture_output=True,
                   text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
    return {c["id"]: c["outcome"] for c in json.loads((report / "results.json").read_text())["checks"]}


def _differences(tmp_path, serial: dict, split: dict) -> list[tuple[str, str, str]]:
    """The checks whose outcomes differ, each with both runs' reasons (what a flaky difference needs to be read)."""
    reasons = {name: {c["id"]: f"{c['outcome']}: {c.get('reason') or ''}"[:200]
                      for c in json.loads((tmp_path / name / "results.json").read_text())["checks"]}
               for name in ("serial", "xdist")}
    return [(cid, reasons["serial"].get(cid, "absent"), reasons["xdist"].get(cid, "absent"))
            for cid in sorted(set(serial) | set(split)) if serial.get(cid) != split.get(cid)]


@pytest.mark.parametrize("role", ["server", "host"])
def test_xdist_gives_the_same_verdicts_as_a_serial_run(tmp_path, role, doubles_env):
    role_args = (["--mcp-server-command", fake_command("--break", "context-middleware/unknown-middleware-rejected")]
                 if role == "server" else ["--mcp-host-command", fake_host("--break", "unchained")])
    role_args += [f"--mcp-env={name}={value}" for name, value in doubles_env.items()]
    serial = _pytest_run(tmp_path, "serial", role_args, [])
    split = _pytest_run(tmp_path, "xdist", role_args, ["-n", "2"])
    assert serial == split, _differences(tmp_path, serial, split)
    assert "fail" in serial.values()
