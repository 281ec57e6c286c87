"""The reference host passes every host-role check, streaming and not, and leaves nothing behind: streaming as
the demo runs it, a child of its fork server (reference_clients/host/prefork.py), and plain as a user starts it."""


import pytest

from conformance.host.record import FEATURES, scenarios_for_checks
from tests.helpers import HOST_CHECKS, host_fork_server, host_verdicts, reference_host

NOT_OK = ("fail", "warn", "stale")


@pytest.fixture(scope="module")
def fork_server(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("prefork") / "host.sock")
    with host_fork_server(path):
        yield path


@pytest.mark.parametrize("stream,forked", [("1", True), ("0", False)], ids=["stream-forked", "plain"])
def test_reference_host_passes_every_host_check(stream, forked, request):
    env = {"MCPX_STREAM": stream}
    if forked:
        env["MCPX_HOST_PREFORK"] = request.getfixturevalue("fork_server")
    verdicts = host_verdicts(reference_host(), env=env, timeout=30, features=FEATURES)
    assert set(verdicts) == set(HOST_CHECKS)
    assert {c: f"{r.outcome}: {r.reason}" for c, r in verdicts.items() if r.outcome in NOT_OK} == {}
    assert {c: r.outcome for c, r in verdicts.items() if r.outcome == "skip"} == {}


def test_unclaimed_overrides_are_skipped_not_passed():
    """Without --claim interceptor-overrides the overrides scenario is not run and its checks say so. Only what
    they would read is recorded (record.scenarios_read): without the claim, nothing."""
    ids = [c for c in HOST_CHECKS if c.startswith("interceptors/host/override-")
           or c == "interceptors/host/named-entry-only"]  # judged on the overrides scenario's named entries
    verdicts = host_verdicts(reference_host(), profiles=["interceptors"], claimed=["interceptors"], timeout=30,
                             only=scenarios_for_checks(ids))
    overrides = {c: r for c, r in verdicts.items() if c in ids}
    assert len(overrides) == 10
    assert {c: (r.outcome, r.reason.split(":")[0]) for c, r in overrides.items()} == {
        c: ("skip", "not claimed") for c in overrides}
