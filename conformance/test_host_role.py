"""Host-role checks as pytest tests: one test per check id, judged from the scenario runs.

Collected by `pytest --pyargs conformance` (or the CLI); skipped without a host command.
"""

import pytest

from conformance.host import record as recorder  # noqa: F401  (registers the host-role checks)
from conformance.model import REGISTRY

HOST_CHECKS = sorted(c.id for c in REGISTRY.values() if c.role == "host")


@pytest.mark.parametrize("check_id", HOST_CHECKS)
def test_check(check_id, mcpx_host_recordings, mcpx_verdict):
    mcpx_verdict(check_id, mcpx_host_recordings)
