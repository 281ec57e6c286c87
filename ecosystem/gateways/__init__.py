"""Gateways nobody here wrote, judged by the suite: what it takes to run each one and what was found.

One directory per gateway: `launcher.py` starts it in front of the suite's upstream (MCPX_UPSTREAM_COMMAND)
when it takes its upstreams only from a config file (Gatekit, Lasso, ContextForge), and `adapter.py` drives
its plugin pipeline through the pipeline-adapter contract (conformance/gateway/ADAPTER.md) when it has one
(Gatekit, ContextForge). hangar/ puts mcp-hangar's interceptor routes on an MCP connection (bridge.py) and
behind the working group's adapter contract (wg_adapter.py). FINDINGS.md and docs/ecosystem.md record the
results; tests/test_gateway_third_party.py, tests/test_pipeline_fixtures.py and tests/test_hangar_third_party.py
pin them, and `nox -s gateway_third_party` / `nox -s hangar_third_party` install each gateway in its own
virtualenv or npm prefix to run them.
"""
