"""Targets: where the implementation under test runs, behind one small interface.

`TargetSpec` says how to reach it (a command for stdio, a URL for Streamable
HTTP); `TargetSpec.connect()` gives a fresh `Connection` (see base.py) as an
async context manager. Every role's checks use this and nothing else; docker.py holds the Docker target, peerkit.py the
process kit (process groups, stderr tails, SDK-free JSON-RPC peers) that targets and harnesses share.
"""

from __future__ import annotations

import importlib

# Exported lazily: peerkit (the process kit) lives here too, and the SDK-free peers that import it must
# not pay for anyio and the connection classes.
_EXPORTS = {"Connection": "base", "EncodedParams": "base", "Exchange": "base", "TargetUnavailable": "base", "WireEvent": "base",
            "now": "base", "TargetSpec": "spec"}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
