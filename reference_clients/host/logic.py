"""The host's decisions, as pure functions (no I/O, no SDK), so they can be unit-tested alone.

Everything here follows conformance/host/HARNESS.md §3: the execution-requirement
rule, middleware ordering and chaining, augmentation hints, preprocessor
arguments, the tools offered to the model, and assembling streamed answers.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any, Iterable, Mapping, Sequence

DEFAULT_PRIORITY = 50
NAME_SEPARATOR = "__"
# What OpenAI-compatible endpoints accept as a function name.
_VALID_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class ServerError(Exception):
    """A request to a server failed: a JSON-RPC error, a timeout, or the server is gone."""


class MiddlewareFailure(Exception):
    """A middleware or augmentation could not transform the context (error, timeout, broken result)."""


# -- execution requirements (SEP-2487 client rule, the captured AND text) --------------------------

def may_filter_tool(requirements: Any, known: Mapping[str, Any]) -> bool:
    """True only when every requirement string is known and at least one is known unsatisfiable.

    Strings are opaque: plain `in`/`==` on `str` compares code points, so there is
    no case folding, normalization or trimming. Anything malformed (not a list, a
    non-string entry, a known value that is not a bool) makes the rule
    inapplicable, which means the tool is offered as if the field were absent.
    """
    if not isinstance(requirements, list) or not requirements:
        return False
    any_false = False
    for item in requirements:
        if not isinstance(item, str) or item not in known:
            return False
        value = known[item]
        if value is False:
            any_false = True
        elif value is not True:
            return False  # neither known true nor known false: treat as unknown
    return any_false


def tool_requirements(tool: Mapping[str, Any]) -> Any:
    execution = tool.get("execution")
    return execution.get("requirements") if isinstance(execution, Mapping) else None


def is_preprocessor(tool: Mapping[str, Any]) -> bool:
    return tool.get("preprocessor") is True


# -- middleware ----------------------------------------------------------------------------------

# What goes to the model, besides the history: request-phase entries see all of it unless `applyTo` narrows them.
MODEL_INPUTS = ("user", "preprocessor", "tool")


def ordered_middleware(entries: Iterable[Mapping[str, Any]], phase: str,
                       source: str | None = None) -> list[Mapping[str, Any]]:
    """The entries of one phase, by priority ascending; `sorted` is stable, so ties keep list order.

    With `source` (one of MODEL_INPUTS), only the entries that apply to it; ValueError
    for an entry whose `applyTo` is malformed.
    """
    chosen = [e for e in entries if isinstance(e, Mapping) and e.get("phase") == phase]
    if source is not None:
        chosen = [e for e in chosen if source in _apply_to(e)]
    return sorted(chosen, key=_priority)


def _apply_to(entry: Mapping[str, Any]) -> tuple[str, ...]:
    value = entry.get("applyTo")
    if value is None:
        return MODEL_INPUTS
    if not isinstance(value, list) or not all(isinstance(v, str) and v in MODEL_INPUTS for v in value):
        raise ValueError(f"middleware applyTo must be a list drawn from {', '.join(MODEL_INPUTS)}, got {value!r}")
    return tuple(value)


def _priority(entry: Mapping[str, Any]) -> float:
    value = entry.get("priority", DEFAULT_PRIORITY)
    if value is None:
        return DEFAULT_PRIORITY
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"middleware priority must be a number, got {value!r}")
    return value


def text_context(text: str) -> list[dict]:
    return [{"type": "text", "text": text}]


def check_blocks(blocks: Any, what: str) -> list[dict]:
    if not isinstance(blocks, list) or not all(isinstance(b, dict) and isinstance(b.get("type"), str)
                                               for b in blocks):
        raise MiddlewareFailure(f"{what}: content is not an array of content blocks")
    return blocks


def middleware_result(result: Any) -> tuple[list[dict], dict | None]:
    """The new context and the metadata of a `middleware/invoke` result."""
    if not isinstance(result, Mapping):
        raise MiddlewareFailure("middleware/invoke: result is not an object")
    content = check_blocks(result.get("content"), "middleware/invoke")
    metadata = result.get("metadata")
    if metadata is not None and not isinstance(metadata, Mapping):  # a free-form object, per the schema
        raise MiddlewareFailure("middleware/invoke: metadata is not an object")
    return content, metadata


def apply_augmentation(context: list[dict], result: Any) -> tuple[list[dict], dict | None]:
    """The context after an `augmentation/augment` result: its blocks placed as the hint says.

    Without a hint the blocks are appended (the proposal's default). `filter`
    leaves the context as it is (its blocks name tools: `filter_hint_tools`). An
    unknown hint (the proposal also names `safe`, `unsafe` in prose) cannot be
    applied faithfully; appending keeps the user's text, which is the safe choice.
    """
    if not isinstance(result, Mapping):
        raise MiddlewareFailure("augmentation/augment: result is not an object")
    items = result.get("content")
    if not isinstance(items, list):
        raise MiddlewareFailure("augmentation/augment: content is not an array")
    blocks = []
    for item in items:
        # AugmentedContent wraps the block; a bare block is accepted too, as lenient reading.
        block = item.get("content") if isinstance(item, dict) and isinstance(item.get("content"), dict) else item
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            raise MiddlewareFailure("augmentation/augment: an item is not a content block")
        blocks.append(block)
    hint = result.get("hint")
    metadata = result.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else None
    if hint == "filter":
        return list(context), metadata
    if hint == "replace":
        return blocks, metadata
    if hint == "prepend":
        return blocks + list(context), metadata
    return list(context) + blocks, metadata


FILTER_RELEVANCE = 0.5  # HARNESS.md's reading of the PR's tool-relevance example


def suggested_tool_set(metadata: Any) -> set[str] | None:
    """The tool names a middleware result's `metadata.suggestedToolSet` keeps (the proposal's tool-filtering
    example), or None when it names none: a list of strings, anything else ignored."""
    names = metadata.get("suggestedToolSet") if isinstance(metadata, Mapping) else None
    if not isinstance(names, list):
        return None
    return {n for n in names if isinstance(n, str)}


def filter_hint_tools(result: Any) -> set[str] | None:
    """The tool names an augmentation result hinted `filter` keeps (None for any other hint): the text of each
    item whose `properties.relevance` is absent or at least FILTER_RELEVANCE."""
    if not isinstance(result, Mapping) or result.get("hint") != "filter" or not isinstance(result.get("content"), list):
        return None
    kept = set()
    for item in result["content"]:
        block = item.get("content") if isinstance(item, dict) else None
        relevance = (item.get("properties") or {}).get("relevance") if isinstance(item, dict) else None
        if isinstance(block, dict) and isinstance(block.get("text"), str) and \
                (not isinstance(relevance, (int, float)) or relevance >= FILTER_RELEVANCE):
            kept.add(block["text"].strip())
    return kept


def blocks_text(blocks: Sequence[Any]) -> str:
    """The text the model sees for a list of content blocks: text blocks joined by newlines."""
    parts = []
    for block in blocks:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif block.get("type") == "resource" and isinstance(block.get("resource"), dict) \
                and isinstance(block["resource"].get("text"), str):
            parts.append(block["resource"]["text"])
    return "\n".join(parts)


_MISSING = object()


def resolve_metadata_refs(arguments: Any, metadata: Mapping[str, Any]) -> Any:
    """Replace each `{"$metadata": "<middleware>.<key>[.<key>...]"}` by that value of the latest metadata.

    `metadata` maps middleware name -> the latest metadata it returned. A reference
    that cannot be resolved (nothing returned yet, no such key) is dropped from its
    object (or becomes null in an array), so the middleware sees its default.
    """
    value = _resolve(arguments, metadata)
    return {} if value is _MISSING else value


def _resolve(value: Any, metadata: Mapping[str, Any]) -> Any:
    if isinstance(value, dict):
        if set(value) == {"$metadata"} and isinstance(value["$metadata"], str):
            return _lookup(value["$metadata"], metadata)
        out = {}
        for key, item in value.items():
            resolved = _resolve(item, metadata)
            if resolved is not _MISSING:
                out[key] = resolved
        return out
    if isinstance(value, list):
        return [None if (r := _resolve(v, metadata)) is _MISSING else r for v in value]
    return value


def _lookup(reference: str, metadata: Mapping[str, Any]) -> Any:
    name, _, path = reference.partition(".")
    current: Any = metadata.get(name, _MISSING)
    for key in path.split(".") if path else ():
        if not isinstance(current, dict) or key not in current:
            return _MISSING
        current = current[key]
    return current


# -- preprocessors ---------------------------------------------------------------------------------

def preprocessor_arguments(input_schema: Any, message: str) -> dict:
    """Every string property that is required or named `query` gets the user message."""
    if not isinstance(input_schema, dict):
        return {}
    properties = input_schema.get("properties")
    if not isinstance(properties, dict):
        return {}
    required = input_schema.get("required")
    required = set(r for r in required if isinstance(r, str)) if isinstance(required, list) else set()
    arguments = {}
    for name, schema in properties.items():
        if (name in required or name == "query") and _is_string_schema(schema):
            arguments[name] = message
    return arguments


def _is_string_schema(schema: Any) -> bool:
    if not isinstance(schema, dict):
        return False
    kind = schema.get("type")
    return kind == "string" or (isinstance(kind, list) and "string" in kind)


def preprocessor_message(outputs: Sequence[tuple[str, str, str]]) -> dict | None:
    """One system message holding this turn's preprocessor outputs, (server, tool, text) each."""
    if not outputs:
        return None
    sections = [f"[{server}/{tool}]\n{text}" for server, tool, text in outputs]
    return {"role": "system",
            "content": "Context gathered for this message by preprocessor tools:\n\n" + "\n\n".join(sections)}


