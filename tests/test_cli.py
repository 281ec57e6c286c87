"""The command line, end to end: exit codes, reports, and no traceback at the user."""

import json
import os
import re
import subprocess
import sys

import pytest

from conformance.core import schemas_loader
from conformance.core.model import REGISTRY
from conformance.core.roles import ROLES, SERVER
from conformance.report.inert import md_text
from tests.helpers import ROOT, SERVER_CHECKS, fake_command


def cli(*argv, timeout=120):
    return subprocess.run([sys.executable, "-m", "conformance", *argv], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def assert_clean(proc):
    assert "Traceback" not in proc.stdout + proc.stderr


def test_list_prints_every_check_with_rows_and_level():
    proc = cli("list", "--role", "server")
    assert proc.returncode == 0
    assert "execution-requirements/server/unmet-requirement-fails-call" in proc.stdout
    replay_checks = SERVER.check_ids("wg-fixtures")  # the working group's fixture replay: a target of its own
    assert "MUST" in proc.stdout and f"{len(SERVER_CHECKS) + len(replay_checks)} checks" in proc.stdout


def test_list_as_json():
    rows = json.loads(cli("list", "--json").stdout)
    assert all(r["rows"] for r in rows)
    unmet = next(r for r in rows if r["id"] == "execution-requirements/server/unmet-requirement-fails-call")
    assert any(s.startswith("SEP-2487 §") for s in unmet["sources"]), unmet["sources"]  # cited by name, not file
    judged = unmet["judgedAgainst"]  # what its verdicts are judged against, the list still an array of checks
    assert judged["extensionId"] == "io.modelcontextprotocol/execution-requirements"
    assert judged["fixtureContract"] >= 2 and len(judged["catalogRevision"]) == 12
    assert [s["name"] for s in judged["sources"]][0] == "SEP-2487" and judged["sources"][0]["sha256"]


def test_passing_server_exits_0_and_writes_reports(tmp_path):
    proc = cli("server", "--command", fake_command(), "--report-dir", str(tmp_path))
    assert_clean(proc)
    assert proc.returncode == 0, proc.stdout[-3000:]
    doc = json.loads((tmp_path / "results.json").read_text())
    assert schemas_loader.errors("results", doc) == []
    assert doc["exitCode"] == 0 and doc["summary"]["fail"] == 0 and doc["summary"]["total"] == len(SERVER_CHECKS)
    assert (tmp_path / "junit.xml").read_text().count("<testcase") == len(SERVER_CHECKS)
    assert "| execution-requirements | yes (advertisement) |" in (tmp_path / "summary.md").read_text()
    pytest_report = json.loads((tmp_path / "pytest-report.json").read_text())  # pytest-json-report's document
    assert pytest_report["summary"]["total"] == len(SERVER_CHECKS) == len(pytest_report["tests"])
    assert pytest_report["exitcode"] == 0 and (tmp_path / "pytest-report.json").read_text().startswith('{\n  "')
    html = (tmp_path / "index.html").read_text()
    assert html.startswith("<!doctype html>") and "execution-requirements/server/unmet-requirement-fails-call" in html
    assert "<script" not in html and "http" not in html.split("<body>")[1].split("Target")[0]
    badge = (tmp_path / "badges" / "server.svg").read_text()
    assert "<svg" in badge and f"{doc['summary']['pass']} passed" in badge
    rates = [f"server-{p}-rates.svg" for p in ("augmentation", "context-middleware", "execution-requirements",
                                                 "interceptors", "preprocessor-tools")]  # claimed profiles: MUST/SHOULD rates
    assert sorted(p.name for p in (tmp_path / "badges").iterdir()) == sorted([
        "server-augmentation.svg", "server-context-middleware.svg", "server-execution-requirements.svg",
        "server-interceptors.svg", "server-preprocessor-tools.svg", "server.svg", *rates])


def test_broken_server_exits_1_naming_the_check(tmp_path):
    proc = cli("server", "--command", fake_command("--break", "execution-requirements/all-requirements-enforced"),
               "--report-dir", str(tmp_path))
    assert_clean(proc)
    assert proc.returncode == 1
    assert "FAIL  execution-requirements/server/all-requirements-enforced" in proc.stdout
    doc = json.loads((tmp_path / "results.json").read_text())
    assert [c["id"] for c in doc["checks"] if c["outcome"] == "fail"] == [
        "execution-requirements/server/all-requirements-enforced"]
    assert "1 failed" in (tmp_path / "badges" / "server-execution-requirements.svg").read_text()
    assert '<details class="check fail" open id="execution-requirements/server/all-requirements-enforced">' in \
        (tmp_path / "index.html").read_text()


def test_warning_fails_only_under_strict(tmp_path):
    mutant = fake_command("--break", "execution-requirements/unmet-error-names-requirement")
    assert cli("server", "--command", mutant, "--report-dir", str(tmp_path)).returncode == 0
    assert cli("server", "--command", mutant, "--report-dir", str(tmp_path), "--strict").returncode == 1


def summary_lines(stdout: str) -> list[str]:
    """What the console says after the recording's progress lines."""
    lines = [line for line in stdout.splitlines() if line.strip()]
    return [line for line in lines if not line.startswith(("recording ", "  ["))]


def test_plain_server_reports_profiles_not_claimed(tmp_path):
    proc = cli("server", "--command", fake_command("--plain"), "--report-dir", str(tmp_path))
    assert_clean(proc)
    assert proc.returncode == 5  # nothing tested: its own exit code, never a pass
    doc = json.loads((tmp_path / "results.json").read_text())
    assert not any(p["claimed"] for p in doc["profiles"].values())
    # Claiming nothing is the first thing the closing summary and summary.md say, never "passed" alone.
    table = summary_lines(proc.stdout)
    assert table[0].startswith("! Nothing of the MCP extensions was tested: the server claimed none of its 5")
    assert "--profile context-middleware" in proc.stdout and "advertise capabilities.contextMiddleware" in proc.stdout
    assert all(len(line) <= 100 for line in table if not line.startswith(("=", "FAILED"))), table
    assert table[-1].startswith("! Nothing of the MCP extensions was tested")  # after the counts
    assert "exit code 5" in proc.stderr and "--allow-nothing-tested" in proc.stderr
    summary = (tmp_path / "summary.md").read_text()
    assert summary.splitlines()[0] == "# ⚠️ Nothing of the MCP extensions was tested: server role"
    assert "Every check that ran passed" not in summary
    assert "sequential-pipeline" not in summary  # a gateway-role profile: not the server's to claim


def test_fields_under_meta_are_named_with_the_fix(tmp_path):
    """The natural attempt on an SDK that drops unknown Tool fields: the fields under _meta. Nothing fails,
    so the console and summary.md must say why the profiles went untested, and where the fix is."""
    proc = cli("server", "--command", fake_command("--meta-carriage"), "--report-dir", str(tmp_path))
    assert_clean(proc)
    assert proc.returncode == 0
    table = summary_lines(proc.stdout)
    assert table[0].startswith("! Not tested: preprocessor-tools, execution-requirements: the tool fields are only")
    assert "docs/ecosystem.md#sdk-survival" in proc.stdout
    assert table[-1].startswith("! Not tested: preprocessor-tools, execution-requirements")
    assert "why: the field is only under _meta, which the proposal does not define" in proc.stdout
    summary = (tmp_path / "summary.md").read_text()
    assert "only under the tool's _meta, which no proposal defines" in summary
    assert "[SDK survival](docs/ecosystem.md#sdk-survival)" in summary
    assert "Every check that ran passed." not in summary
    claim = json.loads((tmp_path / "results.json").read_text())["profiles"]["preprocessor-tools"]
    assert claim["misplaced"] == ["conformance_memories: _meta['com.example/preprocessor']"]
    assert claim["howToClaim"].startswith('carry "preprocessor": true')


NEAR_MISSES = {  # --near-miss of tests/servers/fake_server.py: (profile, what the line says)
    "top-level-requirements": ("execution-requirements", "found at requirements (the tool's top level) on "
                               "conformance_gated_ok", "the proposal puts it at execution.requirements"),
    "annotations": ("preprocessor-tools", "found at annotations.preprocessor on conformance_memories",
                    "the proposal puts it at the tool's top level (preprocessor)"),
}


@pytest.mark.parametrize("near_miss", NEAR_MISSES)
def test_a_near_miss_is_named_with_where_the_proposal_puts_it(tmp_path, near_miss):
    """A field where a newcomer plausibly puts it, next to where the proposal does: the profile is not tested,
    and the console and summary.md each say what was found where, and where it belongs."""
    profile, found, proposal = NEAR_MISSES[near_miss]
    proc = cli("server", "--command", fake_command("--near-miss", near_miss), "--report-dir", str(tmp_path))
    assert_clean(proc)
    console = " ".join(line.removeprefix("! ") for line in summary_lines(proc.stdout) if line.startswith("! "))
    assert f"Not tested: {profile}: {found}" in console and proposal in console, proc.stdout
    summary = (tmp_path / "summary.md").read_text()
    assert any(f"Not tested: {profile}: {found}" in line and proposal in line for line in summary.splitlines())
    claim = json.loads((tmp_path / "results.json").read_text())["profiles"][profile]
    assert claim["claimed"] is False and any(proposal in m for m in claim["misplaced"])


def test_a_string_flag_is_a_near_miss_named_in_the_failure_it_is(tmp_path):
    """"preprocessor": "true" is in the proposal's place with the wrong type: the profile is claimed and the
    boolean check fails naming the near miss; the fixture check's failure follows from it."""
    proc = cli("server", "--command", fake_command("--near-miss", "string-preprocessor"), "--report-dir",
               str(tmp_path))
    assert_clean(proc)
    assert proc.returncode == 1, proc.stdout
    checks = {c["id"]: c for c in json.loads((tmp_path / "results.json").read_text())["checks"]}
    flag, fixture = checks["preprocessor-tools/server/flag-is-boolean"], checks["preprocessor-tools/server/fixture-flagged"]
    said = 'near miss: conformance_memories: found the string "true" at preprocessor; the proposal puts the JSON ' \
           'boolean true there'
    assert flag["outcome"] == "fail" and flag["reason"] == said
    assert fixture["outcome"] == "fail" and fixture["followsFrom"] == "preprocessor-tools/server/flag-is-boolean"
    # summary.md shows what the target said inert (Markdown punctuation escaped): read it without the escapes
    assert said in re.sub(r"\\(.)", r"\1", (tmp_path / "summary.md").read_text())
    assert 'found the string "true" at preprocessor' in " ".join(proc.stdout.split())


def test_unstartable_target_exits_2_without_traceback(tmp_path):
    proc = cli("server", "--command", "/nonexistent/server --flag", "--report-dir", str(tmp_path))
    assert_clean(proc)
    assert proc.returncode == 2
    assert "cannot start" in proc.stdout + proc.stderr


def test_unreachable_url_exits_2(tmp_path):
    from conformance.targets.peerkit import free_port

    proc = cli("server", "--url", f"http://127.0.0.1:{free_port()}/mcp", "--report-dir", str(tmp_path))
    assert_clean(proc)
    assert proc.returncode == 2


@pytest.mark.parametrize("argv", [["server"], ["server", "--command", "x", "--profile", "nope"], ["bogus"]])
def test_bad_usage_exits_2(argv, tmp_path):
    proc = cli(*argv, "--report-dir", str(tmp_path)) if argv[0] == "server" and len(argv) > 1 else cli(*argv)
    assert_clean(proc)
    assert proc.returncode == 2


def test_profile_option_claims_and_limits(tmp_path):
    proc = cli("server", "--command", fake_command("--plain"), "--profile", "context-middleware",
               "--report-dir", str(tmp_path))
    assert proc.returncode == 1
    doc = json.loads((tmp_path / "results.json").read_text())
    failing = {c["id"] for c in doc["checks"] if c["outcome"] == "fail"}
    assert "context-middleware/server/capability-advertised" in failing
    assert {c["profile"] for c in doc["checks"] if c["outcome"] != "skip"} == {"context-middleware"}


def test_expected_failure_baseline_hides_a_known_failure_and_goes_stale(tmp_path):
    mutant = fake_command("--break", "execution-requirements/all-requirements-enforced")
    baseline = tmp_path / "baseline.yaml"
    baseline.write_text("execution-requirements/server/all-requirements-enforced: tracked in issue 12\n")
    known = cli("server", "--command", mutant, "--expected-failures", str(baseline), "--report-dir", str(tmp_path))
    assert known.returncode == 0, known.stdout[-2000:]
    doc = json.loads((tmp_path / "results.json").read_text())
    assert {c["id"]: c["outcome"] for c in doc["checks"]}["execution-requirements/server/all-requirements-enforced"] == "xfail"
    fixed = cli("server", "--command", fake_command(), "--expected-failures", str(baseline), "--report-dir", str(tmp_path))
    assert fixed.returncode == 1
    assert "stale" in fixed.stdout.lower()


def test_a_run_writes_the_official_shape_and_takes_its_own_failures_back_as_an_official_baseline(tmp_path):
    import xml.etree.ElementTree as ET

    import yaml

    from conformance.core import provenance

    mutant = fake_command("--break", "execution-requirements/all-requirements-enforced")
    first = cli("server", "--command", mutant, "--report-dir", str(tmp_path / "first"))
    assert first.returncode == 1
    # The per-proposal table closes the console's summary, within 100 columns.
    assert "Per proposal (MUST, SHOULD" in first.stdout
    assert "  execution-requirements: SEP-2487" in first.stdout and "MUST 6/7 85%" in first.stdout
    assert all(len(line) <= 100 for line in first.stdout.split("MCP extension conformance, server role")[1].splitlines())
    official = tmp_path / "first" / "official"
    checks = json.loads((official / "server-server-execution-requirements" / "checks.json").read_text())
    failed = [c for c in checks if c["status"] == "FAILURE"]
    assert [c["id"] for c in failed] == ["sep-2487-all-requirements-enforced"] and failed[0]["errorMessage"]
    written = yaml.safe_load((official / "expected-failures.yml").read_text())
    assert written["server"] == ["server-execution-requirements:sep-2487-all-requirements-enforced"]

    # Every verdict says what it was judged against: results.json, junit.xml, the page.
    doc = json.loads((tmp_path / "first" / "results.json").read_text())
    assert schemas_loader.errors("results", doc) == []
    judged = doc["judgedAgainst"]["profiles"]["execution-requirements"]
    assert judged["catalogRevision"] == provenance.catalog_revision("execution-requirements")
    assert judged["sources"][0]["sha256"] and judged["sources"][0]["revision"]
    case = next(c for c in ET.parse(tmp_path / "first" / "junit.xml").iter("testcase")
                if "all-requirements-enforced" in c.get("name"))
    properties = [(p.get("name"), p.get("value")) for p in case.iter("property")]
    assert ("fixture-contract", str(doc["judgedAgainst"]["fixtureContract"])) in properties
    assert ("suite-version", doc["suite"]["version"]) in properties
    assert any(k == "source" and v.startswith("SEP-2487: ") and "sha256 " in v for k, v in properties)
    page = (tmp_path / "first" / "index.html").read_text()
    assert 'id="judged-against"' in page and judged["sources"][0]["sha256"] in page and "Per proposal" in page

    again = cli("server", "--command", mutant, "--expected-failures", str(official / "expected-failures.yml"),
                "--report-dir", str(tmp_path / "again"))
    assert again.returncode == 0, again.stdout[-2000:]
    assert "catalog revisions" not in again.stdout  # written against the revisions it is used with
    edited = tmp_path / "edited.yml"
    edited.write_text((official / "expected-failures.yml").read_text().replace(
        judged["catalogRevision"], "0123456789ab"))
    drift = cli("server", "--command", mutant, "--expected-failures", str(edited), "--report-dir", str(tmp_path / "d"))
    assert drift.returncode == 0
    assert "! the expected-failures file was written against other catalog revisions" in drift.stdout
    warnings = json.loads((tmp_path / "d" / "results.json").read_text())["baseline"]["warnings"]
    assert len(warnings) == 1 and "execution-requirements (0123456789ab, now" in warnings[0]
    assert md_text(warnings[0]) in (tmp_path / "d" / "summary.md").read_text()  # as text: it quotes the file


def test_a_baseline_shared_with_the_official_suite_is_accepted_with_one_note(tmp_path):
    """Before: the official suite's own scenario names were a usage error (exit 2)."""
    shared = tmp_path / "conformance-baseline.yml"
    shared.write_text("server:\n  - tools-call-error\n  - server-initialize:some-check\n"
                      "  - server-execution-requirements:sep-2487-all-requirements-enforced\n"
                      "client:\n  - auth/basic-dcr\n")
    mutant = fake_command("--break", "execution-requirements/all-requirements-enforced")
    proc = cli("server", "--command", mutant, "--expected-failures", str(shared), "--report-dir", str(tmp_path / "r"))
    assert_clean(proc)
    assert proc.returncode == 0, proc.stdout[-2000:]
    notes = [line for line in proc.stdout.splitlines() if "this suite does not run" in line]
    assert len(notes) == 1 and "ignored 3 expected-failures entries" in notes[0] and "tools-call-error" in notes[0]


def test_baseline_with_unknown_id_is_a_usage_error(tmp_path):
    baseline = tmp_path / "baseline.yaml"
    baseline.write_text("- execution-requirements/server/no-such-check\n")
    proc = cli("server", "--command", fake_command(), "--expected-failures", str(baseline), "--report-dir", str(tmp_path))
    assert_clean(proc)
    assert proc.returncode == 2
    assert "no-such-check" in proc.stdout + proc.stderr


def test_whole_profile_baseline_goes_stale_when_nothing_fails(tmp_path):
    baseline = tmp_path / "baseline.yaml"
    baseline.write_text("- augmentation\n")
    proc = cli("server", "--command", fake_command(), "--expected-failures", str(baseline), "--report-dir", str(tmp_path))
    assert proc.returncode == 1
    assert "STALE expected-failures entry 'augmentation'" in proc.stdout


# -- the server role's other target: the interceptors working group's fixtures, replayed through an adapter ------
WG_FIXTURES = str(ROOT / "tests" / "data" / "interceptor-fixtures")
WG_REFERENCE = "reference_servers.interceptor_chain:wg_adapter"


def test_wg_fixture_replay_runs_through_the_cli_with_the_suites_reports(tmp_path):
    import xml.etree.ElementTree as ET

    from conformance.report import dashboard

    proc = cli("server", "--adapter", WG_REFERENCE, "--wg-fixtures", WG_FIXTURES, "--report-dir", str(tmp_path))
    assert_clean(proc)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "9 fixture(s): 8 protocol, 1 behavior" in proc.stdout
    doc = json.loads((tmp_path / "results.json").read_text())
    assert schemas_loader.errors("results", doc) == []
    assert doc["target"] == {"kind": "adapter", "adapter": WG_REFERENCE, "fixtures": WG_FIXTURES}
    assert doc["profiles"]["interceptors"]["claimedBy"] == "option"
    assert {c["id"]: c["outcome"] for c in doc["checks"]} == {
        "interceptors/server/wg-behavior-fixtures": "pass", "interceptors/server/wg-protocol-fixtures": "pass"}
    suite = ET.parse(tmp_path / "junit.xml").getroot().find("testsuite")  # pytest's writer, as for every run
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("2", "0", "0")
    for name in ("summary.md", "index.html", "badges/server-interceptors.svg", "pytest-report.json"):
        assert (tmp_path / name).exists(), name
    assert dashboard.load(str(tmp_path)).doc["checks"] == doc["checks"]


def test_wg_fixture_replay_of_a_broken_adapter_exits_1_naming_the_fixture(tmp_path):
    proc = cli("server", "--adapter", "tests.servers.broken_wg_adapters:FailOpenByDefault", "--wg-fixtures",
               WG_FIXTURES, "--report-dir", str(tmp_path))
    assert_clean(proc)
    assert proc.returncode == 1
    doc = json.loads((tmp_path / "results.json").read_text())
    failed = [c for c in doc["checks"] if c["outcome"] == "fail"]
    assert [c["id"] for c in failed] == ["interceptors/server/wg-protocol-fixtures"]
    assert "protocol/suite-fail-closed" in failed[0]["reason"] and "protocol/suite-fail-closed" in proc.stdout
    assert failed[0]["actual"][0]["vocabulary"] == {"words": ["apply"], "generation": "newer"}


@pytest.mark.parametrize("argv, says", [
    (["--adapter", WG_REFERENCE], "go together"),
    (["--adapter", WG_REFERENCE, "--wg-fixtures", "/nonexistent/fixtures"], "is not a directory"),
    (["--adapter", WG_REFERENCE, "--wg-fixtures", WG_FIXTURES, "--profile", "augmentation"],
     "interceptors profile only"),
    (["--adapter", WG_REFERENCE, "--command", "x", "--wg-fixtures", WG_FIXTURES], "a target of its own"),
    (["--adapter", "no_such_module_here:factory", "--wg-fixtures", WG_FIXTURES], "ModuleNotFoundError"),
])
def test_wg_fixture_replay_usage_mistakes_exit_2_in_one_line(tmp_path, argv, says):
    proc = cli("server", *argv, "--report-dir", str(tmp_path))
    assert_clean(proc)
    assert proc.returncode == 2 and says in proc.stdout + proc.stderr, proc.stdout + proc.stderr


def test_checks_are_registered_before_any_background_thread_starts(tmp_path):
    """Run as a pytest plugin (nothing but the plugin loads the checks), the recording and the warm-up start on
    threads of their own while pytest collects: the checks must be in the registry before either starts, or
    collection reads it while another thread is still importing the check modules."""
    script = f"""
import sys
import pytest
from conformance.run import background
from conformance.core.model import REGISTRY

def note(what):  # pytest captures the run's output: a file of its own
    with open({str(tmp_path / "seen.txt")!r}, "a") as seen:
        print(what, sum(1 for check in REGISTRY.values() if check.role == "server"), file=seen)

real_init, real_warm_up = background.BackgroundRecording.__init__, background.warm_up

def init(self, record, profiles):
    note("recording-starts-with")
    real_init(self, record, profiles)

def warm_up():
    note("warm-up-starts-with")
    real_warm_up()

background.BackgroundRecording.__init__ = init
background.warm_up = warm_up
sys.exit(pytest.main(["-q", "-p", "conformance.plugin", "--pyargs", "conformance", "-c", {str(ROOT / "conformance" / "pytest-cli.ini")!r},
                      "--mcp-server-command", {fake_command()!r}]))
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
    seen = tmp_path / "seen.txt"
    counts = dict(line.split() for line in seen.read_text().splitlines()) if seen.exists() else {}
    every = str(len(SERVER.check_ids()) + len(SERVER.check_ids("wg-fixtures")))
    assert counts == {"warm-up-starts-with": every, "recording-starts-with": every}, proc.stdout[-2000:] + proc.stderr[-2000:]


def test_an_internal_error_is_one_line_and_a_file(tmp_path):
    """A fault of the test runner itself (here a plugin hook that raises) is one line naming it and where its
    traceback went, exit 2; never pytest's INTERNALERROR lines."""
    script = f"""
import sys
from conformance import cli

def boom(session):
    raise RuntimeError("boom in a hook")

cli._FreezeAfterCollection.pytest_collection_finish = staticmethod(boom)
sys.argv = ["mcp-ext-conformance", "server", "--command", {fake_command()!r}, "--report-dir", {str(tmp_path)!r}]
cli.run()
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 2, proc.stderr
    assert "INTERNALERROR" not in proc.stdout + proc.stderr
    assert "internal error of the test runner (RuntimeError: boom in a hook)" in proc.stderr
    assert "boom in a hook" in (tmp_path / "internal-error.txt").read_text()


def test_a_recording_that_raises_leaves_every_check_failed_not_missing(tmp_path):
    """An error of the suite itself while recording (here the role's recorder raises) fails the setup of every
    check: each is in results.json as failed, with the error, never left out; the summary says the suite failed
    (not that nothing was claimed); the console says it once, with where the traceback went; exit 1."""
    script = f"""
import sys
from conformance import cli
from conformance.core import roles

def boom(self, *args, **kwargs):
    raise RuntimeError("boom in the recording")

roles.Role.record = boom
sys.argv = ["mcp-ext-conformance", "server", "--command", {fake_command()!r}, "--report-dir", {str(tmp_path)!r}]
cli.run()
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 1, proc.stderr
    doc = json.loads((tmp_path / "results.json").read_text())
    assert {c["id"] for c in doc["checks"]} == set(SERVER.check_ids())
    assert {c["outcome"] for c in doc["checks"]} == {"fail"}
    assert all("boom in the recording" in c["reason"] for c in doc["checks"]) and doc["exitCode"] == 1
    assert "boom in the recording" in doc["suiteError"]
    summary = (tmp_path / "summary.md").read_text()
    assert summary.startswith("# ⛔ The suite failed") and "claimed none" not in summary
    assert "boom in the recording" in (tmp_path / "internal-error.txt").read_text()
    errors = [line for line in proc.stderr.splitlines() if line.startswith("ERROR")]
    assert len(errors) == 1 and "RuntimeError: boom in the recording" in errors[0], proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr and "conformance/plugin.py" not in proc.stdout + proc.stderr


def test_a_failure_that_follows_from_another_names_it_first(tmp_path):
    """A server that mutates a guarded call before validating it fails invoker-rejects-invalid-call; the error
    shape check then has no error to read, and says it follows from that check, in the console and results.json.
    The echo cannot tell a validation run after the mutation from none at all, so the reason claims neither."""
    fake = ROOT / "tests" / "servers" / "fake_interceptor_server.py"
    proc = cli("server", "--command", f"{sys.executable} {fake} --break invoker-mutates-first", "--profile",
               "interceptors", "--fixture-contract", "5", "--report-dir", str(tmp_path))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    first, follower = "interceptors/server/invoker-rejects-invalid-call", "interceptors/server/invoker-validation-error-shape"
    assert f"{follower}: follows from" in proc.stdout  # the console line; the id itself may wrap to the next
    results = {c["id"]: c for c in json.loads((tmp_path / "results.json").read_text())["checks"]}
    assert results[follower]["followsFrom"] == first
    assert results[follower]["reason"].startswith(f"follows from {first}: ")
    assert "followsFrom" not in results[first]
    assert "the mutation ran before the validation" not in results[first]["reason"]
    assert "or no validation ran" in results[first]["reason"]


# -- nothing tested is not a pass ---------------------------------------------------------------------------


def test_nothing_tested_exits_5_unless_allowed(tmp_path):
    """No profile claimed: exit 5 in the console and results.json; --allow-nothing-tested (a survey) keeps 0."""
    plain = fake_command("--plain")
    proc = cli("server", "--command", plain, "--report-dir", str(tmp_path / "a"))
    assert proc.returncode == 5, proc.stderr
    assert json.loads((tmp_path / "a" / "results.json").read_text())["exitCode"] == 5
    allowed = cli("server", "--command", plain, "--report-dir", str(tmp_path / "b"), "--allow-nothing-tested")
    assert allowed.returncode == 0, allowed.stderr
    doc = json.loads((tmp_path / "b" / "results.json").read_text())
    assert doc["exitCode"] == 0 and schemas_loader.errors("results", doc) == []


def test_every_check_of_the_claimed_profiles_skipped_is_nothing_tested(tmp_path):
    # The fake claims every profile; the checks selected need fixtures of a contract version it was not run at.
    proc = cli("server", "--command", fake_command(), "-k", "invoker-", "--report-dir", str(tmp_path))
    doc = json.loads((tmp_path / "results.json").read_text())
    assert {c["outcome"] for c in doc["checks"]} == {"skip"} and doc["profiles"]["interceptors"]["claimed"]
    assert proc.returncode == 5 and doc["exitCode"] == 5, proc.stdout[-2000:]


def pytest_run(tmp_path, *argv):
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *argv], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)


