"""Ctrl-C in the middle of a run: the CLI exits promptly, without a traceback, leaving no process behind."""

import os
import shlex
import signal
import subprocess
import sys
import time
import uuid

import pytest

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
    assert cli.returncode != 0
    time.sleep(0.5)
    assert processes_with(marker) == []
