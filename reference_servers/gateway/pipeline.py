"""The reference gateway's response pipeline: Gatekit ADR-009 "Sequential Plugin Processing", as running code.

Rules (ADR-009, and Gatekit 0.3.0's code where the ADR is silent; sources in conformance/requirements/sequential-pipeline.yaml):

1. Plugins have a `kind` (middleware | security | auditing), a `priority` (an int 0-100, default 50;
   anything else is rejected when the plugin is built, as Gatekit does) and a definition order.
2. Middleware and security plugins form one pipeline, sorted by priority, lower first. Ties keep
   definition order within a kind, and middleware goes before security: Gatekit collects middleware
   first, then security, then sorts stably, and the suite pins that behaviour.
3. The pipeline runs sequentially: each plugin gets the response the previous one produced. A
   `Decision` with `modified` set replaces the current response; `modified=None` passes it on.
4. A plugin that disallows stops the chain at once; later plugins never run, and the outcome's reason
   names the plugin, `"[name] reason"` (the format of Gatekit's ADR-023).
5. A plugin that raises, or answers with something that is not a `Decision`, fails closed: the
   response is blocked with a reason naming the plugin. A plugin configured `critical: false` is
   skipped instead (its failure is recorded in the stages' reasons but does not block), as in Gatekit.
6. Requests: before a client request is forwarded, each middleware and security plugin that gates
   requests (`check_request`) sees it, in the same order; one that disallows, or fails (rules 4-5),
   stops it there, so the upstream never receives it. This is the reference gateway's addition:
   ADR-009 describes responses only, and a response-only allowlist would let a refused tool run.
   Likewise notifications and requests an upstream sends the client pass every plugin that
   transforms them (`process_outbound`, the PII redactor); a critical failure withholds the message.
7. Auditing plugins are not part of the pipeline: afterwards, in definition order (their priority is
   ignored), each `observe`s its own deep copy of the final response and of the outcome, so nothing an
   auditor does can change what the client gets. An auditor that raises is logged and skipped.

`Pipeline.process_response(request, response)` and `Pipeline.process_request(request)` never raise for a plugin's fault; it returns an
`Outcome`. `build_pipeline(configs)` builds a pipeline from the gateway config's `plugins` list and
raises `ValueError` for any configuration problem, before a single message is processed.
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

log = logging.getLogger(__name__)

KINDS = ("middleware", "security", "auditing")
DEFAULT_PRIORITY = 50
PRIORITY_RANGE = (0, 100)
_KIND_RANK = {"middleware": 0, "security": 1}  # the tie-break Gatekit's collection order produces


def validate_priority(priority: Any, name: str) -> int:
    if priority is None:
        return DEFAULT_PRIORITY
    # bool is an int subclass; `priority: true` is a typo, not priority 1.
    if isinstance(priority, bool) or not isinstance(priority, int):
        raise ValueError(f"plugin {name!r}: priority must be an integer 0-100, not {priority!r}")
    low, high = PRIORITY_RANGE
    if not low <= priority <= high:
        raise ValueError(f"plugin {name!r}: priority {priority} is outside {low}-{high}")
    return priority


@dataclass
class Decision:
    """What a plugin says about one response."""

    allowed: bool = True
    modified: dict | None = None  # the new current response, or None to pass the current one on
    reason: str | None = None
    record: dict | None = None  # anything the plugin wants in the outcome's audit trail


@dataclass
class Outcome:
    allowed: bool
    response: dict | None  # the final response when allowed, None when blocked
    reason: str | None
    stages: list[str] = field(default_factory=list)  # plugins that processed, in order
    audit: list[dict] = field(default_factory=list)  # {"plugin": name, ...record}

    def to_dict(self) -> dict:
        return {"allowed": self.allowed, "response": self.response, "reason": self.reason,
                "stages": list(self.stages), "audit": list(self.audit)}


class Plugin:
    """Base class. Subclasses override `process_response` (middleware, security) or `observe` (auditing)."""

    default_kind = "middleware"

    def __init__(self, name: str, *, kind: str | None = None, priority: Any = None, critical: bool = True):
        if not isinstance(name, str) or not name:
            raise ValueError(f"a plugin needs a non-empty name, not {name!r}")
        kind = kind or self.default_kind
        if kind not in KINDS:
            raise ValueError(f"plugin {name!r}: kind must be one of {', '.join(KINDS)}, not {kind!r}")
        if not isinstance(critical, bool):
            raise ValueError(f"plugin {name!r}: critical must be true or false")
        self.name = name
        self.kind = kind
        # Validated for auditors too (a typo is a typo), though their priority never orders anything.
        self.priority = validate_priority(priority, name)
        self.critical = critical

    async def process_response(self, request: dict, response: dict) -> Decision:
        return Decision()

    async def check_request(self, request: dict) -> Decision:
        """Gates a client request before it is forwarded (rule 6); plugins that gate set `gates_requests`."""
        return Decision()

    gates_requests = False
    outbound = False

    async def process_outbound(self, message: dict) -> dict | None:
        """A notification or request an upstream sends the client: a replacement, or None to pass it on.
        Only plugins that set `outbound` are asked."""
        return None

    async def observe(self, request: dict, response: dict | None, outcome: Outcome) -> dict | None:
        """Auditors only. Return a record for the outcome's audit trail, or None."""
        return None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} {self.kind} {self.priority}>"