def test_the_plugin_without_a_target_is_not_a_pass(tmp_path):
    proc = pytest_run(tmp_path, "--pyargs", "conformance")
    assert proc.returncode == 5, proc.stdout[-2000:]
    assert "nothing was tested, no target was given" in proc.stdout and "--mcp-server-command" in proc.stdout
    assert pytest_run(tmp_path, "--pyargs", "conformance", "--mcp-allow-nothing-tested").returncode == 0


def test_a_plugin_option_without_the_checks_collected_is_an_error_naming_the_fix(tmp_path):
    (tmp_path / "test_mine.py").write_text("def test_mine():\n    pass\n")
    proc = pytest_run(tmp_path, "--mcp-server-command", fake_command())
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert "--mcp-server-command was given, but no conformance check was collected" in proc.stderr
    assert "--pyargs conformance" in proc.stderr
    assert pytest_run(tmp_path).returncode == 0  # without an --mcp-* option the plugin stays out of the way


@pytest.mark.parametrize("flag, value, says", [
    ("--mcp-docker-port", "-5", "'-5': give a port from 1 to 65535"),
    ("--mcp-docker-port", "abc", "'abc' is not a port"),
    ("--mcp-fixture-contract", "x", "'x' is not a fixture contract version"),
    ("--mcp-timeout", "0", "give a positive number of seconds"),
])
def test_a_plugin_option_value_mistake_is_the_suites_one_line(tmp_path, flag, value, says):
    """The plugin's flags are checked by the same checkers as the command line's: the suite's words, and
    pytest's usage exit (4)."""
    proc = pytest_run(tmp_path, "--pyargs", "conformance", "--mcp-server-docker-image", "img", f"{flag}={value}")
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert f"argument {flag}: {says}" in proc.stderr if says.startswith("'") else says in proc.stderr
    assert "invalid literal" not in proc.stderr and "Traceback" not in proc.stderr