# -- tools offered to the model ------------------------------------------------------------------

def offered_tools(tools_by_server: Sequence[tuple[str, Sequence[Mapping[str, Any]]]],
                  known: Mapping[str, Any]) -> tuple[list[dict], dict[str, tuple[str, str]], list[str], list[str]]:
    """The `tools` array, the offered name -> (server, tool) map, the names filtered out, the names refused.

    Preprocessors are never offered; a tool is left out for its requirements only
    under `may_filter_tool`. A name stays as the server gave it unless it could
    shadow another server's tool: when two servers share it, when it lies in a
    server's namespace (starts with `<configured server>__`, so that no server can
    take another's `memory__search`), or when it is not a valid function name, it
    is offered as `server__tool`. Names that still clash after that (two tools
    sanitised or truncated to one name) are refused, all of them: any winner would
    depend on server order. The result never depends on which server comes first.
    """
    candidates = []
    for server, tools in tools_by_server:
        for tool in tools:
            if isinstance(tool, Mapping) and isinstance(tool.get("name"), str) and not is_preprocessor(tool):
                candidates.append((server, tool))
    counts = Counter(tool["name"] for _, tool in candidates)
    namespaces = tuple({p for server, _ in tools_by_server
                        for p in (f"{server}{NAME_SEPARATOR}", _function_name(server, ""))})
    wanted, filtered = [], []
    for server, tool in candidates:
        name = tool["name"]
        if may_filter_tool(tool_requirements(tool), known):
            filtered.append(f"{server}/{name}")
            continue
        plain = counts[name] == 1 and _VALID_NAME.match(name) and not name.startswith(namespaces)
        wanted.append((name if plain else _function_name(server, name), server, tool))
    uses = Counter(offered for offered, _, _ in wanted)
    specs, routes, refused = [], {}, []
    for offered, server, tool in wanted:
        if uses[offered] > 1:
            refused.append(f"{server}/{tool['name']}")
            continue
        routes[offered] = (server, tool["name"])
        schema = tool.get("inputSchema")
        function = {"name": offered, "description": tool.get("description") or "",
                    "parameters": schema if isinstance(schema, dict) else {"type": "object", "properties": {}}}
        specs.append({"type": "function", "function": function})
    return specs, routes, filtered, refused


