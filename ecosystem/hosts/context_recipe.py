"""The framework-independent half of a conforming recipe: copy this file beside your agent.

A framework owns the MCP connections, the model call and the tool loop. What it does not know about,
this module does, given the framework's live `mcp.ClientSession` for each server:

- `raw_tools(session)`: `tools/list` as sent, extension fields included. On mcp 2.x the typed
  `list_tools()` drops `preprocessor` and `execution.requirements`, so the framework's own tool
  objects cannot tell a preprocessor from an ordinary tool; a raw request can.
- `offered(tool, known)`: whether a tool may go to the model (never a preprocessor; execution
  requirements by exact string, left out only when all are known and one is known false).
- `run_preprocessors(...)`: every preprocessor of every server, once, in order; their text.
- `run_middleware(...)`: the configured context middleware of one phase, by priority, chained.

The framework half (its hook) lives in each framework's `recipe.py`.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from mcp import types
from pydantic import BaseModel, ConfigDict

DEFAULT_PRIORITY = 50
METHOD_NOT_FOUND = -32601


class FreeRequest(types.Request[dict[str, Any] | None, str]):
    """Any method with any params, sent through `ClientSession.send_request` (1.x and 2.x)."""


class RawResult(BaseModel):
    """A result with every field kept."""

    model_config = ConfigDict(extra="allow")


class MiddlewareFailed(Exception):
    """A request-phase middleware failed: nothing unprocessed may reach the model this turn."""


async def request(session: Any, method: str, params: dict | None, timeout: float = 10.0) -> dict:
    result = await asyncio.wait_for(session.send_request(FreeRequest(method=method, params=params), RawResult),
                                    timeout)
    return result.model_dump(mode="json", by_alias=True, exclude_none=True)


async def raw_tools(session: Any) -> list[dict]:
    tools: list[dict] = []
    cursor = None
    for _ in range(100):
        page = await request(session, "tools/list", {"cursor": cursor} if cursor else None)
        tools.extend(t for t in page.get("tools") or () if isinstance(t, dict))
        cursor = page.get("nextCursor")
        if not cursor:
            return tools
    return tools


def is_preprocessor(tool: dict) -> bool:
    return tool.get("preprocessor") is True


def requirements(tool: dict) -> list:
    execution = tool.get("execution")
    reqs = execution.get("requirements") if isinstance(execution, dict) else None
    return reqs if isinstance(reqs, list) else []


def offered(tool: dict, known: dict[str, bool]) -> bool:
    """Strings are compared exactly (dict lookup): no folding, normalization or trimming."""
    if is_preprocessor(tool):
        return False
    reqs = requirements(tool)
    all_known = bool(reqs) and all(isinstance(r, str) and r in known for r in reqs)
    return not (all_known and any(known[r] is False for r in reqs))


def preprocessor_arguments(tool: dict, message: str) -> dict:
    schema = tool.get("inputSchema") or {}
    props = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    return {name: message for name, spec in props.items()
            if isinstance(spec, dict) and spec.get("type") == "string" and (name in required or name == "query")}


def result_text(result: dict) -> str:
    return "\n".join(b.get("text", "") for b in result.get("content") or () if isinstance(b, dict)
                     and b.get("type") == "text")


async def run_preprocessors(servers: list[tuple[str, Any, list[dict]]], message: str) -> str:
    """`servers`: (name, session, raw tools) in configuration order. Returns this turn's context."""
    parts = []
    for name, session, tools in servers:
        for tool in tools:
            if is_preprocessor(tool):
                try:
                    result = await request(session, "tools/call",
                                           {"name": tool["name"], "arguments": preprocessor_arguments(tool, message)})
                except Exception as exc:  # noqa: BLE001 - one failing preprocessor must not end the turn
                    print(f"preprocessor {name}/{tool['name']} failed: {exc!r}", file=sys.stderr)
                    continue
                parts.append(result_text(result))
    return "\n".join(p for p in parts if p)


def _apply_hint(context: list[dict], blocks: list[dict], hint: Any) -> list[dict]:
    if hint == "replace":
        return blocks
    if hint == "prepend":
        return blocks + context
    return context + blocks


async def run_middleware(entries: list[dict], phase: str, sessions: dict[str, Any], text: str) -> str:
    """Chain the `phase` entries by priority (default 50, ties in list order) over `text`."""
    chain = sorted((e for e in entries if e.get("phase") == phase),
                   key=lambda e: e.get("priority", DEFAULT_PRIORITY))  # sorted() is stable: ties keep list order
    context = [{"type": "text", "text": text}]
    for entry in chain:
        session = sessions[entry["server"]]
        params = {"name": entry["name"], "arguments": entry.get("arguments") or {}, "context": context}
        try:
            result = await request(session, "middleware/invoke", params)
            content = result["content"]
            if result.get("metadata") is not None and not isinstance(result["metadata"], dict):
                raise MiddlewareFailed(f"{entry['server']}/{entry['name']}: metadata is not an object")
        except Exception as exc:  # noqa: BLE001 - a server without contextMiddleware may offer augmentation
            if getattr(getattr(exc, "error", None), "code", None) != METHOD_NOT_FOUND:
                raise MiddlewareFailed(f"{entry['server']}/{entry['name']}: {exc!r}") from exc
            try:
                result = await request(session, "augmentation/augment", params)
                content = _apply_hint(context, [item["content"] for item in result["content"]], result.get("hint"))
            except Exception as exc2:  # noqa: BLE001
                raise MiddlewareFailed(f"{entry['server']}/{entry['name']}: {exc2!r}") from exc2
        if not isinstance(content, list) or not all(isinstance(b, dict) for b in content):
            raise MiddlewareFailed(f"{entry['server']}/{entry['name']}: content is not a list of blocks")
        context = content
    return "\n".join(b.get("text", "") for b in context if b.get("type") == "text")
