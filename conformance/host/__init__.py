"""Host role: the suite plays the model and every MCP server a host connects to (HARNESS.md).

Kept free of imports: the scenario servers a host starts run as
`python -m conformance.host.scenario_server` and should start fast. The checks
register when `conformance.host.record` is imported.
"""
