"""Gateway role: an MCP proxy between clients and upstream servers.

Two halves (DESIGN.md §Gateway contract): transparency, where the suite plays the upstream server and
the downstream client, and pipeline semantics (sequential-pipeline), driven through an adapter
`factory(plugins) -> pipeline` over JSON fixtures (see ADAPTER.md beside this file).
"""

from . import (
    pipeline,  # noqa: F401  (registers the sequential-pipeline gateway checks)
    transparency,  # noqa: F401  (registers the transparency checks of the other four profiles)
)
