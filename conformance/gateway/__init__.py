"""Gateway role: an MCP proxy between clients and upstream servers.

Two halves (DESIGN.md §Gateway contract): transparency, where the suite plays the upstream server and
the downstream client, and pipeline semantics (sequential-pipeline), driven through an adapter
`factory(plugins) -> pipeline` over JSON fixtures (see ADAPTER.md beside this file).

The check modules (`pipeline`, `transparency`) register their checks when imported; this package imports
neither, so that `python -m conformance.gateway.upstream` (the fixture server, standard library only) starts
in a twentieth of a second instead of paying for jsonschema and httpx.

"""
