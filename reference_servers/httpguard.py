"""What the reference HTTP fronts (the gateway's and the reference server's) check before a body is parsed.

One request must not stall the other sessions of the process, which share its event loop. Parsing JSON holds
the interpreter for a time that grows with the number of values in the text, not with its bytes (4 MiB of
`[[[[]]]],` is two million lists: seconds to parse, and seconds more for each walk over the tree), and a
worker thread does not help, because the parser never lets go of the interpreter while it runs. So the
shape of a body is judged on its bytes first, with C-speed scans (byte counts, one regular expression,
`bytes.translate`), before any parser sees it:

| limit          | default | bounds                                                                  |
|----------------|---------|-------------------------------------------------------------------------|
| `MAX_DEPTH`    | 100     | levels of arrays and objects                                            |
| `MAX_VALUES`   | 20,000  | values and keys in one message (each `[`, `{`, `,` and `:` outside strings) |

A body over either gets HTTP 400 with a JSON-RPC error (-32600) and is never parsed. Bodies larger than
`OFF_LOOP_BYTES` are scanned in a worker thread (the scans are separate calls, so the event loop runs between
them). A parser then meets at most MAX_VALUES values: measured with bench/bench_gateway_attacks.py (`nested`).

`header_problem` refuses requests whose framing or origin is ambiguous: Content-Length together with
Transfer-Encoding (RFC 9112 §6.1: a request smuggling vector), and repeated Host, Origin, Content-Length or
Transfer-Encoding headers (which of two Origins would be judged is up to the server: refuse both).
"""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

MAX_DEPTH = 100
MAX_VALUES = 20_000
OFF_LOOP_BYTES = 64 * 1024
MAX_CONNECTIONS = 128  # the reference server's uvicorn limit_concurrency (the gateway has its own flag)
INVALID_REQUEST = -32600

# A JSON string: its quotes and everything between, escapes included (an unrolled loop: the common run of
# plain characters is one tight character-class repetition).
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_STEP = [0] * 256
for _byte, _step in ((ord("["), 1), (ord("{"), 1), (ord("]"), -1), (ord("}"), -1)):
    _STEP[_byte] = _step


def _outside_strings(body: bytes, quotes: int) -> bytes:
    """`body` with every JSON string taken out (its quotes included). With few quotes, by splitting at them (C
    scans; a Python step per quote): the regular expression reads every character, 30 ns each (30 ms a MiB)."""
    if quotes > 4096:
        return _STRING.sub(b"", body)
    out, inside = [], False
    for part in body.split(b'"'):  # each part but the last is followed by a quote
        if not inside:
            out.append(part)
            inside = True  # the quote after it opens a string
        elif (len(part) - len(part.rstrip(b"\\"))) % 2 == 0:
            inside = False  # not escaped: the quote after it closes the string
    return b"".join(out)


def _tokens(data: bytes) -> int:
    return data.count(b"[") + data.count(b"{") + data.count(b",") + data.count(b":")


def shape_problem(body: bytes, max_depth: int = MAX_DEPTH, max_values: int | None = MAX_VALUES) -> str | None:
    """Why `body` is refused before parsing (more than `max_values` values, None: no count; nesting deeper than
    `max_depth`), or None. Counted outside strings: a long text full of commas or brackets is one value. The
    raw counts are upper bounds, so strings are taken out only when a raw count is over a limit. Conservative
    on broken JSON (an unterminated string counts what follows it), which a parser refuses anyway."""
    stripped = False
    if max_values is not None and _tokens(body) > max_values:
        # Each string is a value, and its two quotes are not escaped: quotes minus backslash-quotes is a lower
        # bound on delimiting quotes. Over twice the limit is over it already; under, the expression below
        # makes at most about max_values matches.
        if body.count(b'"') - body.count(b'\\"') > 2 * max_values + 2:
            return f"more than {max_values} JSON values in one message"
        body, stripped = _outside_strings(body, body.count(b'"')), True
        if _tokens(body) > max_values:
            return f"more than {max_values} JSON values in one message"
    brackets = body.translate(None, _NOT_BRACKETS)
    if len(brackets) > max_depth and not stripped and b'"' in body:
        brackets = _outside_strings(body, body.count(b'"')).translate(None, _NOT_BRACKETS)
    # Depth d needs d opening brackets, so a short bracket sequence cannot be too deep.
    if len(brackets) > max_depth and max(itertools.accumulate(map(_STEP.__getitem__, brackets))) > max_depth:
        return f"nested deeper than {max_depth} levels"
    return None