# -- the pytest plugin's rough edges ------------------------------------------------------------------------


def test_the_plugin_speaks_its_own_flags_writes_junit_and_keeps_its_lines_apart(tmp_path):
    report = tmp_path / "report"
    proc = pytest_run(tmp_path, "--pyargs", "conformance", "--mcp-server-command", fake_command("--plain"),
                      "--mcp-report-dir", str(report))
    assert proc.returncode == 5, proc.stdout[-3000:]  # claims nothing: nothing tested
    # --mcp-report-dir writes junit.xml, as its help says, with the suite's counts beside pytest's
    assert 'name="mcpx-skip"' in (report / "junit.xml").read_text()
    # advice names the plugin's flag, never the command line's
    doc = json.loads((report / "results.json").read_text())
    reasons = " ".join(c.get("reason") or "" for c in doc["checks"])
    assert "--mcp-profile" in reasons and " --profile" not in reasons
    assert " --profile" not in proc.stdout and "--mcp-allow-nothing-tested" in proc.stdout
    # the recording's progress lines stand on lines of their own, before pytest's progress
    lines = proc.stdout.splitlines()
    recording = next(i for i, line in enumerate(lines) if "recording " in line)
    assert lines[recording].startswith("recording "), lines[recording]
    progress = [i for i, line in enumerate(lines) if line.startswith("  [")]
    first_dots = next(i for i, line in enumerate(lines) if line.startswith(("s", ".", "F")) and set(line.split()[0])
                      <= set("s.FxX"))
    assert progress and max(progress) < first_dots, proc.stdout[:2000]
    # the suite's own counts, which pytest's line does not give
    skipped = len([c for c in SERVER.check_ids() if REGISTRY[c].target == "live"]) - 3
    assert any(line.startswith(f"mcp-ext-conformance: 3 passed, {skipped} skipped") for line in lines), \
        proc.stdout[-2000:]


