"""The one small interface every target speaks: a raw JSON-RPC peer.

Theory of operation
-------------------
The suite judges what crossed the wire, not what an SDK made of it, so a
connection records every message in both directions (`WireEvent`) before it
interprets anything, and a request yields an `Exchange`: the request exactly as
sent and the response exactly as received, or a failure sentence a person can
act on ("no response within 5.0 s", "server closed stdout (exit code 1)").

Rules:
- A request never waits longer than its timeout; a dead connection fails every
  pending and later request at once with the reason it died.
- Problems on the wire (non-JSON, a response to an id never used, a second
  response for one id) are recorded as events with a `problem`, never raised:
  the wire-validity checks judge them later.
- Requests the target sends to the suite are answered (ping with an empty
  result, anything else with -32601) so a target that asks does not stall.

Transports differ only in how a message leaves (`_transmit`) and how received
bytes arrive (they call `_on_incoming`); stdio and Streamable HTTP live in
their own modules.
"""

from __future__ import annotations

import itertools
import json
import time
from dataclasses import dataclass, field
from typing import Any

import anyio

from ..core.model import describe
from .peerkit import printable, strict_loads

JSON = Any

# A run's clock: monotonic seconds since the suite started, shared by every
# connection so orderings can be compared across them.
_T0 = time.monotonic()


def now() -> float:
    return round(time.monotonic() - _T0, 6)


class TargetUnavailable(Exception):
    """The target could not be started or reached at all (exit code 2)."""


# repr=False: a message can be megabytes (the oversized-payload probe sends 16 Mi characters), and asyncio and
# anyio put reprs of what a task waits on into their messages (a cancel scope's reason, for one).
@dataclass(slots=True, repr=False)  # many thousands of these under a flood
class WireEvent:
    t: float
    direction: str  # "out" (suite -> target), "in" (target -> suite), "note"
    message: JSON | None = None  # parsed JSON, when it parsed
    raw: str | None = None  # the text, when it did not parse (truncated)
    problem: str | None = None  # what is wrong with it, if anything

    def __repr__(self) -> str:
        what = self.message.get("method") or "response" if isinstance(self.message, dict) else "unparsed"
        return f"WireEvent({self.direction!r}, {what!r}{', ' + repr(self.problem) if self.problem else ''})"


@dataclass(repr=False)  # see WireEvent
class Exchange:
    label: str
    method: str
    request: JSON
    response: JSON | None = None
    failure: str | None = None
    started: float = 0.0
    elapsed: float | None = None
    http_status: int | None = None  # the status of an HTTP answer that carried no JSON-RPC response

    @property
    def result(self) -> JSON | None:
        if isinstance(self.response, dict) and "result" in self.response:
            return self.response["result"]
        return None

    @property
    def error(self) -> JSON | None:
        if isinstance(self.response, dict) and "error" in self.response:
            return self.response["error"]
        return None

    @property
    def has_result(self) -> bool:
        return isinstance(self.response, dict) and "result" in self.response

    @property
    def has_error(self) -> bool:
        return isinstance(self.response, dict) and "error" in self.response

    def outcome_text(self, limit: int = 400) -> str:
        """One line saying what came back, for failure messages."""
        if self.failure:
            return self.failure
        return clip(json.dumps(self.response, sort_keys=True), limit)

    def __repr__(self) -> str:
        return f"Exchange({self.label!r}, {self.method!r}, {'failed' if self.failure else 'answered' if self.response else 'pending'})"

    def to_report(self) -> dict:
        return {
            "label": self.label,
            "request": shortened(self.request),
            "response": shortened(self.response),
            "failure": self.failure,
            "elapsedSeconds": self.elapsed,
        }


REPORT_STRING_LIMIT = 65536  # longer strings of evidence are shortened in reports (an oversized probe: 16 Mi)


def shortened(value: Any) -> Any:
    """`value` with every string longer than REPORT_STRING_LIMIT cut to its start and its length: evidence a
    report can hold. Everything else is returned as it is, and so is a value holding no such string (the usual
    message), uncopied: reports are built from every exchange of a run."""
    kind = type(value)
    if kind is str or isinstance(value, str):
        if len(value) <= REPORT_STRING_LIMIT:
            return value
        from ..core import redact  # before the cut, which could halve a secret the target echoed

        return redact.head(value, 200) + f"… ({len(value)} characters; shortened in the report)"
    if kind is dict or isinstance(value, dict):
        for key, item in value.items():
            if shortened(item) is not item:
                return {key: shortened(item) for key, item in value.items()}
        return value
    if kind is list or isinstance(value, list):
        for item in value:
            if shortened(item) is not item:
                return [shortened(item) for item in value]
        return value
    return value


