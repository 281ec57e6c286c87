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
   The proxy asks the gates about client notifications too (JSON-RPC lets any method go without an id).
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
import base64
import copy
import json
import logging
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import anyio

from .lineparser import IMPORT_ROOT

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

# Where a message holds protocol, not content: redacting there would break the message. By path, not by key name
# (a key named `id` or `type` in structuredContent or a tool's arguments is user data, and read). A trie from each
# part of the message the plugin reads (result, error, params): a key maps to SKIP (its value is protocol, and so
# is the key) or to the trie of what is under it; "*" stands for any index of a list. `BLOCK` marks an object that
# is a content block or a resource's contents: there `type` and `mimeType` are protocol, an image's or an audio
# clip's `data` is base64 of a picture or a sound (not read), and a `blob` of a text media type is decoded and read.
# (`uri` and `blob` are content: a URI can be `mailto:ann@example.com`, a text blob is text; see _slots.)
SKIP = True
BLOCK = "block"
_CONTENT = {BLOCK: True, "type": SKIP, "mimeType": SKIP, "annotations": {"audience": {"*": SKIP}},
            "resource": {BLOCK: True, "mimeType": SKIP}}
_MESSAGE = {"role": SKIP, "content": {**_CONTENT, "*": _CONTENT}}  # one block (sampling) or a list of them
_RESOURCE = {BLOCK: True, "mimeType": SKIP}
_META = {"progressToken": SKIP}
PROTOCOL_PATHS: dict[str, dict] = {
    # content: a tool result's list of blocks, or a sampling result's one block
    "result": {"nextCursor": SKIP, "protocolVersion": SKIP, "_meta": _META, "content": {**_CONTENT, "*": _CONTENT},
               "messages": {"*": _MESSAGE}, "contents": {"*": _RESOURCE}, "resources": {"*": _RESOURCE},
               "resourceTemplates": {"*": _RESOURCE}, "role": SKIP, "stopReason": SKIP, "action": SKIP},
    "params": {"requestId": SKIP, "progressToken": SKIP, "cursor": SKIP, "level": SKIP, "logger": SKIP,
               "_meta": _META, "messages": {"*": _MESSAGE}, "includeContext": SKIP, "mode": SKIP},
    "error": {"code": SKIP},
}
# Integers with at least this many digits are read as text too: a card number sent as a JSON number.
NUMBER_DIGITS = 7
# Blobs of these media types are text: decoded (charset parameter, else UTF-8), redacted and encoded again.
TEXT_SUBTYPES = frozenset({"json", "xml", "javascript", "ecmascript", "yaml", "x-yaml", "toml", "csv", "sql",
                           "graphql", "x-www-form-urlencoded", "x-sh", "x-python", "markdown", "rtf"})


def text_charset(mime: Any) -> str | None:
    """The charset a blob of media type `mime` is text in, or None when it is not a text type."""
    if not isinstance(mime, str):
        return None
    kind, _, parameters = mime.partition(";")
    main, _, sub = kind.strip().lower().partition("/")
    if not (main == "text" or sub in TEXT_SUBTYPES or sub.endswith(("+json", "+xml", "+yaml"))):
        return None
    for parameter in parameters.split(";"):
        name, _, value = parameter.partition("=")
        if name.strip().lower() == "charset" and value.strip():
            return value.strip().strip('"')
    return "utf-8"


@dataclass
class _Slot:
    """One piece of a message that is read as text: where it is and what kind of thing it is."""

    holder: Any  # the dict or list it is in
    key: Any  # its key or index there (for "key" slots: the key itself)
    kind: str  # "text" | "key" | "number" | "blob"
    text: str
    charset: str | None = None  # blobs only
    bom: bytes = b""  # blobs only: the byte order mark it started with, written back as it was


