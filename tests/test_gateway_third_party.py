"""Gateways nobody here wrote, in front of the suite's upstream: Gatekit 0.3.0 and mcp-proxy 0.13.0.

Pinned findings (conformance/gateway/FINDINGS.md): both let `preprocessor` and
`execution.requirements` through unchanged and carry gated calls and their errors; neither forwards
`contextMiddleware` or `augmentation`, and neither refuses their methods with -32601 (Gatekit answers
-32004 "Non-namespaced request reached routing layer", mcp-proxy, on the mcp 1.x SDK, -32602). An
upstream fix flips a visible assertion here.

They conflict with the project's SDK, so they live in their own virtualenvs: `nox -s gateway_third_party`
builds them; elsewhere point MCPX_GATEKIT at `gatekit-gateway` and MCPX_MCP_PROXY at `mcp-proxy`
(or found on PATH; `nox -s gateway_third_party` installs both in their own virtualenvs and sets them).
"""

import os
import shutil
from pathlib import Path

import pytest

from tests.helpers import PY, ROOT, gateway_verdicts, not_ok


def tool(env: str, name: str) -> str | None:
    candidate = os.environ.get(env)
    if candidate and Path(candidate).is_file():
        return candidate
    return shutil.which(name)


GATEKIT = tool("MCPX_GATEKIT", "gatekit-gateway")
MCP_PROXY = tool("MCPX_MCP_PROXY", "mcp-proxy")
LAUNCHER = ROOT / "tests" / "gateway" / "gatekit_launcher.py"

# How each is put in front of the upstream: (gateway command, options of gateway_verdicts).
RUNS = {
    "gatekit-stdio": (lambda: f"{PY} {LAUNCHER} {GATEKIT}", {}),
    # mcp-proxy as a client: a stdio endpoint in front of the upstream served over Streamable HTTP.
    "mcp-proxy-stdio-to-http": (lambda: f"{MCP_PROXY} --transport streamablehttp {{upstream}}", {"upstream": "http"}),
    # mcp-proxy as a server: Streamable HTTP in front of the upstream on stdio.
    "mcp-proxy-http-to-stdio": (lambda: f"{MCP_PROXY} --port {{port}} -- sh -c {{upstream}}",
                                {"url": "http://127.0.0.1:{port}/mcp"}),
}
INSTALLED = {"gatekit-stdio": GATEKIT, "mcp-proxy-stdio-to-http": MCP_PROXY, "mcp-proxy-http-to-stdio": MCP_PROXY}

# What each does with a method it does not forward, as found.
REFUSAL = {"gatekit-stdio": "code -32004 instead of -32601",
           "mcp-proxy-stdio-to-http": "code -32602 instead of -32601",
           "mcp-proxy-http-to-stdio": "code -32602 instead of -32601"}
FAILING = {"context-middleware/gateway/capability-forwarded-or-refused",
           "augmentation/gateway/capability-forwarded-or-refused"}
SKIPPED = {"context-middleware/gateway/invoke-every-content-type-unchanged",
           "context-middleware/gateway/invoke-params-arrive-unchanged",
           "augmentation/gateway/augment-every-content-type-unchanged",
           "augmentation/gateway/augment-params-arrive-unchanged"}


@pytest.mark.parametrize("run", sorted(RUNS))
def test_third_party_gateway_findings(run):
    if not INSTALLED[run]:
        pytest.skip(f"{run}: the tool is not installed (see the module docstring)")
    command, options = RUNS[run]
    verdicts = gateway_verdicts(command(), request_timeout=10.0, **options)
    failing = not_ok(verdicts)
    assert set(failing) == FAILING, failing
    assert all(REFUSAL[run] in reason for reason in failing.values()), failing
    assert {cid for cid, r in verdicts.items() if r.outcome == "skip"} == SKIPPED
    assert {r.outcome for cid, r in verdicts.items() if cid not in FAILING | SKIPPED} == {"pass"}