class Pipeline:
    def __init__(self, plugins: list[Plugin]):
        for plugin in plugins:
            if not isinstance(plugin, Plugin):
                raise ValueError(f"not a pipeline plugin: {plugin!r}")
        processing = [p for p in plugins if p.kind != "auditing"]
        # sorted() is stable, so equal keys keep definition order.
        self.processing: list[Plugin] = sorted(processing, key=lambda p: (p.priority, _KIND_RANK[p.kind]))
        self.auditors: list[Plugin] = [p for p in plugins if p.kind == "auditing"]
        self.gates: list[Plugin] = [p for p in self.processing if p.gates_requests]
        self.outbound: list[Plugin] = [p for p in self.processing if p.outbound]

    async def process_outbound(self, message: dict) -> dict | None:
        """An upstream's notification or request after every outbound plugin, or None to withhold it (a
        critical plugin failed: what it would have removed must not leak)."""
        for plugin in self.outbound:
            try:
                changed = await plugin.process_outbound(copy.deepcopy(message))
            except Exception as exc:  # noqa: BLE001 - fail closed, as for responses
                if plugin.critical:
                    log.error("[%s] plugin failed on %s, withheld: %s", plugin.name, message.get("method"), exc)
                    return None
                log.warning("non-critical plugin %s skipped: %s", plugin.name, exc)
                continue
            if changed is not None:
                message = changed
        return message

    async def process_request(self, request: dict) -> Outcome | None:
        """None when every gate lets `request` through; else the blocked Outcome (auditors have seen it)."""
        for plugin in self.gates:
            try:
                decision = await plugin.check_request(copy.deepcopy(request))
                if not isinstance(decision, Decision):
                    raise TypeError(f"returned {type(decision).__name__}, not a Decision")
            except Exception as exc:  # noqa: BLE001 - a gate that fails must fail closed
                why = f"[{plugin.name}] plugin failed: {type(exc).__name__}: {exc}"
                if not plugin.critical:
                    log.warning("non-critical plugin skipped: %s", why)
                    continue
                return await self._audited(request, Outcome(False, None, why, [plugin.name]))
            if not decision.allowed:
                reason = f"[{plugin.name}] {decision.reason or 'blocked'}"
                return await self._audited(request, Outcome(False, None, reason, [plugin.name]))
        return None

    async def _audited(self, request: dict, outcome: Outcome) -> Outcome:
        for auditor in self.auditors:
            view = Outcome(outcome.allowed, None, outcome.reason, list(outcome.stages), [])
            try:
                await auditor.observe(request, None, view)
            except Exception as exc:  # noqa: BLE001 - an auditor's fault never changes the outcome
                log.error("auditing plugin %s failed: %s: %s", auditor.name, type(exc).__name__, exc)
        return outcome

    async def process_response(self, request: dict, response: dict) -> Outcome:
        current = copy.deepcopy(response)  # plugins never touch the caller's object
        stages: list[str] = []
        audit: list[dict] = []
        allowed, reason = True, None
        for plugin in self.processing:
            stages.append(plugin.name)
            try:
                decision = await plugin.process_response(request, current)
                if not isinstance(decision, Decision):
                    raise TypeError(f"returned {type(decision).__name__}, not a Decision")
            except Exception as exc:  # noqa: BLE001 - any plugin fault must fail closed, not crash the proxy
                why = f"[{plugin.name}] plugin failed: {type(exc).__name__}: {exc}"
                if not plugin.critical:
                    log.warning("non-critical plugin skipped: %s", why)
                    continue
                log.error("response blocked: %s", why)
                allowed, reason = False, why
                break
            if decision.record is not None:
                audit.append({"plugin": plugin.name, **decision.record})
            if not decision.allowed:
                allowed, reason = False, f"[{plugin.name}] {decision.reason or 'blocked'}"
                break
            if decision.modified is not None:
                current = decision.modified
        outcome = Outcome(allowed, current if allowed else None, reason, stages, audit)
        for auditor in self.auditors:
            # Each auditor gets its own copies: observing must not be able to change the result,
            # nor what the next auditor sees. A blocked response is observed as it stood at the block.
            view = Outcome(allowed, copy.deepcopy(outcome.response), reason, list(stages), [])
            try:
                record = await auditor.observe(request, copy.deepcopy(current), view)
            except Exception as exc:  # noqa: BLE001 - an auditor's fault never changes the outcome
                log.error("auditing plugin %s failed: %s: %s", auditor.name, type(exc).__name__, exc)
                continue
            if record is not None:
                audit.append({"plugin": auditor.name, **record})
        return outcome