def clip(text: str, limit: int = 400) -> str:
    """At most `limit` characters of `text`, safe to print: a target's bytes end up in reasons and terminals."""
    if len(text) <= limit:
        return printable(text)
    from ..core import redact  # before the cut, which could halve a secret the target echoed

    return printable(redact.head(text, limit) + f"… ({len(text)} chars)")


class EncodedParams(dict):
    """Request params that bring their JSON text along (`json`, UTF-8), written as is: the suite's 16 Mi-character
    payload (server/interceptors_driver.py) is a text no JSON escape applies to, and the generic encoder spent a
    tenth of a second of every run looking for one, character by character. As a dict it is the same value, which
    the recording keeps as the evidence of what was sent. Build one with `filled_params`."""

    __slots__ = ("json",)

    def __init__(self, value: dict, text: bytes):
        super().__init__(value)
        self.json = text

    def merged(self, extra: dict) -> "EncodedParams":
        """These params with `extra`'s keys added (a key it has already is not allowed: the text would hold two)."""
        assert not set(extra) & set(self), "merged() adds keys, it does not replace them"
        if not extra:
            return self
        more = json.dumps(extra, ensure_ascii=False, separators=(",", ":")).encode()
        text = self.json[:-1] + (b"," if len(self) else b"") + more[1:]
        return EncodedParams({**self, **extra}, text)


PLAIN_FILL = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,-_")


def filled_params(value: dict, marker: str, prefix: str, fill: str, count: int) -> EncodedParams:
    """`value` with the one string `marker` in it replaced by `prefix + fill * count`, and its JSON text built
    from the pieces: `prefix` and `fill` are checked to need no escape, so neither does the long text."""
    assert set(prefix) <= PLAIN_FILL and set(fill) <= PLAIN_FILL, "letters, digits, spaces and .,-_ only"
    skeleton = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
    spelled = json.dumps(marker).encode()
    head, found, tail = skeleton.partition(spelled)
    assert found and spelled not in tail, "the marker is one string of the value"
    text = prefix + fill * count

    def replaced(item):
        if isinstance(item, dict):
            return {k: replaced(v) for k, v in item.items()}
        if isinstance(item, list):
            return [replaced(v) for v in item]
        return text if item == marker else item

    encoded = b"".join((head, b'"', prefix.encode(), fill.encode() * count, b'"', tail))
    return EncodedParams(replaced(value), encoded)


def json_bytes(message: JSON, end: bytes = b"") -> bytes:
    """`message` as compact UTF-8 JSON with non-ASCII characters unescaped, then `end`.

    Python 3.11's encoder takes twice as long without ensure_ascii (13 ms against 6.4 for 1 MB of accented
    text, as long for ASCII). The two encodings differ only in `\\uXXXX` escapes, so where the ASCII one has no
    backslash-u at all it is the same text; any other message is encoded again the slow way. A request whose
    params are `EncodedParams` has its envelope encoded and their text put in, whole."""
    params = message.get("params") if isinstance(message, dict) else None
    if type(params) is EncodedParams:
        envelope = json_bytes({k: v for k, v in message.items() if k != "params"})
        return b"".join((envelope[:-1], b',"params":' if len(envelope) > 2 else b'"params":', params.json,
                         b"}", end))
    text = json.dumps(message, separators=(",", ":"))
    if "\\u" in text:
        text = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
    return (text + end.decode()).encode() if end else text.encode()


def json_line(message: JSON) -> bytes:
    """`message` as one line of newline-delimited JSON (`json_bytes`, then a newline)."""
    return json_bytes(message, b"\n")


FIRST_METHODS = ("initialize", "server/discover")  # what a session opens with, by wire mode
# How the HTTP target names the old transport in a failure; the diagnosis (run/diagnosis.py) looks for these
# words. Here rather than in http.py, so that reading it does not import the HTTP client into a stdio run.
OLD_SSE = "the HTTP+SSE transport of 2024-11-05"
# A host's answer to a turn (conformance/host/HARNESS.md) is one JSON line {"role": "assistant", "content": ...}.
# A host given to the server role reads `initialize` as a user turn and prints one: no MCP server sends that, so
# the wait for the first answer ends there instead of at the timeout (run/diagnosis.py names the mix-up).
HOST_ANSWER = "a line that is not JSON-RPC but a host's answer to a turn"


