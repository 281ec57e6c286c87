"""Gateway role: an MCP proxy between clients and upstream servers.

Two halves. Transparency: the suite plays the upstream server (`upstream.py`) and the downstream
client; one module per profile (`preprocessor_tools`, `execution_requirements`, `context_middleware`,
`augmentation`, `interceptors`, the last three sharing `methods`), `common` for fixture lookup and the wire check,
`record` for recording through the gateway (`launch` starts it). Pipeline semantics (sequential-pipeline):
`replay` drives an adapter `factory(plugins) -> pipeline` through JSON fixtures (fixtures/pipeline/; see
ADAPTER.md beside this file), `sequential_pipeline` judges the replays.

The check modules register their checks when imported; this package imports none of them, so that
`python -m conformance.gateway.upstream` (the fixture server, standard library only) starts in a
twentieth of a second instead of paying for jsonschema and httpx.
"""