# ---------------------------------------------------------------------------------------- content helpers

def map_text(response: dict, change: Callable[[str], str]) -> dict | None:
    """A copy of a JSON-RPC response with `change` applied to every text content block of its result;
    None when the response has no content list (a tools/list result, an error) so nothing changed."""
    result = response.get("result") if isinstance(response, dict) else None
    content = result.get("content") if isinstance(result, dict) else None
    if not isinstance(content, list):
        return None
    blocks = [{**b, "text": change(b["text"])} if isinstance(b, dict) and b.get("type") == "text"
              and isinstance(b.get("text"), str) else b for b in content]
    return {**response, "result": {**result, "content": blocks}}


def _mutate_text_in_place(response: Any, change: Callable[[str], str]) -> None:
    result = response.get("result") if isinstance(response, dict) else None
    for block in (result or {}).get("content") or []:
        if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
            block["text"] = change(block["text"])


# ---------------------------------------------------------------------------------------- vocabulary plugins

BEHAVIOURS = ("append", "uppercase", "block", "raise", "audit", "pass")


class VocabularyPlugin(Plugin):
    """The conformance fixtures' behaviours (conformance/gateway/ADAPTER.md has the table)."""

    def __init__(self, name: str, behaviour: str, *, marker: str | None = None, reason: str | None = None,
                 **common):
        if behaviour not in BEHAVIOURS:
            raise ValueError(f"plugin {name!r}: behaviour must be one of {', '.join(BEHAVIOURS)}, not {behaviour!r}")
        super().__init__(name, **common)
        self.behaviour = behaviour
        self.marker = f"[{name}]" if marker is None else marker
        self.reason = reason or f"blocked by {name}"

    def _change(self) -> Callable[[str], str] | None:
        if self.behaviour == "append":
            return lambda text: text + self.marker
        if self.behaviour == "uppercase":
            return str.upper
        return None

    async def process_response(self, request: dict, response: dict) -> Decision:
        if self.behaviour == "raise":
            raise RuntimeError(f"{self.name} raises on purpose")
        if self.behaviour == "block":
            return Decision(allowed=False, reason=self.reason)
        if self.behaviour == "audit":
            return Decision(record={"response": copy.deepcopy(response)})
        change = self._change()
        return Decision(modified=map_text(response, change) if change else None)

    async def observe(self, request: dict, response: dict | None, outcome: Outcome) -> dict | None:
        if self.behaviour == "raise":
            raise RuntimeError(f"{self.name} raises on purpose")
        record = {"response": copy.deepcopy(response)}
        change = self._change()
        if change is not None:  # an auditor that tries to modify what it was shown
            _mutate_text_in_place(response, change)
            _mutate_text_in_place(outcome.response, change)
        return record