# Byte order marks and the charset each means, longest first (UTF-32's little-endian mark starts with UTF-16's).
BOMS = ((b"\xff\xfe\x00\x00", "utf-32-le"), (b"\x00\x00\xfe\xff", "utf-32-be"), (b"\xef\xbb\xbf", "utf-8"),
        (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be"))


def blob_charset(raw: bytes, declared: str) -> tuple[bytes, str]:
    """(its byte order mark, the charset to read the rest in): a mark wins over the media type's charset
    (as the WHATWG encoding sniffing and RFC 2781 do), else the declared charset (UTF-8 when none is given)."""
    for bom, charset in BOMS:
        if raw.startswith(bom):
            return bom, charset
    return b"", declared


def _slots(value: Any, out: list[_Slot], paths: Any = None) -> None:
    """Every piece of `value` a person could have written: strings, object keys, integers of NUMBER_DIGITS
    or more digits (and whole floats), blobs of text media types. Left out: what `paths` (a node of
    PROTOCOL_PATHS) marks as protocol, and the base64 `data` of images and audio in content blocks. Recursion is
    bounded: the proxy refuses messages nested deeper than its MAX_DEPTH."""
    paths = paths if isinstance(paths, dict) else {}
    if isinstance(value, list):
        items = [(index, item, paths.get("*")) for index, item in enumerate(value)]
    elif isinstance(value, dict):
        block = bool(paths.get(BLOCK))
        binary = block and value.get("type") in ("image", "audio")  # their `data` is base64 of a picture or a sound
        charset = text_charset(value.get("mimeType")) if block else None
        items = []
        for key, item in value.items():
            below = paths.get(key)
            if below is SKIP:
                continue
            out.append(_Slot(value, key, "key", key))
            if binary and key == "data":
                continue
            if block and key == "blob" and isinstance(item, str):
                if charset is not None:
                    try:
                        raw = base64.b64decode(item, validate=True)
                        bom, charset = blob_charset(raw, charset)
                        # Strictly: bytes that are not text in its charset block the message (a client may read
                        # them some other way), never pass unread.
                        out.append(_Slot(value, key, "blob", raw[len(bom):].decode(charset), charset, bom))
                    except (ValueError, LookupError) as exc:  # binascii.Error and UnicodeDecodeError are ValueErrors
                        # Fail closed: a client may decode what this cannot, so it must not pass unread.
                        raise ValueError(f"a {value.get('mimeType')} blob that cannot be read as text: {exc}") from None
                continue
            items.append((key, item, below))
    else:
        return
    for key, item, below in items:
        if isinstance(item, str):
            out.append(_Slot(value, key, "text", item))
        elif isinstance(item, (int, float)) and not isinstance(item, bool):
            whole = item if isinstance(item, int) else int(item) if item.is_integer() else None
            if whole is not None and abs(whole) >= 10 ** (NUMBER_DIGITS - 1):
                out.append(_Slot(value, key, "number", str(whole)))
        elif isinstance(item, (dict, list)):
            _slots(item, out, below)


def _anything_to_read(value: Any, paths: Any = None) -> bool:
    """Whether `_slots` could find anything in `value`; stops at the first candidate (a string, a key off the
    protocol paths, a number), so it costs little on the event loop."""
    stack = [(value, paths)]
    while stack:
        node, where = stack.pop()
        where = where if isinstance(where, dict) else {}
        if isinstance(node, (str, int, float)) and not isinstance(node, bool):
            return True
        if isinstance(node, dict):
            for key, item in node.items():
                if where.get(key) is not SKIP:
                    return True
        elif isinstance(node, list):
            stack.extend((item, where.get("*")) for item in node)
    return False


def _write_back(slots: list[_Slot], texts: list[str]) -> None:
    """Put redacted texts in place: values first, then renamed keys (keys last, so the holders' other slots
    still find their values under the old keys). A renaming that would merge two keys fails closed."""
    renamed: dict[int, tuple[dict, dict]] = {}
    for slot, text in zip(slots, texts):
        if text == slot.text:
            continue
        if slot.kind == "key":
            renamed.setdefault(id(slot.holder), (slot.holder, {}))[1][slot.key] = text
        elif slot.kind == "blob":
            slot.holder[slot.key] = base64.b64encode(slot.bom + text.encode(slot.charset)).decode("ascii")
        else:  # text, or a number that held PII: it becomes the redacted string
            slot.holder[slot.key] = text
    for holder, names in renamed.values():
        items = [(names.get(key, key), item) for key, item in holder.items()]
        if len({key for key, _ in items}) != len(items):
            raise ValueError("redacting object keys would merge two of them")
        holder.clear()
        holder.update(items)


class PiiLimitError(Exception):
    """A message over one of the plugin's limits: it is blocked (fail closed), with this as the reason."""


def redact_message(redact: Callable, arguments: dict, max_chars: int, message: dict,
                   parts: tuple[str, ...]) -> tuple[dict | None, dict]:
    """A copy of `message` with the text under `parts` redacted by `redact` (pii_redaction), or None when
    nothing was found. One middleware call per message, so a value keeps one handle across the message."""
    changed = copy.deepcopy(message)
    slots: list[_Slot] = []
    for part in parts:
        if isinstance(changed.get(part), (dict, list)):
            _slots(changed[part], slots, PROTOCOL_PATHS.get(part))
        elif isinstance(changed.get(part), str):
            slots.append(_Slot(changed, part, "text", changed[part]))
    if not slots:
        return None, {}
    size = sum(len(slot.text) for slot in slots)
    if size > max_chars:
        raise PiiLimitError(f"the message holds {size} characters of text, more than this plugin's limit "
                            f"maxTextChars = {max_chars}")
    out = redact([{"type": "text", "text": slot.text} for slot in slots], arguments)
    counts = out["metadata"]["counts"]
    if not any(counts.values()):
        return None, counts
    _write_back(slots, [block["text"] for block in out["content"]])
    return changed, counts


def detection_worker_main() -> None:
    """A detection process (`python -c ...detection_worker_main()`, started by DetectionWorkers): one JSON line
    per job on stdin, `{"message", "parts", "arguments", "maxTextChars"}`; one per answer on stdout,
    `{"ok": [changed, counts]}` or `{"error": [kind, text]}`; it ends when stdin closes (the gateway ended)."""
    from reference_servers.middleware.pii import pii_redaction

    out = sys.stdout
    sys.stdout = sys.stderr  # nothing but answers on the pipe
    for line in sys.stdin.buffer:
        job = json.loads(line)
        try:
            answer = {"ok": redact_message(pii_redaction, job["arguments"], job["maxTextChars"], job["message"],
                                           tuple(job["parts"]))}
        except Exception as exc:  # noqa: BLE001 - reported to the gateway, which fails closed
            answer = {"error": [type(exc).__name__, str(exc)]}
        out.write(json.dumps(answer) + "\n")  # ASCII: any string, lone surrogates included, survives
        out.flush()


class DetectionWorkers:
    """Detection processes for one plugin, at most `size` busy at once, each started when first needed.

    Processes, not threads: detection is pure-Python work that holds the GIL, and in a thread of the gateway
    it slows every other session's event loop (measured: bench/bench_gateway_attacks.py). A job past
    `max_seconds` has its process killed, so abandoned work stops at once and its slot is free for real; the
    next job starts a new process. While a job runs, a worker thread of the gateway waits on the pipe (blocked
    in a read, so it holds no GIL). Plain subprocesses with JSON lines rather than multiprocessing: spawn would
    import the gateway's __main__ again in each worker, fork would copy a process that runs threads."""

    def __init__(self, size: int, arguments: dict, max_chars: int, max_seconds: float):
        self.size, self.arguments, self.max_chars, self.max_seconds = size, arguments, max_chars, max_seconds
        self.lock = threading.Lock()  # guards idle and alive: worker threads and the event loop both touch them
        self.idle: list[subprocess.Popen] = []  # started processes waiting for a job
        self.alive = 0  # processes started and not stopped, idle or busy (at most size)
        self.slots: anyio.CapacityLimiter | None = None  # made in the event loop, on first use

    def _take(self) -> subprocess.Popen:
        """An idle process, or a new one; and a spare started when none is left idle, so the next job (another
        session's) does not wait for a process to start (an interpreter and the detectors: a second or two)."""
        with self.lock:
            process = self.idle.pop() if self.idle else None
            self.alive += process is None
            spare = not self.idle and self.alive < self.size
            self.alive += spare
        if spare:
            started = self._start()
            with self.lock:
                self.idle.append(started)
        return process or self._start()

    @staticmethod
    def _start() -> subprocess.Popen:
        path = os.pathsep.join([IMPORT_ROOT, *filter(None, [os.environ.get("PYTHONPATH")])])
        code = "from reference_servers.gateway.pipeline import detection_worker_main; detection_worker_main()"
        return subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                env={**os.environ, "PYTHONPATH": path})

    def _stop(self, process: subprocess.Popen) -> None:
        with self.lock:
            self.alive -= 1
        process.kill()
        # Reaped by a thread: a dying process may take a moment, and the event loop must not wait for it.
        threading.Thread(target=process.wait, daemon=True).start()

    async def run(self, message: dict, parts: tuple[str, ...]) -> tuple[dict | None, dict]:
        if not any(_anything_to_read(message.get(part), PROTOCOL_PATHS.get(part)) for part in parts):  # a ping's `{}`: nothing to send
            return None, {}
        if self.slots is None:
            self.slots = anyio.CapacityLimiter(self.size)
        job = json.dumps({"message": message, "parts": list(parts), "arguments": self.arguments,
                          "maxTextChars": self.max_chars}).encode() + b"\n"
        lock = threading.Lock()
        box: dict[str, Any] = {"process": None, "gave_up": False}

        def roundtrip() -> bytes:
            with lock:  # the process is known to the caller before the caller can leave it behind
                if box["gave_up"]:
                    return b""
                box["process"] = self._take()
            process = box["process"]
            process.stdin.write(job)
            process.stdin.flush()
            return process.stdout.readline()

        try:
            with anyio.fail_after(self.max_seconds):  # waiting for a slot counts, as in the server
                async with self.slots:
                    try:
                        line = await anyio.to_thread.run_sync(roundtrip, abandon_on_cancel=True)
                    except BaseException:
                        with lock:
                            box["gave_up"] = True
                        if box["process"] is not None:  # cancelled or broken: its work must stop, now
                            self._stop(box["process"])
                        raise
        except TimeoutError:
            raise PiiLimitError(f"redaction did not finish within this plugin's limit maxSeconds = "
                                f"{self.max_seconds:g} s") from None
        except OSError as exc:
            raise RuntimeError(f"the detection process failed ({type(exc).__name__}: {exc})") from None
        if not line:
            self._stop(box["process"])
            raise RuntimeError("the detection process ended before answering")
        with self.lock:
            self.idle.append(box["process"])
        answer = json.loads(line)
        if "ok" in answer:
            changed, counts = answer["ok"]
            return changed, counts
        kind, text = answer["error"]
        raise (PiiLimitError if kind == "PiiLimitError" else ValueError)(text)

    def close(self) -> None:
        with self.lock:
            idle, self.idle = self.idle, []
        for process in idle:
            self._stop(process)


class PiiRedactionPlugin(Plugin):
    """Redacts PII (reference_servers.middleware.pii) in every piece of what reaches the client a person could
    have written (see _slots): results (text blocks, embedded resources and their URIs and text blobs,
    structuredContent with its keys and long integers, anything else), error messages and data, and the
    notifications (log messages, progress) and requests (sampling, elicitation) upstreams send. One-way:
    the handle map is not kept, so a client sees `[EMAIL_1]` and never the address.

    Detection runs off the event loop (`DetectionWorkers`) under `limits`, reference_servers.core's `Limits`
    with the reference server's defaults: `maxTextChars` characters of text per message, `maxSeconds` per
    message (waiting for a slot included), `maxConcurrent` detections at once. A message over a limit is
    blocked, never passed unredacted."""

    outbound = True  # also sees upstream notifications and requests (Pipeline.process_outbound)

    def __init__(self, name: str, *, aggressiveness: str = "standard", defaultRegion: str = "US",  # noqa: N803
                 limits: dict | None = None, **common):
        super().__init__(name, **common)
        self.arguments = {"aggressiveness": aggressiveness, "defaultRegion": defaultRegion}
        from reference_servers.core import Limits
        from reference_servers.middleware.pii import pii_redaction

        try:
            self.limits = Limits.from_config(limits)
        except ValueError as exc:
            raise ValueError(f"plugin {name!r}: {exc}") from None
        self._redact = pii_redaction
        self._redact([], self.arguments)  # rejects bad options now, at configuration time
        self.workers = DetectionWorkers(self.limits.max_concurrent, self.arguments, self.limits.max_text_chars,
                                        self.limits.max_seconds)

    def redacted(self, message: dict, parts: tuple[str, ...]) -> tuple[dict | None, dict]:
        """`redact_message` here, blocking: for callers that are not an event loop."""
        return redact_message(self._redact, self.arguments, self.limits.max_text_chars, message, parts)

    async def process_response(self, request: dict, response: dict) -> Decision:
        changed, counts = await self.workers.run(response, ("result", "error"))
        return Decision(modified=changed, reason=f"redacted {counts}") if changed else Decision()

    async def process_outbound(self, message: dict) -> dict | None:
        return (await self.workers.run(message, ("params",)))[0]


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
