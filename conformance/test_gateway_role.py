"""Gateway-role checks as pytest tests: transparency through a gateway command, pipeline fixtures through
an adapter. Skipped without either."""

import pytest

from conformance.gateway import pipeline, transparency  # noqa: F401  (registers the gateway-role checks)
from conformance.model import REGISTRY

GATEWAY_CHECKS = sorted(c.id for c in REGISTRY.values() if c.role == "gateway")


@pytest.mark.parametrize("check_id", GATEWAY_CHECKS)
def test_check(check_id, mcpx_gateway_recordings, mcpx_verdict):
    mcpx_verdict(check_id, mcpx_gateway_recordings)