def is_host_answer(message: JSON) -> bool:
    return (isinstance(message, dict) and "jsonrpc" not in message and "id" not in message
            and "role" in message and "content" in message)


@dataclass
class _Pending:
    exchange: Exchange
    done: anyio.Event = field(default_factory=anyio.Event)


# What one connection keeps of what it received. A target that sends more (a notification flood without
# end) has the connection closed with the reason: memory stays bounded, and the verdict comes at once.
MAX_KEPT_MESSAGES = 25_000

# Once a target has left a request unanswered for its whole timeout, the requests after it share STALL_GRACE
# seconds in all (each gets at least MIN_WAIT): a target that hangs costs one timeout plus the grace.
STALL_GRACE = 3.0
MIN_WAIT = 0.25
MAX_KEPT_BYTES = 64 * 1024 * 1024


class Connection:
    """Base class of a connection to a target. Use as an async context manager."""

    kind = "?"
    max_kept_messages = MAX_KEPT_MESSAGES
    max_kept_bytes = MAX_KEPT_BYTES

    def __init__(self, *, timeout: float, max_message_bytes: int = 16 * 1024 * 1024,
                 mode: str = "handshake"):
        self.timeout = timeout
        self.mode = mode  # "handshake" or "2026-07-28" (stateless: server/discover, _meta on each request)
        self.max_message_bytes = max_message_bytes
        self.wire: list[WireEvent] = []
        self._ids = itertools.count(1)
        self._pending: dict[Any, _Pending] = {}
        self._answered: set[Any] = set()
        self._dead: str | None = None
        # After the first request the target leaves unanswered, every later one shares what is left of one
        # STALL_GRACE: a target that hangs on everything costs one timeout plus the grace, not one timeout each.
        self._stall: tuple[float, str] | None = None  # (deadline, what was left unanswered)
        self._received = 0  # messages received, and their bytes, toward the bounds above
        self._received_bytes = 0

    # -- what transports implement -------------------------------------------------
    async def _transmit(self, message: dict) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    async def __aenter__(self) -> "Connection":  # pragma: no cover - abstract
        raise NotImplementedError

    async def __aexit__(self, *exc) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    # -- the peer ---------------------------------------------------------------------
    @property
    def dead(self) -> str | None:
        """Why the connection is unusable, or None while it works."""
        return self._dead

    def _die(self, reason: str) -> None:
        if self._dead is None:
            self._dead = reason
            self.wire.append(WireEvent(now(), "note", problem=reason))
        for pending in list(self._pending.values()):
            if pending.exchange.failure is None and pending.exchange.response is None:
                pending.exchange.failure = f"{reason} during {pending.exchange.method}"
            pending.done.set()

    async def request(self, method: str, params: JSON = None, *, label: str | None = None,
                      timeout: float | None = None, omit_params: bool = False,
                      request_id: str | None = None) -> Exchange:
        """Send a request and wait for its response; never raises for target faults. The id is the next number,
        or `request_id` (a string: JSON-RPC allows both, and a target must answer with the id as sent)."""
        rid: int | str = next(self._ids) if request_id is None else request_id
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if not omit_params and params is not None:
            message["params"] = params
        exchange = Exchange(label or method, method, message, started=now())
        if self._dead:
            exchange.failure = f"{self._dead} before {method}"
            return exchange
        pending = self._pending[rid] = _Pending(exchange)
        limit = self.timeout if timeout is None else timeout
        stall, stalled_on = self._stall, None  # once set, `_stall` never changes
        if stall is not None and stall[0] - now() < limit:
            stalled_on, limit = stall[1], max(stall[0] - now(), MIN_WAIT)
        with anyio.move_on_after(limit):
            try:
                await self._send(message)
            except Exception as exc:  # a transport fault is the target's, reported as a reason
                await self._on_send_error(exc)
            await pending.done.wait()
        self._pending.pop(rid, None)
        if exchange.response is None and exchange.failure is None:
            exchange.failure = f"no response to {method} within {limit:.1f} s" if stalled_on is not None else \
                f"no response to {method} within {limit:g} s"
            if stalled_on is not None:
                exchange.failure += f" (the target had already left {stalled_on} unanswered)"
            elif self._stall is None:
                self._stall = (now() + STALL_GRACE, method)
        exchange.elapsed = round(now() - exchange.started, 6)
        return exchange

    async def notify(self, method: str, params: JSON = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        if self._dead:
            return
        try:
            with anyio.fail_after(self.timeout):
                await self._send(message)
        except TimeoutError:
            self._die(f"the target accepted no input for {self.timeout:g} s")
        except Exception as exc:
            await self._on_send_error(exc)

    async def _close_for_flood(self) -> None:
        """Stop reading a target that sends without end; transports that can, end it here."""

    async def _on_send_error(self, exc: BaseException) -> None:
        self._die(f"could not send to the target ({describe(exc)})")

    async def _send(self, message: dict) -> None:
        self.wire.append(WireEvent(now(), "out", message))
        await self._transmit(message)

    async def _on_incoming(self, text: str | bytes) -> None:
        """Record one received message and route it; `text` is one JSON-RPC message."""
        if self._dead:
            return
        self._received += 1
        self._received_bytes += len(text)
        if self._received > self.max_kept_messages or self._received_bytes > self.max_kept_bytes:
            self.wire.append(WireEvent(now(), "in", problem=(
                f"the target sent more than {self.max_kept_messages} messages or {self.max_kept_bytes} bytes "
                "on one connection; later ones were not kept")))
            self._die(f"the suite closed the connection after {self._received - 1} messages "
                      f"({self._received_bytes - len(text)} bytes) from the target")
            await self._close_for_flood()
            return
        if isinstance(text, bytes):
            try:
                text = text.decode("utf-8")
            except UnicodeDecodeError:
                self.wire.append(WireEvent(now(), "in", raw=clip(repr(text), 200), problem="not UTF-8"))
                return
        try:
            message = strict_loads(text)
        except ValueError:
            self.wire.append(WireEvent(now(), "in", raw=clip(text, 200), problem="not JSON"))
            return
        event = WireEvent(now(), "in", message)
        self.wire.append(event)
        if isinstance(message, list):
            event.problem = "a JSON-RPC batch (batches were removed from MCP in 2025-06-18)"
            for item in message:
                await self._route(item, event)
            return
        await self._route(message, event)

    async def _route(self, message: JSON, event: WireEvent) -> None:
        if not isinstance(message, dict):
            event.problem = "not a JSON object"
            return
        if is_host_answer(message) and self._fail_first_request(HOST_ANSWER):
            event.problem = HOST_ANSWER
            return
        if "method" in message and "id" in message:  # a request to the suite
            await self._answer_target_request(message)
            return
        if "method" in message:  # a notification; judged later, nothing to do now
            return
        rid = message.get("id")
        pending = self._pending.get(rid) if isinstance(rid, (int, str)) else None
        if pending is None:
            if rid in self._answered:
                event.problem = f"a second response for id {rid!r}"
            elif "error" in message and rid is None:
                event.problem = None  # an error about an unparseable request; judged later
            else:
                event.problem = f"a response to id {rid!r}, which the suite never sent or no longer waits for"
            return
        if pending.exchange.response is None:
            pending.exchange.response = message
            self._answered.add(rid)
        else:
            event.problem = f"a second response for id {rid!r}"
        pending.done.set()

    def _fail_first_request(self, why: str) -> bool:
        """End the wait for the session's first answer at once (True), when it is still awaited."""
        waiting = [p for p in self._pending.values() if p.exchange.method in FIRST_METHODS
                   and p.exchange.response is None and p.exchange.failure is None]
        for pending in waiting:
            pending.exchange.failure = f"{why} during {pending.exchange.method}"
            pending.done.set()
        return bool(waiting)

    async def _answer_target_request(self, message: dict) -> None:
        if message.get("method") == "ping":
            reply: dict = {"jsonrpc": "2.0", "id": message["id"], "result": {}}
        else:
            reply = {"jsonrpc": "2.0", "id": message["id"],
                     "error": {"code": -32601, "message": "the conformance client offers no such method"}}
        try:
            await self._send(reply)
        except Exception as exc:
            await self._on_send_error(exc)

