"""The harness under hostile hosts: a failed scenario with a reason, within the timeout, nothing left behind."""

import resource
import shlex
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.helpers import host_verdicts
from tests.hosts.zoo_host import MODES
from tests.test_interrupt import processes_with

ZOO = Path(__file__).resolve().parent / "hosts" / "zoo_host.py"
TURN_TIMEOUT = 2.0
PROFILES = ("preprocessor-tools", "execution-requirements")  # a three-turn and a one-turn scenario
# mode -> a fragment a person would look for in the failing checks' reasons (None: nothing may fail for it)
EXPECTED = {
    "never-prints": "the host printed nothing for turn 1 within 2 s",
    "garbage": "the host printed a line that is not JSON: 'Sure! Here is my answer:'",
    "partial-json": "not JSON",
    "not-an-answer": "JSON that is not an assistant message",
    "exits-before-last-turn": "the host closed stdout before answering turn 2 (exit code 3; stderr ends: zoo host: "
                              "crashed on turn 2",
    "exit-at-once": "(exit code 1; stderr ends: zoo host: giving up",
    "huge-line": "a message over 1048576 bytes",
    "line-flood": "not JSON: 'noise'",
    "ignores-stdin-close": "the host never sent the model a request",  # and it is stopped after the grace
    "grandchild-then-hang": "the host printed nothing for turn 1 within 2 s",
}


@pytest.mark.parametrize("mode", sorted(MODES))
def test_zoo_host_ends_with_a_reason(mode):
    marker = f"zoo-host-{uuid.uuid4().hex}"
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(ZOO))} {mode} {marker}"
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.monotonic()
    verdicts = host_verdicts(command, profiles=PROFILES, claimed=PROFILES, timeout=TURN_TIMEOUT,
                             marker=marker)
    elapsed = time.monotonic() - started
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    # Two scenarios run side by side; each ends within a turn timeout plus the exit grace (5 s) plus start-up.
    assert elapsed < TURN_TIMEOUT + 5 + 4, f"{mode} took {elapsed:.1f} s"
    failing = {cid: r.reason or "" for cid, r in verdicts.items() if r.outcome in ("fail", "warn")}
    assert all("internal error" not in reason for reason in failing.values())
    if EXPECTED[mode] is None:
        assert not failing, failing
    else:
        assert failing, mode
        assert any(EXPECTED[mode] in reason for reason in failing.values()), (mode, list(failing.values())[:3])
        assert not [r for r in verdicts.values() if r.outcome == "pass"] or mode == "exits-before-last-turn"
    if mode == "ignores-stdin-close":  # why its exit code is the harness's, in the evidence beside the verdict
        notes = [e["response"].get("exitNote") for r in verdicts.values() for e in r.exchanges or ()
                 if isinstance(e.get("response"), dict)]
        assert any(note and "did not exit within 5 s of stdin closing" in note for note in notes), notes
    assert grown_mib < 150, f"{mode} grew the suite by {grown_mib:.0f} MiB"
    time.sleep(0.3)
    assert processes_with(marker) == []


def test_a_host_that_cannot_start_is_unavailable():
    verdicts = host_verdicts("/nonexistent/host --flag", profiles=PROFILES, claimed=PROFILES)
    reasons = {r.reason for r in verdicts.values()}
    assert all(r.outcome == "fail" for r in verdicts.values())
    assert any("cannot start '/nonexistent/host --flag'" in reason for reason in reasons), reasons
