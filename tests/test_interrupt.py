"""Ctrl-C in the middle of a run: the CLI exits promptly, without a traceback, leaving no process behind, and
says "interrupted" everywhere: one console line, exit code 130, results.json, summary.md, the page, the badges,
and no official checks.json."""

import json
import os
import shlex
import signal
import subprocess
import sys
import time
import uuid

import pytest

from conformance.core import schemas_loader
from tests.helpers import ROOT


def processes_with(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                cmdline = handle.read().decode(errors="replace")
            with open(f"/proc/{entry}/stat") as handle:
                if handle.read().split()[2] == "Z":
                    continue
        except OSError:
            continue
        if marker in cmdline:
            found.append(int(entry))
    return found


# The CLI, then one server and its child on one connection, or one server (and child) per profile isolated.
@pytest.mark.parametrize("flags,at_least", [((), 3), (("--isolate-profiles",), 11)], ids=["one-connection", "isolated"])
def test_ctrl_c_leaves_no_process_behind(flags, at_least):
    marker = f"mcpx-marker-{uuid.uuid4().hex}"
    # A server that never answers and has a child of its own.
    # (The child is Python, not `sleep 300 MARKER`: GNU sleep refuses the marker as a time and exits at once.)
    server = (f"import subprocess,sys,time; subprocess.Popen([sys.executable,'-c','import time; time.sleep(300)',"
              f"'{marker}']); time.sleep(300)")
    command = f"{shlex.quote(sys.executable)} -c {shlex.quote(server)} {marker}"
    cli = subprocess.Popen([sys.executable, "-m", "conformance", "server", "--command", command, "--timeout", "60",
                            "--report-dir", f"/tmp/{marker}", *flags], cwd=ROOT, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 20
    while len(processes_with(marker)) < at_least and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(1.0)  # let the servers start their children
    assert len(processes_with(marker)) >= at_least, "the servers never started"
    cli.send_signal(signal.SIGINT)
    out, err = cli.communicate(timeout=20)
    assert "Traceback" not in out + err
    assert cli.returncode == 130 and err.splitlines() == ["mcp-ext-conformance: interrupted"], err
    time.sleep(0.5)
    assert processes_with(marker) == []


# -- an interrupted run says so everywhere --------------------------------------------------------------------

SLOW_FAKE = [sys.executable, str(ROOT / "tests" / "servers" / "fake_server.py"), "--slow", "0.04"]


def earlier_run(report) -> None:
    """What a finished earlier run left in the report directory, and a file of the user's beside it."""
    (report / "badges").mkdir(parents=True)
    (report / "badges" / "server-earlier.svg").write_text("<svg>interceptors 27/27 passed</svg>")
    (report / "official" / "server-server-earlier").mkdir(parents=True)
    (report / "official" / "server-server-earlier" / "checks.json").write_text('[{"status": "SUCCESS"}]')
    (report / "results.json").write_text('{"earlier": true}')
    (report / "users-notes.txt").write_text("mine")


def interrupt_when(report, seen: str | None, after: float) -> subprocess.CompletedProcess:
    """Run the CLI against a slow server and send SIGINT once stdout shows `seen` (None: at once), `after`
    seconds later, as a user pressing Ctrl-C."""
    import threading

    cli = subprocess.Popen([sys.executable, "-m", "conformance", "server", "--command", shlex.join(SLOW_FAKE),
                            "--report-dir", str(report)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
    out: list[str] = []
    reached = threading.Event()

    def read() -> None:
        assert cli.stdout is not None
        for line in cli.stdout:
            out.append(line)
            if seen is None or seen in line:
                reached.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    if seen is None:
        reached.set()
    assert reached.wait(60), "".join(out)
    time.sleep(after)
    cli.send_signal(signal.SIGINT)
    err = cli.stderr.read() if cli.stderr else ""
    cli.wait(timeout=30)
    reader.join(timeout=5)
    return subprocess.CompletedProcess(cli.args, cli.returncode, "".join(out), err)


@pytest.mark.parametrize("where", ["imports", "command line"])
def test_ctrl_c_before_the_command_line_is_read_is_an_interrupted_run_not_a_traceback(tmp_path, where):
    """A Ctrl-C while the CLI imports its modules or builds its parser (the report directory not known yet) is
    noted and acted on once the arguments are read: the run ends as interrupted, in one line and in its reports
    (seen on a loaded machine: a SIGINT 0.6 s after start landed in the parser's construction, a traceback)."""
    report = tmp_path / "report"
    earlier_run(report)
    hook = ("import os, signal, time\nos.kill(os.getpid(), signal.SIGINT); time.sleep(0.2)\n" if where == "imports" else
            "import os, signal, time\nfrom conformance import cli\nbuild = cli.build_parser\n"
            "def build_parser():\n    os.kill(os.getpid(), signal.SIGINT); time.sleep(0.2); return build()\n"
            "cli.build_parser = build_parser\n")
    # As `python -m conformance` runs: the handler first, then the imports (here with a Ctrl-C among them).
    script = ("from conformance import _sigint\n_sigint.hold()\n" + hook +
              "import sys\nfrom conformance.cli import run\n"
              f"sys.argv = ['mcp-ext-conformance', 'server', '--command', {shlex.join(SLOW_FAKE)!r}, "
              f"'--report-dir', {str(report)!r}]\nrun()\n")
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 130, proc.stderr
    assert proc.stderr.splitlines() == ["mcp-ext-conformance: interrupted"]
    doc = json.loads((report / "results.json").read_text())
    assert doc["interrupted"] is True and doc["exitCode"] == 130 and "earlier" not in doc
    assert (report / "users-notes.txt").read_text() == "mine"


# Points of a run: Python starting the CLI, the target starting, mid-recording, late in the recording, while
# checks are judged (some verdicts in, others not) and about when the reports are written, each twice: where
# the signal lands within them varies run to run (a run that finished first must then be a finished run).
POINTS = {"start": (None, 0.6), "target": ("recording ", 0.0), "mid": ("[1/5]", 0.3), "late": ("[3/5]", 0.1),
          "judging": ("[5/5]", 1.0), "reports": ("[5/5]", 1.5)}


@pytest.mark.parametrize("seen,after", list(POINTS.values()) * 2,
                         ids=[f"{p}-{n}" for n in (1, 2) for p in POINTS])
def test_ctrl_c_mid_run_says_interrupted_everywhere(tmp_path, seen, after):
    report = tmp_path / "report"
    earlier_run(report)
    proc = interrupt_when(report, seen, after)
    assert "Traceback" not in proc.stdout + proc.stderr
    doc = json.loads((report / "results.json").read_text())
    assert "earlier" not in doc  # never the earlier run's results
    assert not (report / "badges" / "server-earlier.svg").exists()
    assert not (report / "official" / "server-server-earlier").exists()
    assert (report / "users-notes.txt").read_text() == "mine"  # not the run's: left alone
    assert not [p for p in report.iterdir() if p.name.startswith(".mcpx-partial-")]  # no half-written folder
    if proc.returncode != 130:  # the run ended before the signal: it is a finished run, in every file
        assert proc.returncode == 0 and doc["exitCode"] == 0 and doc["interrupted"] is False, proc.stderr
        return
    assert proc.stderr.splitlines() == ["mcp-ext-conformance: interrupted"]  # one line, nothing else on stderr
    assert doc["interrupted"] is True and doc["exitCode"] == 130
    assert schemas_loader.errors("results", doc) == []
    summary = (report / "summary.md").read_text()
    assert summary.startswith("# ⛔ Interrupted") and "Every check that ran passed" not in summary
    assert "sent no serverInfo" not in summary
    assert "Interrupted (Ctrl-C) before the run finished" in (report / "index.html").read_text()
    for badge in (report / "badges").glob("*.svg"):  # no green badge: every one says interrupted
        assert "interrupted" in badge.read_text() and "passed" not in badge.read_text(), badge.name
    assert not (report / "official").exists()  # no official checks.json claiming SUCCESS
    if (report / "junit.xml").exists():
        assert 'name="mcpx-interrupted" value="true"' in (report / "junit.xml").read_text()
