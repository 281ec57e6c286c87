"""Server role: the suite is the client of an MCP server.

One module per profile (preprocessor_tools, execution_requirements, context_middleware, augmentation,
interceptors); each has a `claimer` (what the server shows of the profile), a `driver` (the requests sent
when the profile is claimed), optionally an `unclaimed_driver`, and its checks. The suite's client is
`conformance.client` (a session on a connection, shared with the gateway role); `recording.py` is what the
server role records beyond it; `record.py` records the profiles, concurrently, and registers the checks when
imported, as `conformance.host.record` and `conformance.gateway.record` do for theirs. `wg_fixtures.py` is the
role's second kind of target: the interceptors working group's fixtures replayed through an adapter, with
checks of its own.
"""
