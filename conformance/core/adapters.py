"""Loading an adapter named on the command line as MODULE:FACTORY (the gateway's pipeline adapters, the
interceptors working group's fixture adapters): one loader, so both say the same thing when it fails."""

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
