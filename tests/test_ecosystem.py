"""SDK field survival: the probe's judges, the table it feeds, and the probe against real servers; the
committed dashboard snapshot, whose pages are built from its kept results.

The rows for other SDK releases (FastMCP, the TypeScript SDK, other `mcp`
releases) need packages from a registry: `nox -s matrix matrix_fastmcp
matrix_typescript` runs them. Here: the installed `mcp` only, no network.
"""

import json
import os
import re
import shutil
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from conformance.core import schemas_loader
from ecosystem import matrix, probe
from tests.helpers import ROOT

MAJOR = int(version("mcp").split(".")[0])
WIRE = [sys.executable, str(ROOT / "ecosystem" / "wire_server.py")]


def test_judge_tools_finds_each_field_anywhere_in_the_list():
    tools = [{"name": "a", "_meta": {"k": 1}}, {"name": "b", "preprocessor": True},
             {"name": "c", "execution": {"taskSupport": "optional", "requirements": ["x:y"]}}]
    assert probe.judge_tools(tools) == {"preprocessor": True, "execution.requirements": True,
                                        "executionKeys": ["requirements", "taskSupport"], "_meta": True}
    stripped = [{"name": "b", "preprocessor": "yes"}, {"name": "c", "execution": {"taskSupport": "optional"}}]
    assert probe.judge_tools(stripped) == {"preprocessor": False, "execution.requirements": False,
                                           "executionKeys": ["taskSupport"], "_meta": False}
    assert probe.judge_tools(None)["preprocessor"] is False


def test_judge_capabilities_and_methods():
    assert probe.judge_capabilities({"contextMiddleware": {}, "experimental": {"augmentation": {}}}) == \
        {"contextMiddleware": "top-level", "augmentation": "experimental"}
    assert probe.judge_capabilities({}) == {"contextMiddleware": "absent", "augmentation": "absent"}
    assert probe.judge_capabilities(None) == {"contextMiddleware": "not read", "augmentation": "not read"}
    assert probe.judge_method({"result": {}}) == "answered"
    assert probe.judge_method({"error": {"code": -32601}}) == "error -32601"
    assert probe.judge_method({"failure": "no answer within 30 s"}) == "no answer within 30 s"


def test_wire_server_sends_everything():
    verdict = probe.judge_server(probe.record_server(WIRE))
    assert verdict["reached"] and verdict["tools"]["preprocessor"] and verdict["tools"]["execution.requirements"]
    assert set(verdict["capabilities"].values()) == {"top-level"}
    assert set(verdict["methods"].values()) == {"answered"}


def test_silent_server_ends_as_a_failure_not_a_hang(monkeypatch):
    monkeypatch.setattr(probe, "TIMEOUT", 1.0)
    verdict = probe.judge_server(probe.record_server([sys.executable, "-c", "import time; time.sleep(60)"]))
    assert verdict["reached"] is False and "no answer" in verdict["failure"]


def test_naive_python_server_on_the_installed_mcp():
    verdict = probe.judge_server(probe.record_server([sys.executable, str(ROOT / "ecosystem/python/naive_server.py")]))
    assert verdict["reached"] and verdict["tools"]["_meta"]
    # 1.x keeps unknown Tool fields; 2.x's typed models drop them (reports/ecosystem/sdk-survival.md).
    assert verdict["tools"]["preprocessor"] is (MAJOR < 2)
    assert verdict["tools"]["execution.requirements"] is (MAJOR < 2)
    assert set(verdict["capabilities"].values()) == {"experimental"}
    assert "answered" not in verdict["methods"].values()


def test_naive_python_client_on_the_installed_mcp():
    verdict = probe.judge_client(probe.record_client([sys.executable, str(ROOT / "ecosystem/python/naive_client.py")]))
    assert "failure" not in verdict, verdict
    assert verdict["typed"]["tools"]["preprocessor"] is (MAJOR < 2)
    assert verdict["typed"]["tools"]["_meta"] is True
    assert verdict["raw"]["tools"]["preprocessor"] and verdict["raw"]["tools"]["execution.requirements"]
    assert set(verdict["raw"]["capabilities"].values()) == {"top-level"}
    assert set(verdict["methods"].values()) == {"answered"}


NODE_SDK = os.environ.get("MCPX_NODE_SDK")  # a node_modules holding @modelcontextprotocol/sdk


@pytest.mark.skipif(not NODE_SDK, reason="MCPX_NODE_SDK (node_modules with @modelcontextprotocol/sdk) is not set; "
                                         "nox -s matrix_typescript runs the TypeScript rows")
def test_typescript_low_level_server_carries_every_field(monkeypatch):
    monkeypatch.setenv("NODE_PATH", NODE_SDK)
    verdict = probe.judge_server(probe.record_server(["node", str(ROOT / "ecosystem/typescript/naive_server.cjs"),
                                                      "lowlevel"]))
    assert verdict["tools"]["preprocessor"] and verdict["tools"]["execution.requirements"]
    assert set(verdict["methods"].values()) == {"answered"}


