"""Loading an adapter named `module:factory`: the one loader of every adapter target.

Two targets are adapters rather than processes: the gateway role's pipeline fixtures
(conformance/gateway/replay.py, contract in conformance/gateway/ADAPTER.md) and the server role's replay
of the interceptors working group's fixtures (conformance/server/wg_fixtures.py). Both name a Python
callable as `package.module:factory`; the attribute part may be dotted (`module:Class.create`).
"""

from __future__ import annotations

import importlib
from typing import Any, Callable


def load_adapter(spec: str) -> Callable:
    """"package.module:factory" -> the factory; ImportError/AttributeError/ValueError say what is wrong."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"adapter must be given as module:factory, not {spec!r}")
    module = importlib.import_module(module_name)
    target: Any = module
    for part in attr.split("."):
        target = getattr(target, part)
    if not callable(target):
        raise ValueError(f"{spec} is not callable")
    return target
