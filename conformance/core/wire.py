"""Validation of every message on the wire: JSON-RPC envelope and base MCP shapes.

Two layers, kept apart so one fault fails one check:
- base protocol (this module): the JSON-RPC 2.0 envelope, checked by hand for
  precise messages, and base MCP results and notifications, checked against the
  JSON Schemas of the installed `mcp` SDK's own types (what "valid MCP" means to
  the SDK the implementation most likely uses; base_schemas.py);
- extension shapes (schemas/, through `schemas_loader`): judged by each
  profile's shape checks, not here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import base_schemas

if TYPE_CHECKING:  # a type only: the check model imports no transport
    from ..targets import WireEvent

# Results whose base shape the SDK's types describe, by request method.
_RESULT_TYPES = {
    "initialize": "InitializeResult",
    "tools/list": "ListToolsResult",
    "tools/call": "CallToolResult",
    "ping": "EmptyResult",
    "server/discover": "DiscoverResult",  # 2026-07-28; checked only where the installed SDK knows the type
}


# Notifications the extensions define, which the SDK's ServerNotification union does not know: the PR #142 schema's
# notifications/augmentation/list_changed (params, when present, an object, as for the base list_changed ones).
EXTENSION_NOTIFICATIONS = frozenset({"notifications/augmentation/list_changed"})


def warm() -> None:
    """Build the validators judging uses, ahead of time (called on a background thread during recording)."""
    base_schemas.warm()


def envelope_problems(msg: Any) -> list[str]:
    """Problems with one received JSON-RPC 2.0 message, ignoring its payload."""
    if not isinstance(msg, dict):
        return ["not a JSON object"]
    out = []
    if msg.get("jsonrpc") != "2.0":
        out.append(f"jsonrpc is {msg.get('jsonrpc')!r}, not \"2.0\"")
    has_method, has_id = "method" in msg, "id" in msg
    if has_method:
        if not isinstance(msg["method"], str):
            out.append("method is not a string")
        if has_id and (msg["id"] is None or isinstance(msg["id"], bool) or not isinstance(msg["id"], (int, str))):
            out.append(f"request id {msg['id']!r} is not a string or integer")
        if "params" in msg and not isinstance(msg["params"], dict):
            out.append("params is not an object (MCP uses named params)")
        return out
    if not has_id:
        out.append("neither a request, a notification nor a response (no method, no id)")
    has_result, has_error = "result" in msg, "error" in msg
    if has_result == has_error:
        out.append("a response must carry exactly one of result and error")
    if has_result and not isinstance(msg["result"], dict):
        out.append("result is not an object")
    if has_error:
        err = msg["error"]
        if not isinstance(err, dict):
            out.append("error is not an object")
        else:
            if not isinstance(err.get("code"), int) or isinstance(err.get("code"), bool):
                out.append(f"error.code {err.get('code')!r} is not an integer")
            if not isinstance(err.get("message"), str):
                out.append("error.message is not a string")
    return out


def base_problems(method: str | None, msg: dict) -> list[str]:
    """Problems of a result or notification against the SDK's types (their JSON Schemas: base_schemas.py)."""
    if "method" in msg and "id" not in msg and msg["method"] in EXTENSION_NOTIFICATIONS:
        found = [] if isinstance(msg.get("params", {}), dict) else ["at /params: not an object"]
    elif "method" in msg and "id" not in msg:
        found = base_schemas.problems("ServerNotification", {k: v for k, v in msg.items() if k in ("method", "params")})
    elif "result" in msg and method in _RESULT_TYPES and isinstance(msg["result"], dict) \
            and base_schemas.known(_RESULT_TYPES[method]):
        found = base_schemas.problems(_RESULT_TYPES[method], msg["result"])
    else:
        return []
    if not found:
        return []
    what = f"{method} result" if "result" in msg else f"notification {msg.get('method')}"
    return [f"{what} is not valid MCP: {found[0]}"]


def transcript_problems(wire: list[WireEvent]) -> list[str]:
    """Every problem in a connection's transcript, received side, in order."""
    sent_methods: dict[Any, str] = {}
    out = []
    for event in wire:
        if event.direction == "out" and isinstance(event.message, dict) and "method" in event.message:
            sent_methods[event.message.get("id")] = event.message["method"]
            continue
        if event.direction != "in":
            continue
        prefix = f"t={event.t:.3f}s"
        if event.problem:
            out.append(f"{prefix}: {event.problem}" + (f": {event.raw}" if event.raw else ""))
        if event.message is None:
            continue
        messages = event.message if isinstance(event.message, list) else [event.message]
        for msg in messages:
            problems = envelope_problems(msg)
            if not problems and isinstance(msg, dict):
                problems = base_problems(sent_methods.get(msg.get("id")), msg)
            out.extend(f"{prefix}: {p}" for p in problems)
    return out
