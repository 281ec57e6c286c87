"""Server-role checks as pytest tests: one test per check id, judged from the recordings.

Collected by `pytest --pyargs conformance` (or the CLI); skipped without a server target.
"""

import pytest

from conformance import server  # noqa: F401  (registers the server-role checks)
from conformance.model import REGISTRY

SERVER_CHECKS = sorted(c.id for c in REGISTRY.values() if c.role == "server")


@pytest.mark.parametrize("check_id", SERVER_CHECKS)
def test_check(check_id, mcpx_server_recordings, mcpx_verdict):
    mcpx_verdict(check_id, mcpx_server_recordings)
