"""Ctrl-C in the middle of a run: the CLI exits promptly, without a traceback, leaving no process behind."""

import os
import shlex
import signal
import subprocess
import sys
import time
import uuid

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


def test_ctrl_c_leaves_no_process_behind():
    marker = f"mcpx-marker-{uuid.uuid4().hex}"
    # A server that never answers and has a child of its own.
    server = (f"import subprocess,time; subprocess.Popen(['sleep','300','{marker}']); time.sleep(300)")
    command = f"{shlex.quote(sys.executable)} -c {shlex.quote(server)} {marker}"
    cli = subprocess.Popen([sys.executable, "-m", "conformance", "server", "--command", command, "--timeout", "60",
                            "--report-dir", f"/tmp/{marker}"], cwd=ROOT, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 20
    while len(processes_with(marker)) < 5 and time.monotonic() < deadline:  # the CLI, then servers and children
        time.sleep(0.1)
    time.sleep(1.0)  # let the servers start their children
    assert len(processes_with(marker)) >= 5, "the servers never started"
    cli.send_signal(signal.SIGINT)
    out, err = cli.communicate(timeout=20)
    assert "Traceback" not in out + err
    assert cli.returncode != 0
    time.sleep(0.5)
    assert processes_with(marker) == []
