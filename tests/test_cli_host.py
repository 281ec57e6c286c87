"""`mcp-ext-conformance host` end to end: exit codes, reports, no traceback."""

import json

from conformance.core import schemas_loader
from conformance.core.roles import HOST
from conformance.host.common import scenarios as recorder_scenarios
from tests.helpers import HOST_CHECKS, fake_host
from tests.test_cli import assert_clean, cli

ALL = [arg for profile in HOST.profiles for arg in ("--profile", profile)] + ["--claim", "interceptor-overrides"]


def test_passing_host_exits_0_and_writes_reports(tmp_path):
    proc = cli("host", "--command", fake_host("--stream"), *ALL, "--report-dir", str(tmp_path))
    assert_clean(proc)
    assert proc.returncode == 0, proc.stdout[-3000:]
    doc = json.loads((tmp_path / "results.json").read_text())
    assert schemas_loader.errors("results", doc) == []
    assert doc["role"] == "host" and doc["target"]["kind"] == "stdio"
    assert doc["summary"]["total"] == len(HOST_CHECKS) and doc["summary"]["fail"] == 0
    scenarios = len(recorder_scenarios())
    assert f"[{scenarios}/{scenarios}]" in proc.stdout  # one progress line per scenario run
    scenario = next(c for c in doc["checks"] if c["id"] == "preprocessor-tools/host/output-not-persisted")
    assert scenario["exchanges"][0]["label"] == "scenario preprocessor-tools/two-servers"
    assert (tmp_path / "badges" / "host.svg").exists()


def test_broken_host_exits_1_naming_the_check(tmp_path):
    proc = cli("host", "--command", fake_host("--break", "persists-preprocessor-output"), "--report-dir",
               str(tmp_path))
    assert_clean(proc)
    assert proc.returncode == 1
    assert "FAIL  preprocessor-tools/host/output-not-persisted" in proc.stdout
    assert "preprocessor output persisted into later turns" in proc.stdout
    doc = json.loads((tmp_path / "results.json").read_text())
    assert doc["profiles"]["augmentation"]["claimed"] is False
    assert doc["profiles"]["preprocessor-tools"]["claimedBy"] == "default"


def test_claiming_one_profile_runs_only_its_scenarios(tmp_path):
    proc = cli("host", "--command", fake_host(), "--profile", "augmentation", "--report-dir", str(tmp_path))
    assert proc.returncode == 0, proc.stdout[-2000:]
    doc = json.loads((tmp_path / "results.json").read_text())
    ran = {c["profile"] for c in doc["checks"] if c["outcome"] != "skip"}
    assert ran == {"augmentation"}


def test_claiming_interceptors_runs_its_checks(tmp_path):
    proc = cli("host", "--command", fake_host(), "--profile", "interceptors", "--report-dir", str(tmp_path))
    assert_clean(proc)
    assert proc.returncode == 0, proc.stdout[-2000:]
    doc = json.loads((tmp_path / "results.json").read_text())
    ran = {c["id"] for c in doc["checks"] if c["outcome"] != "skip"}
    overrides = {c for c in HOST_CHECKS if c.startswith("interceptors/host/override-")
                 or c == "interceptors/host/named-entry-only"}  # judged on the overrides scenario's named entries
    assert ran == {c for c in HOST_CHECKS if c.startswith("interceptors/")} - overrides and len(ran) == 19
    unclaimed = {c["id"]: c["reason"] for c in doc["checks"] if c["id"] in overrides}
    assert len(unclaimed) == 10 and all(r.startswith("not claimed") for r in unclaimed.values()), unclaimed
    listed = cli("list", "--role", "host", "--profile", "interceptors")
    assert listed.returncode == 0 and all(c in listed.stdout for c in ran | overrides)


def test_claiming_interceptor_overrides_runs_their_checks(tmp_path):
    proc = cli("host", "--command", fake_host(), "--profile", "interceptors", "--claim", "interceptor-overrides",
               "--report-dir", str(tmp_path))
    assert_clean(proc)
    assert proc.returncode == 0, proc.stdout[-2000:]
    doc = json.loads((tmp_path / "results.json").read_text())
    ran = {c["id"] for c in doc["checks"] if c["outcome"] == "pass"}
    assert ran == {c for c in HOST_CHECKS if c.startswith("interceptors/")} and len(ran) == 29


def test_unstartable_host_exits_2_without_traceback(tmp_path):
    proc = cli("host", "--command", "/nonexistent/host", "--report-dir", str(tmp_path))
    assert_clean(proc)
    assert proc.returncode == 2
    assert "cannot start" in proc.stdout + proc.stderr


def test_gateway_profile_is_not_a_host_profile(tmp_path):
    proc = cli("host", "--command", fake_host(), "--profile", "sequential-pipeline", "--report-dir", str(tmp_path))
    assert_clean(proc)
    assert proc.returncode == 2 and "not a host-role profile" in proc.stderr


def test_gateway_command_and_adapter_exit_0_with_reports(tmp_path):
    from tests.helpers import PY

    proc = cli("gateway", "--command", f"{PY} -m reference_servers.gateway", "--adapter",
               "reference_servers.gateway.adapter:factory", "--report-dir", str(tmp_path))
    assert_clean(proc)
    assert proc.returncode == 0, proc.stdout[-3000:]
    doc = json.loads((tmp_path / "results.json").read_text())
    assert schemas_loader.errors("results", doc) == []
    assert doc["role"] == "gateway" and doc["summary"]["fail"] == 0 and doc["summary"]["skip"] == 0


def test_broken_adapter_exits_1_and_no_target_exits_2(tmp_path):
    proc = cli("gateway", "--adapter", "tests.gateway.broken_pipelines:descending", "--report-dir", str(tmp_path))
    assert_clean(proc)
    assert proc.returncode in (1, 2)
    proc = cli("gateway", "--report-dir", str(tmp_path))
    assert proc.returncode == 2 and "needs --command, --adapter" in proc.stderr