# ---------------------------------------------------------------------------------------- real plugins

# Keys whose string values are protocol, not content: redacting them would break the message.
PROTOCOL_KEYS = frozenset({"jsonrpc", "id", "method", "type", "mimeType", "role", "uri", "blob", "cursor",
                           "nextCursor", "progressToken", "requestId", "protocolVersion", "level", "logger"})


def _string_paths(value: Any, path: tuple, out: list[tuple]) -> None:
    """The path of every content string in a JSON value (protocol keys and binary payloads left out)."""
    if isinstance(value, str):
        out.append(path)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _string_paths(item, path + (index,), out)
    elif isinstance(value, dict):
        binary = value.get("type") in ("image", "audio")  # their `data` is base64, not text
        for key, item in value.items():
            if key in PROTOCOL_KEYS or (binary and key == "data"):
                continue
            _string_paths(item, path + (key,), out)


class PiiRedactionPlugin(Plugin):
    """Redacts PII (reference_servers.middleware.pii) in every content string of what reaches the client:
    results (text blocks, embedded resources, structuredContent, anything else), error messages and data,
    and the notifications (log messages, progress) and requests (sampling, elicitation) upstreams send.
    One-way: the handle map is not kept, so a client sees `[EMAIL_1]` and never the address."""

    outbound = True  # also sees upstream notifications and requests (Pipeline.process_outbound)

    def __init__(self, name: str, *, aggressiveness: str = "standard", defaultRegion: str = "US", **common):  # noqa: N803
        super().__init__(name, **common)
        self.arguments = {"aggressiveness": aggressiveness, "defaultRegion": defaultRegion}
        from reference_servers.middleware.pii import pii_redaction

        self._redact = pii_redaction
        self._redact([], self.arguments)  # rejects bad options now, at configuration time

    def redacted(self, message: dict, parts: tuple[str, ...]) -> tuple[dict | None, dict]:
        """A copy of `message` with the strings under `parts` redacted, or None when nothing was found.
        One middleware call per message, so a value keeps one handle across the message."""
        paths: list[tuple] = []
        for part in parts:
            if part in message:
                _string_paths(message[part], (part,), paths)
        if not paths:
            return None, {}
        texts = []
        for path in paths:
            node = message
            for step in path:
                node = node[step]
            texts.append({"type": "text", "text": node})
        out = self._redact(texts, self.arguments)
        counts = out["metadata"]["counts"]
        if not any(counts.values()):
            return None, counts
        changed = copy.deepcopy(message)
        for path, block in zip(paths, out["content"]):
            node = changed
            for step in path[:-1]:
                node = node[step]
            node[path[-1]] = block["text"]
        return changed, counts

    async def process_response(self, request: dict, response: dict) -> Decision:
        changed, counts = self.redacted(response, ("result", "error"))
        return Decision(modified=changed, reason=f"redacted {counts}") if changed else Decision()

    async def process_outbound(self, message: dict) -> dict | None:
        return self.redacted(message, ("params",))[0]


