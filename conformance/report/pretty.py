"""Indented JSON for the reports (results.json, the official checks.json, the evidence in index.html).

The standard library's encoder writes indented JSON in Python, one generator call per value: it was the largest
part of a run's own CPU after the imports (35-40 ms of a server-role run's reports, against under 10 for the
same documents compact). orjson writes the same text in C (the indent, the key order, non-ASCII characters as
they are, control characters escaped alike); a float may be spelled otherwise (`1e-7` for `1e-07`), the same
number. What orjson refuses (an integer past 64 bits, a lone surrogate, a key that is not a string) and every run
without orjson installed take the standard library's path, with its output.
"""

from __future__ import annotations

import json
from typing import Any

try:
    import orjson
except ImportError:  # pragma: no cover - installed with the suite; a copy without it writes the same documents
    orjson = None  # type: ignore[assignment]

# Types orjson would write natively where the standard library calls `default` (str): through `default` too.
_PASSTHROUGH = 0 if orjson is None else orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME


def pretty_json(value: Any, *, sort_keys: bool = False) -> str:
    """json.dumps(value, indent=2, ensure_ascii=False, sort_keys=sort_keys, default=str), written by orjson
    where it can."""
    if orjson is not None:
        option = orjson.OPT_INDENT_2 | _PASSTHROUGH | (orjson.OPT_SORT_KEYS if sort_keys else 0)
        try:
            return orjson.dumps(value, default=str, option=option).decode()
        except TypeError:  # orjson.JSONEncodeError is one
            pass
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=sort_keys, default=str)