async def checked_shape(body: bytes, max_depth: int = MAX_DEPTH, max_values: int | None = MAX_VALUES) -> str | None:
    """`shape_problem`, in a worker thread when the body is large."""
    if len(body) <= OFF_LOOP_BYTES:
        return shape_problem(body, max_depth, max_values)
    import anyio

    return await anyio.to_thread.run_sync(shape_problem, body, max_depth, max_values)


REPEATABLE_NOT = (b"host", b"origin", b"content-length", b"transfer-encoding")


def header_problem(raw_headers: Any) -> str | None:
    """Why a request's headers (ASGI's list of lowercase (name, value) byte pairs) are refused, or None."""
    seen: dict[bytes, int] = {}
    for name, _ in raw_headers or ():
        name = bytes(name).lower()
        seen[name] = seen.get(name, 0) + 1
    for name in REPEATABLE_NOT:
        if seen.get(name, 0) > 1:
            return f"the {name.decode()} header appears {seen[name]} times"
    if b"content-length" in seen and b"transfer-encoding" in seen:
        return "both Content-Length and Transfer-Encoding: the body's length is ambiguous"
    return None


def refusal_body(reason: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": None,
                       "error": {"code": INVALID_REQUEST, "message": f"invalid message: {reason}"}}).encode()


class GuardedHttp:
    """ASGI middleware for an SDK Streamable HTTP app: refuses (400) ambiguous headers, and POST bodies of a
    refused shape, before the app (and its JSON parser) sees them; everything else goes on unchanged, the
    body replayed from memory."""

    def __init__(self, app, max_depth: int = MAX_DEPTH, max_values: int = MAX_VALUES):
        self.app, self.max_depth, self.max_values = app, max_depth, max_values

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        problem = header_problem(scope.get("headers"))
        if problem is None and scope.get("method") == "POST":
            chunks, more, tail = [], True, None
            while more:
                message = await receive()
                if message["type"] != "http.request":
                    tail = message
                    break
                chunks.append(message.get("body", b""))
                more = message.get("more_body", False)
            body = b"".join(chunks)
            problem = await checked_shape(body, self.max_depth, self.max_values)
            queued = [{"type": "http.request", "body": body, "more_body": False}] + ([tail] if tail else [])

            async def replay(rest=receive):
                return queued.pop(0) if queued else await rest()

            receive = replay
        if problem is not None:
            payload = refusal_body(problem)
            await send({"type": "http.response.start", "status": 400,
                        "headers": [(b"content-type", b"application/json"), (b"connection", b"close"),
                                    (b"content-length", str(len(payload)).encode())]})
            return await send({"type": "http.response.body", "body": payload})
        await self.app(scope, receive, send)


class _LineBreaks:
    """What sse_starlette splits an event's data with (`ServerSentEvent._LINE_SEP_EXPR`), with a fast path.

    It splits every data field at line breaks with a regular expression, one C call over the whole text on the
    event loop: 30-40 ms for a 4 MiB JSON-RPC message, which holds no raw line break (JSON escapes them), so
    the split finds nothing. A search for CR and LF first (a memchr-speed scan) skips it then."""

    _regex = re.compile(r"\r\n|\r|\n")

    def split(self, text: str) -> list[str]:
        return self._regex.split(text) if "\n" in text or "\r" in text else [text]

    def sub(self, repl: str, text: str) -> str:
        return self._regex.sub(repl, text)


def fast_sse_lines() -> None:
    """Install the fast path into sse_starlette's event encoder (the SDK's Streamable HTTP writes through it)."""
    try:
        from sse_starlette.event import ServerSentEvent
    except ImportError:  # pragma: no cover - an SDK release without sse_starlette
        return
    if isinstance(getattr(ServerSentEvent, "_LINE_SEP_EXPR", None), re.Pattern):
        ServerSentEvent._LINE_SEP_EXPR = _LineBreaks()  # type: ignore[assignment]
