"""A failure whose cause is the server's SDK names the release and the example to copy (conformance/server/sdk.py).

Judged on a real SDK-built server: ecosystem/python/naive_server.py puts the extension fields on the SDK's own
Tool type, which `mcp` 2.x drops; with `--profile execution-requirements` its checks fail, and the reason says
why. The shipped table (sdk-drops.json) is what the field-survival probe measured.
"""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.metadata import version

import pytest

from conformance.core.runner import evaluate_all
from conformance.server import record as server_record
from conformance.server import sdk
from conformance.targets import TargetSpec
from ecosystem import matrix
from tests.helpers import PY, ROOT, reference_command

NAIVE = f"{PY} {ROOT / 'ecosystem/python/naive_server.py'}"
MCP = version("mcp")
on_mcp2 = pytest.mark.skipif(int(MCP.split(".")[0]) < 2, reason="the naive server keeps the fields on mcp 1.x")


def verdicts(command: str, given: str | None, profile: str = "execution-requirements") -> dict:
    recordings = server_record.record_sync(TargetSpec("stdio", command=command), [profile], claimed={profile},
                                           run_timeout=60)
    for rec in recordings.values():
        rec.sdk = given
    return evaluate_all("server", recordings)


@on_mcp2
def test_the_release_given_is_named_with_its_example():
    failed = {cid: r.reason for cid, r in verdicts(NAIVE, f"mcp@{MCP}").items() if r.outcome == "fail"}
    assert failed
    blamed = [reason for reason in failed.values() if f"mcp {MCP}" in reason]
    assert blamed and all("execution.requirements is on no tool of tools/list" in r for r in blamed)
    assert all("drops it from its Tool type; see examples/python-mcp2" in r for r in blamed)


@on_mcp2
def test_without_sdk_the_releases_that_drop_the_field_are_listed():
    reasons = [r.reason for r in verdicts(NAIVE, None).values() if r.outcome == "fail"]
    assert any("measured SDK releases that drop it: mcp 2.0.0" in r and "(name yours with --sdk)" in r
               for r in reasons), reasons


def test_nothing_is_blamed_where_the_field_is_on_the_wire():
    assert not any("SDK releases" in (r.reason or "") or "see examples/" in (r.reason or "")
                   for r in verdicts(reference_command(), f"mcp@{MCP}").values())


def test_a_release_that_keeps_the_field_is_not_blamed():
    assert sdk.cause("execution.requirements", "mcp@1.30.0") is None


def test_an_unmeasured_release_is_read_as_the_nearest_measured_one():
    row, matched = sdk.resolve("mcp@2.1.7")
    assert row["version"].startswith("2.") and "as measured on" in matched


@pytest.mark.parametrize("given, says", [("nosuchsdk@1.0", "not a measured SDK"), ("mcp@two", "dotted numbers")])
def test_a_wrong_sdk_is_one_line_and_exit_2(given, says, tmp_path):
    done = subprocess.run([sys.executable, "-m", "conformance", "server", "--command", "true", "--sdk", given,
                           "--report-dir", str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and says in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_the_shipped_table_is_the_measured_one():
    # sdk-drops.json is written with sdk-survival.md from the probe's rows; a stale copy would blame wrongly.
    assert json.loads(sdk.DATA.read_text()) == matrix.sdk_drops()
