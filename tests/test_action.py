"""The composite action (action.yml) and the README's CI workflow, executed as GitHub's runner executes them,
without GitHub.

The runner here is small on purpose: it runs every `run:` step as the Linux runner does (expressions
`${{ … }}` substituted, a workflow step with the default shell `bash -e`, an action's `shell: bash` step
with `bash --noprofile --norc -eo pipefail`, a fresh GITHUB_OUTPUT file per step, one GITHUB_STEP_SUMMARY
file), evaluates the few `if:` expressions the workflow uses, and fails on any expression it does not know,
so a workflow edited beyond it fails here rather than on a user's runner. It does not run the actions
GitHub provides (`actions/checkout`, `actions/setup-python`, `actions/upload-artifact`): the workspace is
made here, Python is the tests' own, and an upload is checked by the path it names. The action's install
step (`pip install` of the action's directory) is checked for what it installs and replaced by the CLI the
tests already run; installing the package is tests/test_packaging.py's subject.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

from tests.helpers import FAKE, FAKE_HOST, ROOT, fake_command
from tests.servers.fake_server import MUTANTS

ACTION = yaml.safe_load((ROOT / "action.yml").read_text())
README = (ROOT / "README.md").read_text()
PROVIDED = ("actions/checkout@", "actions/setup-python@", "actions/upload-artifact@")
INSTALL = 'python -m pip install "${{ github.action_path }}"'
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def lookup(context: dict, path: str):
    value = context
    for part in path.split("."):
        assert isinstance(value, dict) and part in value, f"unknown context value {path!r}"
        value = value[part]
    return value


def substitute(text: str, context: dict) -> str:
    return EXPRESSION.sub(lambda m: str(lookup(context, m.group(1))), text)


def condition(expr, context: dict, failed: bool) -> bool:
    """The `if:` expressions this repository's workflows use; anything else is the test's failure."""
    if expr is None:
        return not failed
    expr = str(expr).strip()
    if expr.startswith("${{"):
        expr = expr[3:-2].strip()
    if expr == "always()":
        return True
    match = re.fullmatch(r"([\w.-]+)\s*==\s*'([^']*)'", expr)
    assert match, f"the test's runner does not know the expression {expr!r}"
    return not failed and lookup(context, match.group(1)) == match.group(2)


def run_script(script: str, shell: list[str], *, cwd: Path, env: dict, tmp: Path) -> tuple[int, dict, str]:
    """One `run:` step: (exit status, its outputs, its log)."""
    tmp.mkdir(parents=True, exist_ok=True)
    path, output = tmp / "step.sh", tmp / "output"
    path.write_text(script)
    output.write_text("")
    proc = subprocess.run([*shell, str(path)], cwd=cwd, env={**env, "GITHUB_OUTPUT": str(output)},
                          capture_output=True, text=True, timeout=180)
    outputs = dict(line.split("=", 1) for line in output.read_text().splitlines() if "=" in line)
    return proc.returncode, outputs, proc.stdout + proc.stderr


def run_action(action_dir: Path, given: dict, *, workspace: Path, env: dict, tmp: Path) -> tuple[int, dict, str]:
    """A composite action with inputs `given`: (exit status, its outputs, its log)."""
    action = yaml.safe_load((action_dir / "action.yml").read_text())
    declared = action["inputs"]
    assert set(given) <= set(declared), f"inputs the action does not declare: {set(given) - set(declared)}"
    inputs = {name: str(given.get(name, spec.get("default", ""))) for name, spec in declared.items()}
    context = {"inputs": inputs, "steps": {}, "github": {"action_path": str(action_dir)}}
    log = []
    for number, step in enumerate(action["runs"]["steps"]):
        if "uses" in step:
            assert step["uses"].startswith("actions/setup-python@"), step["uses"]
            continue
        if "pip install" in step["run"]:
            assert step["run"].strip() == INSTALL, step["run"]  # the action installs itself, from its directory
            continue
        assert step.get("shell") == "bash", step
        step_env = {**env, **{k: substitute(str(v), context) for k, v in step.get("env", {}).items()}}
        status, outputs, out = run_script(substitute(step["run"], context),
                                          ["bash", "--noprofile", "--norc", "-eo", "pipefail"],
                                          cwd=workspace, env=step_env, tmp=tmp / f"action-{number}")
        log.append(out)
        context["steps"][step.get("id", f"step{number}")] = {"outputs": outputs}
        if status:  # later steps are skipped; the failing step's outputs are what GitHub would keep
            return status, outputs, "".join(log)
    outputs = {name: substitute(spec["value"], context) for name, spec in action["outputs"].items()}
    return 0, outputs, "".join(log)


def base_env(tmp: Path, **extra) -> dict:
    # The CLI the tests run stands in for the one the install step would put on PATH.
    return {**os.environ, "PATH": f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}",
            "PYTHONPATH": str(ROOT), **extra}


# -- the action's run step ----------------------------------------------------------------------------------


def test_action_reports_counts_badge_and_summary(tmp_path):
    summary = tmp_path / "summary"
    status, outputs, log = run_action(ROOT, {"command": fake_command(), "report-dir": str(tmp_path / "report")},
                                      workspace=ROOT, env=base_env(tmp_path, GITHUB_STEP_SUMMARY=str(summary)),
                                      tmp=tmp_path)
    assert status == 0, log
    # the fake serves every profile's fixtures (its interceptors come with the gateway upstream's): the output is
    # the run's own count of passes (results.json), never a number pinned here
    doc = json.loads((tmp_path / "report" / "results.json").read_text())
    assert outputs["passed"] == str(doc["summary"]["pass"]) and doc["summary"]["pass"] > 0
    assert outputs["failed"] == "0"
    assert outputs["badge"].endswith("badges/server.svg") and os.path.exists(outputs["badge"])
    assert "MCP extension conformance" in summary.read_text()


def test_action_fails_the_job_on_a_failing_check(tmp_path):
    given = {"command": fake_command("--break", "augmentation/prepend-note-hint"), "profiles": "augmentation",
             "report-dir": str(tmp_path / "report")}
    status, outputs, _ = run_action(ROOT, given, workspace=ROOT, env=base_env(tmp_path), tmp=tmp_path)
    assert status == 1
    assert outputs["failed"] == "1"


def test_action_fails_a_run_that_tested_nothing_unless_told_otherwise(tmp_path):
    """A server that claims no profile: the job is red (exit 5), and green only with allow-nothing-tested."""
    given = {"command": fake_command("--plain"), "report-dir": str(tmp_path / "report")}
    status, outputs, log = run_action(ROOT, given, workspace=ROOT, env=base_env(tmp_path), tmp=tmp_path / "a")
    assert status == 5, log
    assert outputs["server-exit-code"] == "5" and "exit code 5: nothing of the MCP extensions was tested" in log
    status, outputs, log = run_action(ROOT, {**given, "allow-nothing-tested": "true"}, workspace=ROOT,
                                      env=base_env(tmp_path), tmp=tmp_path / "b")
    assert status == 0, log
    assert outputs["server-exit-code"] == "0"


def test_action_without_a_step_summary_still_reports(tmp_path):
    # Outside GitHub (or on a runner that sets no GITHUB_STEP_SUMMARY) the step neither fails nor writes one.
    env = {k: v for k, v in base_env(tmp_path).items() if k != "GITHUB_STEP_SUMMARY"}
    status, outputs, log = run_action(ROOT, {"command": fake_command(), "report-dir": str(tmp_path / "report")},
                                      workspace=ROOT, env=env, tmp=tmp_path)
    assert status == 0, log
    doc = json.loads((tmp_path / "report" / "results.json").read_text())
    assert outputs["passed"] == str(doc["summary"]["pass"]) and doc["summary"]["pass"] > 0


def test_a_run_that_cannot_start_still_says_so_in_the_step_summary(tmp_path):
    summary = tmp_path / "summary"
    status, _, log = run_action(ROOT, {"command": "no-such-command-for-the-action-test",
                                       "report-dir": str(tmp_path / "report")},
                                workspace=ROOT, env=base_env(tmp_path, GITHUB_STEP_SUMMARY=str(summary)), tmp=tmp_path)
    assert status == 2, log
    assert "MCP extension conformance" in summary.read_text()


def test_action_runs_each_role_with_outputs_of_its_own(tmp_path):
    # The server claims profiles the plain fake server does not serve (1); the host is given no target (2); the
    # gateway passes both through (0).
    summary = tmp_path / "summary"
    given = {"role": "server host gateway", "command": fake_command("--plain"),
             "gateway-command": f"{sys.executable} -m reference_servers.gateway",
             "profiles": "interceptors context-middleware", "report-dir": str(tmp_path / "report")}
    status, outputs, log = run_action(ROOT, given, workspace=ROOT,
                                      env=base_env(tmp_path, GITHUB_STEP_SUMMARY=str(summary)), tmp=tmp_path)
    assert status == 2, log
    assert (outputs["server-exit-code"], outputs["host-exit-code"], outputs["gateway-exit-code"]) == ("1", "2", "0")
    assert int(outputs["server-failed"]) > 0 and outputs["gateway-failed"] == "0" and int(outputs["gateway-passed"])
    assert outputs["passed"] == str(int(outputs["server-passed"]) + int(outputs["gateway-passed"]))
    assert outputs["host-passed"] == "" and outputs["badge"].endswith("server/badges/server.svg")
    claimed = json.loads((tmp_path / "report" / "gateway" / "results.json").read_text())["profiles"]
    assert claimed["context-middleware"]["claimedBy"] == "option" and claimed["interceptors"]["claimedBy"] == "option"
    text = summary.read_text()
    assert "MCP extension conformance: server role" in text and "gateway role" in text
    assert "## MCP extension conformance: host role" in text and "exited with status 2" in text


# -- the README's workflow ----------------------------------------------------------------------------------


def readme_workflow() -> tuple[dict, str]:
    block = README.split("<!-- ci-workflow:begin -->")[1].split("<!-- ci-workflow:end -->")[0]
    workflow, baseline = re.findall(r"```yaml\n(.*?)```", block, re.S)
    return yaml.safe_load(workflow), baseline


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args], cwd=cwd,
                          check=True, capture_output=True, text=True).stdout


def test_readme_workflow_runs_as_shown(tmp_path):
    workflow, baseline = readme_workflow()
    (job,) = workflow["jobs"].values()
    # The user's repository: a server whose one known failure is the baseline's entry, the baseline as the
    # README shows it, the copy of this repository the workflow names, and a remote to push the badge to.
    (listed,) = yaml.safe_load(baseline)
    (mutant,) = [name for name, (fails, _) in MUTANTS.items() if fails == {listed}]
    origin, workspace = tmp_path / "origin.git", tmp_path / "workspace"
    subprocess.run(["git", "init", "-q", "--bare", str(origin)], check=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(workspace)], check=True)
    (workspace / "my_server.py").write_text(
        f"import runpy, sys\nsys.argv = [{str(FAKE)!r}, '--break', {mutant!r}]\n"
        f"runpy.run_path({str(FAKE)!r}, run_name='__main__')\n")
    # The host and the gateway: the tests' fake host and the reference gateway, started as the README says.
    (workspace / "my_host.py").write_text(
        f"import runpy, sys\nsys.argv = [{str(FAKE_HOST)!r}, *sys.argv[1:]]\n"
        f"runpy.run_path({str(FAKE_HOST)!r}, run_name='__main__')\n")
    (workspace / "my_gateway.py").write_text(
        f"import runpy, sys\nsys.path.insert(0, {str(ROOT)!r})\n"
        f"runpy.run_module('reference_servers.gateway', run_name='__main__', alter_sys=True)\n")
    (workspace / ".github").mkdir()
    (workspace / ".github" / "mcp-expected-failures.yaml").write_text(baseline)
    git("add", ".", cwd=workspace)
    git("commit", "-qm", "my server", cwd=workspace)
    git("remote", "add", "origin", str(origin), cwd=workspace)
    git("push", "-q", "origin", "main", cwd=workspace)

    summary = tmp_path / "summary"
    env = base_env(tmp_path, GITHUB_STEP_SUMMARY=str(summary))
    context = {"github": {"ref": "refs/heads/main", "workspace": str(workspace)}, "steps": {}}
    failed, uploaded, ran = False, [], []
    for number, step in enumerate(job["steps"]):
        if not condition(step.get("if"), context, failed):
            continue
        uses = step.get("uses", "")
        if uses.startswith(PROVIDED):
            if uses.startswith("actions/upload-artifact@"):
                uploaded.append(workspace / step["with"]["path"])
            continue
        if uses.startswith("./"):
            # The copy of this repository the README tells the user to keep, where the workflow names it.
            action_dir = workspace / uses[2:]
            action_dir.parent.mkdir(parents=True, exist_ok=True)
            action_dir.symlink_to(ROOT, target_is_directory=True)
            given = {k: str(v) for k, v in step.get("with", {}).items()}
            status, outputs, log = run_action(action_dir, given, workspace=workspace, env=env,
                                              tmp=tmp_path / f"step-{number}")
        elif step["run"].strip() == "pip install -e .":
            continue  # installs the user's own server; here my_server.py needs no installing
        else:
            assert uses == "", uses
            status, outputs, log = run_script(substitute(step["run"], context), ["bash", "-e"], cwd=workspace,
                                              env=env, tmp=tmp_path / f"step-{number}")
        ran.append(step.get("id") or step["run"].split("\n")[0])
        assert status == 0, log
        if "id" in step:
            context["steps"][step["id"]] = {"outputs": outputs}

    assert "mcp" in ran and len(ran) == 2, ran  # the action and the badge step
    outputs = context["steps"]["mcp"]["outputs"]
    assert outputs["failed"] == "0" and int(outputs["passed"]) > 0, outputs
    roles = ("server", "host", "gateway")
    for role in roles:  # every role ran, each with outputs of its own
        assert outputs[f"{role}-exit-code"] == "0" and outputs[f"{role}-failed"] == "0", (role, outputs)
        assert int(outputs[f"{role}-passed"]) > 0 and (workspace / outputs[f"{role}-badge"]).is_file(), (role, outputs)
    assert int(outputs["passed"]) == sum(int(outputs[f"{role}-passed"]) for role in roles)
    assert uploaded and all(path.is_dir() and all((path / role / "results.json").is_file() for role in roles)
                            for path in uploaded)
    text = summary.read_text()
    assert all(f"MCP extension conformance: {role} role" in text for role in roles), text[:500]
    results = {role: json.loads((uploaded[0] / role / "results.json").read_text()) for role in roles}
    assert results["server"]["summary"]["xfail"] == 1  # the baseline's entry, as the README says
    assert all(results[role]["role"] == role for role in roles)
    for role in roles:
        assert (uploaded[0] / role / "official" / "scenarios.json").is_file()  # the official shape, per role
        badge = subprocess.run(["git", "--git-dir", str(origin), "show", f"badges:mcp-{role}.svg"],
                               capture_output=True, text=True, check=True).stdout
        assert "<svg" in badge


def test_readme_names_every_input_and_output_of_the_action():
    line = README[README.index("Inputs: "):]
    line = line[:line.index(". ")]
    named = set(re.findall(r"`([\w-]+)`", line))
    declared = set(ACTION["inputs"]) | set(ACTION["outputs"])
    assert named == declared, named ^ declared


# -- one set of counts everywhere ----------------------------------------------------------------------------

# A server that fails a MUST check, fails another that the baseline lists (xfail), violates a SHOULD (warn),
# with a baseline entry for a check that passes (stale) and checks it skips; and the pipeline replay, whose
# BEHAVIOR-level checks report info: every outcome, in two roles.
BROKEN = ("execution-requirements/all-requirements-enforced", "preprocessor-tools/ordinary-tool-unaffected",
          "execution-requirements/unmet-error-names-requirement")
BASELINE = {"preprocessor-tools/server/ordinary-tool-unaffected": "known", "context-middleware/server/list-result-valid":
            "fixed since"}


def test_every_report_gives_the_same_count_of_each_outcome(tmp_path):
    """The console, summary.md, index.html, the badges, junit.xml, results.json and the Action's outputs: the
    same number for each outcome (pytest alone would call a warning and an info passed)."""
    import xml.etree.ElementTree as ET

    from conformance.core.model import OUTCOMES
    from conformance.report.counts import WORDS, phrase

    baseline = tmp_path / "baseline.yaml"
    baseline.write_text(yaml.safe_dump(BASELINE))
    flags = [arg for mutant in BROKEN for arg in ("--break", mutant)]
    given = {"role": "server gateway", "command": fake_command(*flags),
             "adapter": "reference_servers.gateway.adapter:factory", "baseline": str(baseline),
             "report-dir": str(tmp_path / "report")}
    status, outputs, log = run_action(ROOT, given, workspace=ROOT, env=base_env(tmp_path), tmp=tmp_path)
    assert status == 1, log
    total = dict.fromkeys(OUTCOMES, 0)
    console_lines = re.findall(r"^((?:\d+ [a-z]+(?:, )?)+) in [\d.]+s$", log, re.M)
    assert len(console_lines) == 2, log
    for role, console in zip(("server", "gateway"), console_lines):
        report = tmp_path / "report" / role
        summary = json.loads((report / "results.json").read_text())["summary"]
        counts = {o: summary[o] for o in OUTCOMES}
        for outcome, n in counts.items():
            total[outcome] += n
        assert console == phrase(counts)  # the console's closing line
        assert json.loads(outputs[f"{role}-counts"]) == counts  # the Action's outputs
        assert outputs[f"{role}-passed"] == str(counts["pass"])
        assert outputs[f"{role}-failed"] == str(counts["fail"] + counts["stale"])
        text = (report / "summary.md").read_text()
        assert f"Checks: {phrase(counts)}." in text
        header = "| profile | claimed | " + " | ".join(OUTCOMES) + " |"
        rows = [line.split("|")[3:-1] for line in text.split(header)[1].split("\n\n")[0].splitlines()[2:]]
        assert [sum(int(row[i]) for row in rows) for i in range(len(OUTCOMES))] == list(counts.values())
        page = (report / "index.html").read_text()
        pills = re.findall(r'<span class="pill"[^>]*>(\w+)</span> (\d+)', page.split('<p class="counts">')[1]
                           .split("</p>")[0])
        assert {o: int(n) for o, n in pills} == {o: n for o, n in counts.items() if n}
        junit = ET.parse(report / "junit.xml").getroot()
        properties = {p.get("name"): p.get("value") for p in junit.iter("property")
                      if p.get("name", "").startswith("mcpx-")}
        assert {o: int(properties[f"mcpx-{o}"]) for o in OUTCOMES} == counts
        per_case = [p.get("value") for case in junit.iter("testcase") for p in case.iter("property")
                    if p.get("name") == "outcome"]
        assert len(list(junit.iter("testcase"))) == summary["total"]  # no testcase without a verdict
        assert {o: per_case.count(o) for o in OUTCOMES} == counts
        badge = (report / "badges" / f"{role}.svg").read_text()
        said = re.findall(r"(\d+) (" + "|".join(WORDS.values()) + ")", badge)
        assert said and all(counts[o] == int(n) for n, word in said for o in OUTCOMES if WORDS[o] == word), said
    assert all(total.values()), total  # the two runs hold every outcome
    assert json.loads(outputs["counts"]) == total