def _function_name(server: str, tool: str) -> str:
    raw = f"{server}{NAME_SEPARATOR}{tool}"
    return re.sub(r"[^A-Za-z0-9_-]", "_", raw)[:64]


def tool_result_text(result: Any) -> str:
    """A `tools/call` result as the tool message's text: its text blocks exactly, joined by newlines."""
    if not isinstance(result, Mapping):
        return ""
    content = result.get("content")
    blocks = content if isinstance(content, list) else []
    texts = [b["text"] for b in blocks if isinstance(b, dict) and b.get("type") == "text"
             and isinstance(b.get("text"), str)]
    if texts:
        return "\n".join(texts)
    if result.get("structuredContent") is not None:
        return json.dumps(result["structuredContent"], ensure_ascii=False)
    others = [b.get("type") for b in blocks if isinstance(b, dict)]
    return f"(the tool returned no text; content types: {', '.join(map(str, others))})" if others else ""


def parse_tool_arguments(raw: Any) -> dict:
    """The model's JSON arguments string as an object; ValueError when it is not one."""
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}
    if isinstance(raw, dict):
        return raw
    value = json.loads(raw)
    if not isinstance(value, dict):
        raise ValueError("tool arguments are not a JSON object")
    return value


# -- streaming -----------------------------------------------------------------------------------

class StreamAssembler:
    """Builds one assistant message from Chat Completions stream deltas.

    Tool calls arrive in pieces keyed by `index`: the id and name in an early
    piece, the arguments split across many; text pieces concatenate.
    """

    def __init__(self) -> None:
        self.content: list[str] = []
        self.calls: dict[int, dict] = {}

    def add(self, delta: Any) -> None:
        """`delta` is a choice's delta, as a dict (model_dump) or an object with attributes."""
        get = (lambda o, k: o.get(k)) if isinstance(delta, dict) else (lambda o, k: getattr(o, k, None))
        text = get(delta, "content")
        if text:
            self.content.append(text)
        for piece in get(delta, "tool_calls") or ():
            pget = (lambda o, k: o.get(k)) if isinstance(piece, dict) else (lambda o, k: getattr(o, k, None))
            index = pget(piece, "index")
            index = len(self.calls) if index is None else index
            call = self.calls.setdefault(index, {"id": None, "name": "", "arguments": ""})
            if pget(piece, "id"):
                call["id"] = pget(piece, "id")
            function = pget(piece, "function")
            if function is not None:
                fget = (lambda o, k: o.get(k)) if isinstance(function, dict) else (lambda o, k: getattr(o, k, None))
                call["name"] += fget(function, "name") or ""
                call["arguments"] += fget(function, "arguments") or ""

    def message(self) -> dict:
        return assistant_message("".join(self.content) or None,
                                 [self.calls[i] for i in sorted(self.calls)])


def assistant_message(content: str | None, calls: Sequence[Mapping[str, Any]]) -> dict:
    """The assistant message in Chat Completions shape, from its text and (id, name, arguments) calls."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [
            {"id": c.get("id") or f"call_{n}", "type": "function",
             "function": {"name": c.get("name") or "", "arguments": c.get("arguments") or ""}}
            for n, c in enumerate(calls)]
    return message
