"""The reference host passes every host-role check, streaming and not, and leaves nothing behind."""

import pytest

from tests.helpers import HOST_CHECKS, host_verdicts, reference_host

NOT_OK = ("fail", "warn", "stale")


@pytest.mark.parametrize("stream", ["1", "0"], ids=["stream", "plain"])
def test_reference_host_passes_every_host_check(stream):
    verdicts = host_verdicts(reference_host(), env={"MCPX_STREAM": stream}, timeout=30)
    assert set(verdicts) == set(HOST_CHECKS)
    assert {c: f"{r.outcome}: {r.reason}" for c, r in verdicts.items() if r.outcome in NOT_OK} == {}