def test_the_command_line_advises_its_own_flag(tmp_path):
    proc = cli("server", "--command", fake_command("--plain"), "--report-dir", str(tmp_path))
    doc = json.loads((tmp_path / "results.json").read_text())
    reasons = " ".join(c.get("reason") or "" for c in doc["checks"])
    assert "claim it with --profile " in reasons and "--mcp-" not in reasons + proc.stdout + proc.stderr


def test_plugin_help_texts_speak_of_one_role_and_the_plugins_flags():
    import re

    from conformance import options

    said = []

    class Group:
        def addoption(self, flag, **kw):
            said.append((flag, kw["help"]))

    options.add_plugin_options(Group())
    for flag, text in said:
        role = next((r for r in ROLES if flag.startswith(f"--mcp-{r}-")), None)
        if role is not None:
            others = [r for r in ROLES if r != role and re.search(rf"\b{r}( role)?:", text)]
            assert not others, (flag, text)
        cli_flags = [f for f in re.findall(r"(?<![\w-])--[a-z][a-z-]*", text) if not f.startswith("--mcp-")]
        assert not cli_flags, (flag, text)


def test_checks_of_profiles_the_run_does_not_record_are_not_counted(tmp_path):
    """A gateway given only its pipeline adapter: the transparency checks are not run (they need --command),
    so they are neither a skip in junit.xml nor a count on the console, which gives the suite's own numbers."""
    proc = cli("gateway", "--adapter", "reference_servers.gateway.adapter:factory", "--report-dir", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((tmp_path / "results.json").read_text())
    assert doc["summary"]["info"] and doc["summary"]["skip"] == 0
    assert (tmp_path / "junit.xml").read_text().count("<testcase") == doc["summary"]["total"]
    closing = [line for line in proc.stdout.splitlines() if line.endswith("s") and " in " in line][-1]
    assert closing.startswith(f"{doc['summary']['pass']} passed, {doc['summary']['info']} info in "), closing
    # a claimed profile the run's options cannot record: said so, in the command line's words
    proc = cli("gateway", "--command", f"{sys.executable} -m reference_servers.gateway", "--profile",
               "sequential-pipeline", "--report-dir", str(tmp_path / "b"))
    assert proc.returncode == 2 and "sequential-pipeline is not recorded in this run (pipeline semantics need " \
        "--adapter)" in proc.stderr, proc.stderr


def test_a_test_of_ones_own_that_names_a_check_id_is_not_a_check(tmp_path):
    # The suite's own tests parametrize over check ids; only conformance/test_checks.py's tests are checks.
    (tmp_path / "test_ids.py").write_text("import pytest\n\n\n@pytest.mark.parametrize('check_id', ['a/b/c'])\n"
                                          "def test_id(check_id):\n    assert check_id\n")
    proc = pytest_run(tmp_path, "test_ids.py")
    assert proc.returncode == 0 and "nothing was tested" not in proc.stdout, proc.stdout[-2000:]