def row(sdk, naive_fields, typed_fields, meta=True):
    tools = lambda on: {"preprocessor": on, "execution.requirements": on, "executionKeys": [], "_meta": meta}  # noqa: E731
    top = {"contextMiddleware": "top-level", "augmentation": "top-level"}
    server = lambda on, caps, answered: {"reached": True, "failure": None, "tools": tools(on),  # noqa: E731
                                         "capabilities": caps,
                                         "methods": {m: "answered" if answered else "error -32601"
                                                     for m in probe.METHODS}}
    return {"sdk": sdk, "package": sdk, "version": "1.0.0",
            "server": {"naive": server(naive_fields, {"contextMiddleware": "experimental",
                                                      "augmentation": "experimental"}, False),
                       "best-effort": server(True, top, True)},
            "client": {"typed": {"tools": tools(typed_fields), "capabilities": top, "error": None},
                       "raw": {"tools": tools(True), "capabilities": top, "error": None},
                       "methods": {m: "answered" for m in probe.METHODS}}}


def test_must_do_follows_the_measurements():
    keeps = matrix.must_do(row("python", naive_fields=True, typed_fields=True))
    assert "reach the wire" in keeps and "typed API shows" in keeps and "experimental" in keeps
    drops = matrix.must_do(row("typescript", naive_fields=False, typed_fields=False))
    assert "low-level `Server`" in drops and "passthrough" in drops and "`_meta` survives" in drops


def test_survival_table_lists_each_row_in_release_order(tmp_path):
    import json

    for sdk, release in (("typescript", "1.22.0"), ("python", "1.10.0"), ("python", "1.9.4")):
        data = {**row(sdk, True, True), "version": release}
        (tmp_path / f"{sdk}@{release}.json").write_text(json.dumps(data))
    text = matrix.survival_table(tmp_path)
    server_rows = [line for line in text.split("## Client")[0].splitlines() if line.startswith("| ") and "1." in line]
    assert [line.split(" | ")[1] for line in server_rows] == ["1.9.4", "1.10.0", "1.22.0"]
    assert text.count("- **") == 3


def test_committed_snapshot_rows_are_readable():
    rows = matrix.survival_rows(Path(matrix.SURVIVAL_DIR))
    for data in rows:
        assert matrix.must_do(data)


def test_the_committed_snapshot_builds_its_pages_from_its_results(tmp_path):
    """Git keeps reports/ecosystem's results, not its HTML: --pages-only renders every page from them."""
    snapshot = tmp_path / "ecosystem"
    shutil.copytree(ROOT / "reports" / "ecosystem", snapshot, ignore=shutil.ignore_patterns("*.html"))
    proc = subprocess.run([sys.executable, str(ROOT / "ecosystem" / "snapshot.py"), str(snapshot), "--pages-only"],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    runs = [entry["run"] for entry in json.loads((snapshot / "dashboard.json").read_text())["runs"]]
    assert runs and all((snapshot / "runs" / run / "index.html").is_file() for run in runs)
    board = (snapshot / "index.html").read_text()
    assert all(f'href="runs/{run}/index.html#' in board for run in runs)  # every column links into its run's page


def test_snapshot_pages_only_without_a_snapshot_is_a_clear_error(tmp_path):
    proc = subprocess.run([sys.executable, str(ROOT / "ecosystem" / "snapshot.py"), str(tmp_path), "--pages-only"],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert proc.returncode == 2 and "dashboard.json" in proc.stderr and "Traceback" not in proc.stderr


def test_snapshot_reports_name_no_place_on_this_machine(tmp_path):
    """What a kept run names: the suite's interpreter as `python`, the checkout's paths relative to it, and a
    path outside it (another interpreter, a node_modules) by its last part, said to be outside."""
    from ecosystem.snapshot import machine_free

    elsewhere = str(tmp_path / "venv" / "bin" / "python3.11")
    modules = str(tmp_path / "npm" / "node_modules")
    argv = ["host", "--command", f"{elsewhere} ecosystem/hosts/x/host.py", "--env", f"NODE_PATH={modules}"]
    text = json.dumps({"command": f"{elsewhere} ecosystem/hosts/x/host.py", "env": f"NODE_PATH={modules}",
                       "suite": f"{sys.executable} -m conformance", "file": str(ROOT / "tests" / "x.py")})
    kept = json.loads(machine_free(text, [elsewhere, *argv]))
    assert kept == {"command": "python3.11 (outside the checkout) ecosystem/hosts/x/host.py",
                    "env": "NODE_PATH=node_modules (outside the checkout)", "suite": "python -m conformance",
                    "file": "tests/x.py"}
    assert str(tmp_path) not in json.dumps(kept)


def test_every_committed_column_names_its_implementation_version_and_day():
    """Each column of reports/ecosystem comes from a run of ecosystem/snapshot.py, which names what it judged."""
    snapshot = ROOT / "reports" / "ecosystem"
    entries = json.loads((snapshot / "dashboard.json").read_text())["runs"]
    assert len(entries) >= 25 and len({e["run"] for e in entries}) == len(entries)
    kinds = set()
    for entry in entries:
        doc = json.loads((snapshot / "runs" / entry["run"] / "results.json").read_text())
        assert schemas_loader.errors("results", doc) == [], entry["run"]
        implementation = doc["implementation"]
        assert implementation["name"] == entry["column"] and implementation["version"], entry["run"]
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", doc["startedAt"])
        kinds.add(implementation["kind"])
    assert kinds == {"reference", "sdk", "third-party"}