class ToolAllowlistPlugin(Plugin):
    """Security: a request that invokes a name not on the list is refused before it is forwarded, so
    the upstream never runs it; list results are filtered to the list. `tools` gates tools/call and
    tools/list; `prompts`, `middleware` and `augmentations`, when given, gate their own call and list
    methods the same way (a kind left out is not gated). The response side repeats the call check,
    so a result of a refused name can never reach the client either."""

    default_kind = "security"
    gates_requests = True
    # option -> (the call method whose params.name it gates, the list method it filters, what a name is)
    KINDS = {"tools": ("tools/call", "tools/list", "tool"), "prompts": ("prompts/get", "prompts/list", "prompt"),
             "middleware": ("middleware/invoke", "middleware/list", "middleware"),
             "augmentations": ("augmentation/augment", "augmentation/list", "augmentation")}

    def __init__(self, name: str, *, tools: list[str], prompts: list[str] | None = None,
                 middleware: list[str] | None = None, augmentations: list[str] | None = None, **common):
        super().__init__(name, **common)
        lists = {"tools": tools, "prompts": prompts, "middleware": middleware, "augmentations": augmentations}
        self.calls: dict[str, tuple[str, frozenset[str]]] = {}
        self.lists: dict[str, tuple[str, frozenset[str]]] = {}
        for option, names in lists.items():
            if names is None and option != "tools":
                continue
            if not isinstance(names, list) or not all(isinstance(t, str) for t in names):
                raise ValueError(f"plugin {name!r}: {option} must be a list of names")
            call, listing, noun = self.KINDS[option]
            self.calls[call] = (noun, frozenset(names))
            self.lists[listing] = (option, frozenset(names))
        self.tools = self.calls["tools/call"][1]

    def _refusal(self, request: dict) -> str | None:
        gate = self.calls.get(request.get("method"))
        if gate is None:
            return None
        noun, allowed = gate
        params = request.get("params")
        target = params.get("name") if isinstance(params, dict) else None
        return None if target in allowed else f"{noun} {target!r} is not on the allowlist"

    async def check_request(self, request: dict) -> Decision:
        refusal = self._refusal(request)
        return Decision(allowed=False, reason=refusal) if refusal else Decision()

    async def process_response(self, request: dict, response: dict) -> Decision:
        refusal = self._refusal(request)
        if refusal:
            return Decision(allowed=False, reason=refusal)
        result = response.get("result")
        listing = self.lists.get(request.get("method"))
        if listing and isinstance(result, dict) and isinstance(result.get(listing[0]), list):
            key, allowed = listing
            kept = [t for t in result[key] if isinstance(t, dict) and t.get("name") in allowed]
            if len(kept) != len(result[key]):
                return Decision(modified={**response, "result": {**result, key: kept}})
        return Decision()


class AuditLogPlugin(Plugin):
    """Auditing: one JSON line per response (method, outcome, stages, final response) appended to `path`."""

    default_kind = "auditing"

    def __init__(self, name: str, *, path: str, **common):
        super().__init__(name, **common)
        if not isinstance(path, str) or not path:
            raise ValueError(f"plugin {name!r}: path is required")
        self.path = Path(path)
        if not self.path.parent.is_dir():
            raise ValueError(f"plugin {name!r}: directory of {path!r} does not exist")
        self._lock = asyncio.Lock()

    async def observe(self, request: dict, response: dict | None, outcome: Outcome) -> dict | None:
        line = json.dumps({"time": time.time(), "method": request.get("method"), "id": request.get("id"),
                           "allowed": outcome.allowed, "reason": outcome.reason, "stages": outcome.stages,
                           "response": response}, ensure_ascii=False, default=str)
        async with self._lock:  # whole lines only, even with concurrent requests
            # Created 0600: the log holds whole responses, which are the user's data.
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            with os.fdopen(fd, "a", encoding="utf-8") as fh:
                fh.write(line + "\n")
        return None


PLUGIN_TYPES: dict[str, type[Plugin]] = {
    "vocabulary": VocabularyPlugin,
    "pii_redaction": PiiRedactionPlugin,
    "tool_allowlist": ToolAllowlistPlugin,
    "audit_log": AuditLogPlugin,
}


def build_plugin(config: dict) -> Plugin:
    if not isinstance(config, dict):
        raise ValueError(f"a plugin config is an object, not {config!r}")
    options = dict(config)
    kind_name = options.pop("plugin", None)
    if kind_name not in PLUGIN_TYPES:
        raise ValueError(f"unknown plugin type {kind_name!r}; known: {', '.join(sorted(PLUGIN_TYPES))}")
    name = options.pop("name", kind_name)
    try:
        return PLUGIN_TYPES[kind_name](name, **options)
    except TypeError as exc:  # unknown or missing options are configuration errors too
        raise ValueError(f"plugin {name!r} ({kind_name}): {exc}") from None


def build_pipeline(configs: list[dict] | None) -> Pipeline:
    """The gateway config's `plugins` list -> a Pipeline; ValueError for any bad entry."""
    if configs is None:
        configs = []
    if not isinstance(configs, list):
        raise ValueError("plugins must be a list")
    return Pipeline([build_plugin(c) for c in configs])
