"""The composite action's run step, executed as GitHub would run it (without GitHub)."""

import os
import subprocess
import sys

import yaml

from tests.helpers import ROOT, fake_command

ACTION = yaml.safe_load((ROOT / "action.yml").read_text())


def run_step(tmp_path, **inputs):
    step = next(s for s in ACTION["runs"]["steps"] if s.get("id") == "run")
    output, summary = tmp_path / "output", tmp_path / "summary"
    env = {**os.environ, "GITHUB_OUTPUT": str(output), "GITHUB_STEP_SUMMARY": str(summary),
           "PATH": f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}",
           "ROLE": "server", "COMMAND": "", "URL": "", "IMAGE": "", "PROFILES": "", "BASELINE": "", "STRICT": "false",
           "REPORT_DIR": str(tmp_path / "report"), **inputs}
    proc = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    outputs = dict(line.split("=", 1) for line in output.read_text().splitlines())
    return proc, outputs, summary.read_text() if summary.exists() else ""


def test_action_reports_counts_badge_and_summary(tmp_path):
    proc, outputs, summary = run_step(tmp_path, COMMAND=fake_command())
    assert proc.returncode == 0, proc.stderr
    # 34 checks of the four profiles the fake serves, and interceptors' unadvertised-method check
    assert outputs["passed"] == "35" and outputs["failed"] == "0"
    assert outputs["badge"].endswith("badges/server.svg") and os.path.exists(outputs["badge"])
    assert "MCP extension conformance" in summary


def test_action_fails_the_job_on_a_failing_check(tmp_path):
    proc, outputs, _ = run_step(tmp_path, COMMAND=fake_command("--break", "augmentation/prepend-note-hint"),
                                PROFILES="augmentation")
    assert proc.returncode == 1
    assert outputs["failed"] == "1"
