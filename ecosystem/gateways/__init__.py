"""Gateways nobody here wrote, judged by the suite: what it takes to run each one and what was found.

One directory per gateway: `launcher.py` starts it in front of the suite's upstream (MCPX_UPSTREAM_COMMAND)
when it takes its upstreams only from a config file (Gatekit, Lasso, ContextForge), and `adapter.py` drives
its plugin pipeline through the pipeline-adapter contract (conformance/gateway/ADAPTER.md) when it has one
(Gatekit, ContextForge). FINDINGS.md records the results; tests/test_gateway_third_party.py and
tests/test_pipeline_fixtures.py pin them, and `nox -s gateway_third_party` installs each gateway in its own
virtualenv or npm prefix to run them.
"""
