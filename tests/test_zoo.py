"""The suite under hostile servers: a verdict and a reason for each, within the timeout, nothing left behind.

Each zoo member (tests/servers/zoo_server.py) misbehaves in one way. The run
must end within its request timeout plus a small bound, name the problem in
the failing checks' reasons, keep memory bounded under floods and giant
messages, and leave no process.
"""

import resource
import shlex
import sys
import time
import uuid
from pathlib import Path

import pytest

from conformance.server import record as server_record
from conformance.targets import TargetSpec
from conformance.targets.base import STALL_GRACE
from tests.helpers import server_verdicts
from tests.servers.zoo_server import MODES
from tests.test_interrupt import processes_with

ZOO = Path(__file__).resolve().parent / "servers" / "zoo_server.py"
TIMEOUT = 2.0
# A member that never answers at all waits out a timeout whatever it is (it sleeps an hour: 7,200 times this
# one), so it gets a short one; the others must answer the requests before their misbehaviour within TIMEOUT,
# a Python start-up included, on a loaded machine too.
SILENT_TIMEOUT = 0.5
TIMEOUTS = {"hang-at-initialize": SILENT_TIMEOUT}
# mode -> a fragment a person would look for in some failing check's reason
EXPECTED = {
    "hang-at-initialize": f"no response to initialize within {SILENT_TIMEOUT:g} s",
    "hang-mid-call": "no response to tools/call within 2 s",
    "hang-after-initialize": "(the target had already left tools/list unanswered)",
    "crash-mid-run": "server closed stdout (exit code 3; stderr ends: zoo: segmentation fault",
    "exit-at-once": "server closed stdout (exit code 1)",
    "garbage": "not JSON",
    "partial-json": "not JSON",
    "wrong-ids": "which the suite never sent",
    "duplicate-ids": "a second response for id",
    "huge-result": "a message over",
    "notification-flood": None,  # valid, only many: must pass, with memory bounded
    "drip": None,  # slow but correct: must simply pass what it can
    "endless-notifications": "later ones were not kept",  # the log of received messages stays bounded
}


def run(mode: str):
    marker = f"zoo-{uuid.uuid4().hex}"
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(ZOO))} {mode} {marker}"
    spec = TargetSpec("stdio", command=command, timeout=TIMEOUTS.get(mode, TIMEOUT), max_message_bytes=4 * 1024 * 1024)
    started = time.monotonic()
    verdicts = server_verdicts(spec, run_timeout=20)
    return verdicts, time.monotonic() - started, marker


@pytest.mark.parametrize("mode", sorted(MODES))
def test_zoo_member_ends_with_a_reason(mode):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    verdicts, elapsed, marker = run(mode)
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    # Each profile records on its own connection, concurrently. Within one, the first request left unanswered
    # waits out the timeout, and every later one shares what is left of STALL_GRACE: one timeout plus the
    # grace per run, whatever the target does, plus start-up and teardown.
    assert elapsed < TIMEOUTS.get(mode, TIMEOUT) + STALL_GRACE + 4, f"{mode} took {elapsed:.1f} s"
    reasons = [r.reason or "" for r in verdicts.values() if r.outcome == "fail"]
    assert all("internal error" not in reason for reason in reasons)
    if EXPECTED[mode] is None:
        assert not reasons, reasons
    else:
        assert any(EXPECTED[mode] in reason for reason in reasons), (mode, reasons[:5])
    # What a connection keeps is bounded (MAX_KEPT_MESSAGES): the bound grows with the connections, one a profile.
    assert grown_mib < 40 * len(server_record.PROFILES), f"{mode} grew the suite by {grown_mib:.0f} MiB"
    time.sleep(0.3)
    assert processes_with(marker) == []


@pytest.mark.parametrize("mode", ["hang-after-initialize"])
def test_a_hang_costs_one_timeout_per_stage_not_one_per_request(mode):
    """The unanswered requests of a profile wait their timeouts side by side: once one of them is unanswered,
    the rest are sent at once (an ordered counter read says nothing after an unanswered call)."""
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(ZOO))} {mode} zoo-{uuid.uuid4().hex}"
    spec = TargetSpec("stdio", command=command, timeout=TIMEOUT)
    recordings = server_record.record_sync(spec, server_record.PROFILES, claimed=set(server_record.PROFILES), run_timeout=60)
    judged = 0
    for profile, rec in recordings.items():
        after_list = [ex for label, ex in rec.exchanges.items() if label not in ("initialize", "tools/list")
                      and not label.endswith("/list")]
        unanswered = [ex for ex in after_list if ex.failure and "no response" in ex.failure]
        if len(unanswered) < 2:
            continue  # nothing to send after the lists (no tools shown): nothing to spread
        judged += 1
        # Sequential requests would start a timeout apart; these start together (two waves at most).
        spread = max(ex.started for ex in unanswered) - min(ex.started for ex in unanswered)
        assert spread < TIMEOUT * 1.5, (profile, [(ex.label, ex.started) for ex in unanswered])
    assert judged >= 2, {p: list(r.exchanges) for p, r in recordings.items()}
