"""Small pure readers every role's judges share: one rule each, so a verdict never hangs on which copy ran.

- `canonical` / `short`: JSON equality and short display.
- `text_of`, `error_text`, `failed`: what a tools/call (or any call) answered.
- `match_name` / `find_named`: a name as offered, or a prefixed form of it. Gateways and hosts may prefix
  what they aggregate (`fixture__conformance_echo`, `server.tool`); the match is the exact name, else a
  name ending in it right after a non-alphanumeric separator.
"""

from __future__ import annotations

import json
from typing import Any


def canonical(value: Any) -> str:
    """Canonical JSON for equality: sorted keys, no insignificant whitespace."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def short(value: Any, limit: int = 300) -> str:
    text = canonical(value)
    return text if len(text) <= limit else text[:limit] + "…"


def text_of(result: Any) -> str:
    """All text of a CallToolResult's text blocks, joined."""
    if not isinstance(result, dict):
        return ""
    return "\n".join(b.get("text", "") for b in result.get("content") or () if isinstance(b, dict)
                     and b.get("type") == "text" and isinstance(b.get("text"), str))


def failed(ex) -> bool:
    """A call fails as a JSON-RPC error or as a result with isError: true."""
    return ex.has_error or (ex.has_result and isinstance(ex.result, dict) and ex.result.get("isError") is True)


def error_text(ex) -> str:
    """Everything an error says, whether it came as a JSON-RPC error or an isError result."""
    if ex.has_error:
        return canonical(ex.error)
    return text_of(ex.result) + canonical((ex.result or {}).get("structuredContent"))


def match_name(names, wanted: str) -> str | None:
    """The name that is `wanted`, else one ending in it right after a separator (a prefix someone added)."""
    names = [n for n in names if isinstance(n, str)]
    if wanted in names:
        return wanted
    for name in names:
        if len(name) > len(wanted) and name.endswith(wanted) and not name[-len(wanted) - 1].isalnum():
            return name
    return None


def find_named(items, name: str) -> dict | None:
    """The item (a dict with "name") called `name`, or a prefixed form of it; see `match_name`."""
    items = [i for i in items or () if isinstance(i, dict) and isinstance(i.get("name"), str)]
    found = match_name([i["name"] for i in items], name)
    return next((i for i in items if i["name"] == found), None) if found else None
