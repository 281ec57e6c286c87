"""The reference host's fork server (reference_servers/prefork.py): `python -m reference_clients.host --prefork
SOCKET` imports the mcp SDK and openai once, and every host started with `MCPX_HOST_PREFORK=SOCKET` in its
environment runs as its child. The demo starts one for its host role (conformance/cli.py)."""

from __future__ import annotations

from reference_servers import prefork

ENV = "MCPX_HOST_PREFORK"
NAME = "reference host"


def hand_over(path: str) -> None:
    """Run this host as a child of the fork server at `path` and exit with its code; return to run it here."""
    prefork.hand_over(path, NAME)


def serve(path: str, run_host) -> int:
    return prefork.serve(path, NAME, ENV, _preload, run_host)


def _preload() -> None:
    # What a host imports before its first turn; modules imported here are shared by every child.
    import ctypes  # noqa: F401 - prefork's _die_with_parent

    import openai  # noqa: F401
    from mcp.client import stdio, streamable_http  # noqa: F401

    from . import host, interceptors, llm, logic, servers  # noqa: F401
