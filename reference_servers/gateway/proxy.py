"""The reference gateway: an MCP proxy that forwards raw JSON-RPC, with an ADR-009 response pipeline.

    python -m reference_servers.gateway [--http PORT] [--config FILE]

Theory of operation
-------------------
- Stdio client and only stdio upstreams (the common case): no SDK at all. Lines are pumped with asyncio
  pipes, each parsed once, its id rewritten and written on (`raw_stdio_client`, `open_raw_upstream`);
  the SDK is not even imported. Upstreams get the SDK's minimal environment plus their `env`.
- A command upstream is such a line pump whatever the client's side is. The other transports are the official
  SDK's (stdio server or Streamable HTTP server downstream, the Streamable HTTP client upstream), but no SDK
  session: the proxy moves `SessionMessage`s, each turned into a plain dict and back. The SDK's session
  layer would validate requests against its closed request union and re-validate results (the 2.x SDK
  drops unknown Tool fields), so extension fields and methods (`preprocessor`, `execution.requirements`,
  `middleware/*`, `augmentation/*`, interceptors) would not survive it; the JSON-RPC envelope models keep
  params and results as raw dicts on 1.x and 2.x alike.
- Ids: every request the proxy sends on a link gets the link's next id, and its response is mapped
  back to the id the sender used, in both directions (upstream servers may send requests too:
  ping, sampling, roots). Params and results are never touched on the way through.
- One upstream: every request and notification goes to it, names unchanged. Several upstreams:
  `initialize` is answered from all of them (capabilities merged, `extensions` key by key), the list methods
  of tools, prompts, middleware, augmentations and interceptors are fanned out and merged with `NAME__`
  prefixes, the matching call
  methods are routed back by prefix with the prefix removed; `ping` is answered by the proxy; anything
  else goes to the first upstream. A method no upstream offers keeps the upstream's -32601.
- Requests a plugin gates (the tool allowlist) are checked before they are forwarded; a refused one is
  answered by the proxy with the error below and never reaches an upstream. Notifications are judged
  the same way (a refused one is dropped): a gated method is judged whatever the message's id.
- Messages are checked before anything else (`unreadable`): not JSON (-32700), a batch, not a JSON-RPC
  object, a non-string method, an id that is not a string or an integer, nesting deeper than MAX_DEPTH
  (-32600). The client gets the error and the session goes on; an upstream's is logged (and a response
  among them fails the request it answers).
- Responses pass through the plugin pipeline (reference_servers/gateway/pipeline.py) when plugins are
  configured: the client gets `outcome.response`, or, when a plugin blocks, a JSON-RPC error whose
  message names the reason. With no plugins nothing runs and every byte stays the upstream's.
- Over HTTP (`HttpFront`): Host/Origin checked on loopback binds, bodies capped and timed, and the number
  of sessions capped, before a session starts; request heads are timed by the protocol class
  (`header_timed_h11`); a session's upstreams end with it (DELETE, or idle for `--session-idle` seconds).
- Never hang: an upstream that dies fails its pending requests at once (-32603, naming it), and every
  later request routed to it, with the reason.
"""

from __future__ import annotations

import asyncio
import copy
import fcntl
import gc
import itertools
import json
import logging
import marshal
import os
import shlex
import subprocess
import sys
import uuid
import weakref
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, ClassVar

import anyio

try:  # the reference extra's fast encoder; without it the standard library writes the same messages
    import orjson
except ImportError:  # pragma: no cover - a gateway installed without the extra
    orjson = None

from ..httpguard import MAX_VALUES, checked_shape, header_problem

# A line's reading lives in lineparser, which the parser process imports alone; its names are the proxy's too.
from .lineparser import FRAME, IMPORT_ROOT, INVALID_REQUEST, MAX_DEPTH, PARSE_ERROR, Unreadable, depth_over, parse_line  # noqa: F401

log = logging.getLogger("reference_gateway")

SEPARATOR = "__"
GATEWAY_INFO = {"name": "mcpx-reference-gateway", "version": "0.1.0"}
BLOCKED = -32000  # implementation-defined server error: the response was blocked by a plugin
INTERNAL = -32603
# List method -> (result key, the call method whose params.name names one of its items).
LISTS = {"tools/list": ("tools", "tools/call"), "prompts/list": ("prompts", "prompts/get"),
         "middleware/list": ("middleware", "middleware/invoke"),
         "augmentation/list": ("augmentations", "augmentation/augment"),
         "interceptors/list": ("interceptors", "interceptor/invoke")}
CALLS = {call: key for key, call in LISTS.values()}
MAX_PAGES = 50


# ------------------------------------------------------------------------------------------ SDK compatibility

def to_dict(item) -> dict:
    if isinstance(item, dict):  # the raw stdio path reads dicts already
        return item
    message = item.message
    message = getattr(message, "root", message)  # 1.x wraps the union in a RootModel; 2.x does not
    # The envelope's fields as they are: params and result are plain JSON already (the models type them Any),
    # and model_dump would copy the whole tree on the event loop (2.8 s for a 4 MiB body of nested lists).
    # Only a nested model (an error's ErrorData) is dumped.
    out = {}
    for name in message.model_fields_set:
        value = getattr(message, name)
        out[name] = value.model_dump(by_alias=True, mode="json", exclude_unset=True) \
            if hasattr(value, "model_dump") else value
    if message.model_extra:
        out.update(message.model_extra)
    return out


def to_message(data: dict):
    # Imported here: the raw stdio path never needs the SDK, and importing it costs seconds on a busy machine.
    import mcp.types as types
    from mcp.shared.message import SessionMessage

    adapter = getattr(types, "jsonrpc_message_adapter", None)  # 2.x
    if adapter is not None:
        return SessionMessage(adapter.validate_python(data))
    return SessionMessage(types.JSONRPCMessage.model_validate(data))


def error(rid, code: int, message: str, data: Any = None) -> dict:
    err: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    return {"jsonrpc": "2.0", "id": rid, "error": err}


def unreadable(message: Any, depth_checked: bool = False) -> Unreadable | None:
    """Why `message` cannot be handled as a JSON-RPC 2.0 message, or None. What is refused: anything but an
    object with `"jsonrpc": "2.0"`; a `method` that is not a string; a request id that is not a string or an
    integer (MCP forbids null ids; a list or object could not even be a key of the gateway's tables); a
    response id that is not one of those or null; nesting deeper than MAX_DEPTH (the pipeline's copies recurse),
    unless `depth_checked`: the message's bytes were judged before parsing (httpguard.shape_problem)."""
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return Unreadable(INVALID_REQUEST, "not a JSON-RPC 2.0 message")
    rid = message.get("id")
    scalar = isinstance(rid, (str, int)) and not isinstance(rid, bool)
    if "method" in message:
        if not isinstance(message["method"], str):
            return Unreadable(INVALID_REQUEST, "method must be a string", rid if scalar else None)
        if "id" in message and not scalar:
            return Unreadable(INVALID_REQUEST, "a request id must be a string or an integer")
    elif not (scalar or rid is None):
        return Unreadable(INVALID_REQUEST, "a response id must be a string, an integer or null")
    if not depth_checked and depth_over(message, MAX_DEPTH):
        return Unreadable(INVALID_REQUEST, f"nested deeper than {MAX_DEPTH} levels", rid if scalar else None)
    return None


# ------------------------------------------------------------------------------------------ configuration

@dataclass
class UpstreamConfig:
    name: str
    command: list[str] | None = None
    env: dict[str, str] | None = None
    url: str | None = None


@dataclass
class Config:
    upstreams: list[UpstreamConfig]
    plugins: list[dict] = field(default_factory=list)


def load_config(path: str | None, environ=os.environ) -> Config:
    """The config file, or else one upstream from MCPX_UPSTREAM_COMMAND / MCPX_UPSTREAM_URL."""
    data: dict = {}
    if path:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle, object_pairs_hook=_no_repeated_keys)
    upstreams = []
    for name, spec in (data.get("upstreams") or {}).items():
        check_upstream_name(name)
        # $VARS expand, so a config can name an upstream the environment provides ($MCPX_UPSTREAM_COMMAND).
        if spec.get("url"):
            upstreams.append(UpstreamConfig(name, url=os.path.expandvars(spec["url"])))
        elif spec.get("command"):
            argv = shlex.split(os.path.expandvars(spec["command"])) + [str(a) for a in spec.get("args") or ()]
            env = spec.get("env") or {}
            if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
                raise ValueError(f"upstream {name!r}: env must map names to strings")
            # "$TOKEN" hands one variable of the gateway's environment to this upstream, deliberately.
            upstreams.append(UpstreamConfig(name, command=argv, env={k: os.path.expandvars(v) for k, v in env.items()}))
        else:
            raise ValueError(f"upstream {name!r} needs a command or a url")
    if not upstreams:
        if environ.get("MCPX_UPSTREAM_URL"):
            upstreams.append(UpstreamConfig("upstream", url=environ["MCPX_UPSTREAM_URL"]))
        elif environ.get("MCPX_UPSTREAM_COMMAND"):
            upstreams.append(UpstreamConfig("upstream", command=shlex.split(environ["MCPX_UPSTREAM_COMMAND"])))
        else:
            raise ValueError("no upstream: set MCPX_UPSTREAM_COMMAND or MCPX_UPSTREAM_URL, or give --config")
    plugins = data.get("plugins") or []
    if not isinstance(plugins, list):
        raise ValueError("plugins must be a list")
    return Config(upstreams, plugins)


def _no_repeated_keys(pairs: list[tuple[str, Any]]) -> dict:
    # json.load keeps the last of two equal keys silently; two upstreams with one name is a config mistake.
    out: dict = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"{key!r} appears twice in one object of the config")
        out[key] = value
    return out


def check_upstream_name(name: str) -> None:
    """Names whose prefixed forms could collide are refused. With several upstreams a tool is offered as
    NAME__TOOL and routed by the first `__`; that split is unambiguous exactly when NAME neither contains
    `__` nor ends in `_` (`a` and `a_` would both offer `a___tool`)."""
    if not name:
        raise ValueError("an upstream name must not be empty")
    if SEPARATOR in name:
        raise ValueError(f"upstream name {name!r} must not contain {SEPARATOR!r}: it separates the upstream "
                         f"from the tool in prefixed names")
    if name.endswith("_"):
        raise ValueError(f"upstream name {name!r} must not end in '_': {name}{SEPARATOR}tool would read as "
                         f"upstream {name.rstrip('_')!r} and tool '_tool'")


async def open_upstream(stack: AsyncExitStack, cfg: UpstreamConfig):
    """The (read, write) streams of one URL upstream, through the SDK's Streamable HTTP client (a command upstream
    is a line pump: `open_raw_upstream`)."""
    from mcp.client import streamable_http

    connect = getattr(streamable_http, "streamable_http_client", None) or streamable_http.streamablehttp_client
    streams = await stack.enter_async_context(connect(cfg.url))
    return streams[0], streams[1]  # 1.x also yields a session-id getter


# ------------------------------------------------------------------------------------------ raw stdio
# The fast path (stdio client, stdio upstreams): newline-delimited JSON pumped with asyncio pipes, each
# line parsed once and written back with its id rewritten; no SDK import, no pydantic, no thread hops.
# Used whenever every upstream is a command; Streamable HTTP on either side goes through the SDK.

MAX_LINE = 64 * 1024 * 1024
# json.dumps(message, ensure_ascii=False, separators=(",", ":")) without building an encoder for every message.
_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def encode_line(message: dict) -> bytes:
    """`message` as one line of UTF-8 JSON, newline included: what _ENCODE writes (a float may be spelled otherwise,
    `1e16` for `1e+16`, the same number). orjson writes it in one C pass, 50 times faster for a 4 MiB text (21 ms
    on the event loop, every other session waiting, against 0.4 ms); what it refuses (an integer past 64 bits, a
    lone surrogate, a key that is not a string) takes _ENCODE's path."""
    if orjson is not None:
        try:
            return orjson.dumps(message, option=orjson.OPT_APPEND_NEWLINE)
        except TypeError:  # orjson.JSONEncodeError is one
            pass
    return _ENCODE(message).encode() + b"\n"

# The SDK's get_default_environment() list (mcp.client.stdio.DEFAULT_INHERITED_ENV_VARS, POSIX), kept here so
# the fast path need not import the SDK; tests/test_reference_gateway_security.py checks they agree.
DEFAULT_ENV_NAMES = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER")


def minimal_environment() -> dict[str, str]:
    return {k: v for k in DEFAULT_ENV_NAMES if (v := os.environ.get(k)) is not None and not v.startswith("()")}


PARSE_OFF_LOOP_BYTES = 1024 * 1024  # longer lines are parsed in the parser process (OffLoopParser)
PIPE_BYTES = 1024 * 1024  # the parser's pipes' capacity (Linux's default is 64 KiB)
PARSER_TIMEOUT = 30.0  # seconds for one line (64 MiB, MAX_LINE, takes well under one); past it, parsed here


class OffLoopParser:
    """`parse_line` for long lines, in a child process (`python -m reference_servers.gateway.lineparser`).

    json's parser holds the GIL for the whole of a line (5-11 ms for 4 MiB of text, on a loop every session
    shares), so a thread would hold the loop up as long; the child parses, and sends the value back in marshal's
    format, which loads in a fraction of that. One child per event loop, started at the first long line; the
    lines take turns. A child that fails (it cannot start, dies, or does not answer in PARSER_TIMEOUT) is not
    tried again: the lines are parsed on the loop, as before it."""

    _by_loop: ClassVar[weakref.WeakKeyDictionary] = weakref.WeakKeyDictionary()  # event loop -> its parser

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.proc: subprocess.Popen | None = None
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.broken = False

    @classmethod
    def of_running_loop(cls) -> "OffLoopParser":
        loop = asyncio.get_running_loop()
        parser = cls._by_loop.get(loop)
        if parser is None:
            parser = cls._by_loop[loop] = cls()
        return parser

    async def _start(self) -> None:
        loop = asyncio.get_running_loop()
        self.proc = subprocess.Popen([sys.executable, "-m", "reference_servers.gateway.lineparser"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     env={**minimal_environment(), "PYTHONPATH": IMPORT_ROOT})
        for pipe in (self.proc.stdin, self.proc.stdout):  # fewer, larger reads and writes: fewer loop steps
            try:
                fcntl.fcntl(pipe.fileno(), getattr(fcntl, "F_SETPIPE_SZ", 1031), PIPE_BYTES)
            except OSError:  # past /proc/sys/fs/pipe-max-size, or not Linux: the default size
                pass
        self.reader = asyncio.StreamReader()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(self.reader), self.proc.stdout)
        transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, self.proc.stdin)
        self.writer = asyncio.StreamWriter(transport, protocol, None, loop)

    def _give_up(self, why: str) -> None:
        log.warning("parser process: %s; long lines are parsed on the event loop from now on", why)
        self.broken = True
        if self.writer is not None:
            self.writer.close()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()

    async def parse(self, line: bytes):
        if self.broken:
            return parse_line(line)
        async with self.lock:
            if self.broken:
                return parse_line(line)
            try:
                with anyio.fail_after(PARSER_TIMEOUT):
                    if self.proc is None:
                        await self._start()
                    assert self.reader is not None and self.writer is not None
                    self.writer.write(FRAME.pack(len(line)))
                    self.writer.write(line)
                    await self.writer.drain()
                    (size,) = FRAME.unpack(await self.reader.readexactly(FRAME.size))
                    body = await self.reader.readexactly(size)
            except (OSError, ValueError, TimeoutError, asyncio.IncompleteReadError) as exc:
                self._give_up(f"{type(exc).__name__}: {exc}")
                return parse_line(line)
        kind = body[:1]
        if kind == b"M":
            return marshal.loads(memoryview(body)[1:])
        if kind == b"U":
            code, reason, rid = marshal.loads(memoryview(body)[1:])
            return Unreadable(code, reason, rid)
        return parse_line(line)


class LineReader:
    """Async iterator of parsed messages from a byte stream of lines (asyncio StreamReader); a line longer than
    PARSE_OFF_LOOP_BYTES is parsed by the parser process."""

    def __init__(self, reader):
        self.reader = reader

    def __aiter__(self):
        return self

    async def __anext__(self):
        while True:
            try:
                line = await self.reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as exc:
                if not exc.partial or exc.partial.isspace():
                    raise StopAsyncIteration from None
                line = exc.partial
            except asyncio.LimitOverrunError:
                raise StopAsyncIteration from None
            if not line.isspace():  # as `line.strip()` is empty (the same ASCII whitespace), without copying the line
                if len(line) > PARSE_OFF_LOOP_BYTES:
                    return await OffLoopParser.of_running_loop().parse(line)
                return parse_line(line)


class LineWriter:
    """`send(dict)` writes one line; `aclose()` closes the pipe."""

    def __init__(self, writer):
        self.writer = writer

    async def send(self, message: dict) -> None:
        if self.writer.is_closing():
            raise anyio.ClosedResourceError
        try:
            self.writer.write(encode_line(message))
            if self.writer.transport.get_write_buffer_size() > 65536:  # wait only when the reader lags
                await self.writer.drain()
        except (ConnectionError, RuntimeError) as exc:
            raise anyio.BrokenResourceError from exc

    async def aclose(self) -> None:
        if not self.writer.is_closing():
            self.writer.close()


async def raw_stdio_client():
    """(reader, writer) on this process's stdin and stdout, or None when they are not pipes asyncio can watch."""
    loop = asyncio.get_running_loop()
    try:
        reader = asyncio.StreamReader(limit=MAX_LINE)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(0, "rb", closefd=False))
        transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin,
                                                            os.fdopen(1, "wb", closefd=False))
    except (OSError, ValueError):  # a regular file or a terminal on stdin/stdout: the SDK path reads those
        return None
    return LineReader(reader), LineWriter(asyncio.StreamWriter(transport, protocol, None, loop))


async def open_raw_upstream(stack: AsyncExitStack, cfg: UpstreamConfig):
    # Popen, and its pipes connected to the loop by hand as raw_stdio_client does: asyncio's subprocess transport
    # hands every chunk of output on through one more loop turn (call_soon), one of a round trip's five.
    loop = asyncio.get_running_loop()
    proc = subprocess.Popen(cfg.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            env={**minimal_environment(), **(cfg.env or {})})
    reader = asyncio.StreamReader(limit=MAX_LINE)
    read_transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), proc.stdout)
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, proc.stdin)
    writer = asyncio.StreamWriter(transport, protocol, None, loop)

    async def end() -> None:
        # As the SDK's stdio_client: close its stdin, give it 2 s to exit, then terminate, then kill.
        with anyio.CancelScope(shield=True):
            if not writer.is_closing():
                writer.close()
            try:
                for stop in (None, proc.terminate, proc.kill):
                    if stop is not None:
                        try:
                            stop()
                        except ProcessLookupError:
                            return
                    with anyio.move_on_after(2.0):
                        while proc.poll() is None:  # Popen reaps it; asyncio's child watcher does not know it
                            await anyio.sleep(0.01)
                        return
            finally:
                read_transport.close()

    stack.push_async_callback(end)
    return LineReader(reader), LineWriter(writer)


# ------------------------------------------------------------------------------------------ links

Callback = Callable[[dict], Awaitable[None]]


class Link:
    """One side of the proxy (the client, or an upstream): sends with its own ids, maps responses back."""

    def __init__(self, name: str, read, write, encode: Callable[[dict], Any] = to_message, depth_checked: bool = False):
        self.name, self.read, self.write, self.encode = name, read, write, encode
        self.depth_checked = depth_checked  # what it reads was judged on its bytes (raw lines, the HTTP front)
        self.ids = itertools.count(1)
        self.waiting: dict[Any, Callback] = {}
        self.dead: str | None = None
        self.lock = anyio.Lock()

    async def send(self, message: dict) -> None:
        if self.dead:
            return
        try:
            if self.encode is unchanged:  # a line writer: write() puts a whole line in the buffer at once
                await self.write.send(message)
            else:
                async with self.lock:
                    await self.write.send(self.encode(message))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError) as exc:
            await self.die(f"{self.name} is gone ({type(exc).__name__})")
        except Exception as exc:  # a message the SDK's models refuse: the sender's fault, reported to it
            log.warning("cannot send to %s: %s", self.name, exc)
            rid = message.get("id")
            if "method" in message and rid is not None and rid in self.waiting:
                await self.waiting.pop(rid)(error(rid, INTERNAL, f"the gateway could not send this to {self.name}"))

    async def request(self, message: dict, on_response: Callback) -> str | None:
        """Send a request under a fresh id, which it returns; `on_response` gets the response."""
        if self.dead:
            await on_response(error(None, INTERNAL, self.dead))
            return None
        rid = f"g{next(self.ids)}"
        self.waiting[rid] = on_response
        await self.send({**message, "id": rid})
        return rid

    async def call(self, method: str, params: dict | None) -> dict:
        """A request of the proxy's own (fan-out), waited for."""
        done, box = anyio.Event(), {}

        async def got(response: dict) -> None:
            box["r"] = response
            done.set()

        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self.request(message, got)
        await done.wait()
        return box["r"]

    async def resolve(self, response: dict) -> bool:
        callback = self.waiting.pop(response.get("id"), None)
        if callback is None:
            return False
        await callback(response)
        return True

    async def die(self, reason: str) -> None:
        if self.dead:
            return
        self.dead = reason
        for rid, callback in list(self.waiting.items()):
            self.waiting.pop(rid, None)
            await callback(error(rid, INTERNAL, reason))


# ------------------------------------------------------------------------------------------ the proxy

class Proxy:
    """One downstream session in front of its upstream links."""

    def __init__(self, client: Link, upstreams: dict[str, Link], pipeline=None):
        self.client, self.upstreams, self.pipeline = client, upstreams, pipeline
        self.single = len(upstreams) == 1
        self.first = next(iter(upstreams.values()))
        self.in_flight: dict[Any, tuple[Link, Any]] = {}  # client request id -> (upstream, its id there)
        self.asked: dict[tuple[str, Any], Any] = {}  # (upstream, its request id) -> our id on the client link

    async def run(self) -> None:
        async with anyio.create_task_group() as tg:
            for link in self.upstreams.values():
                tg.start_soon(self.pump_upstream, link)
            await self.pump_client(tg)
            tg.cancel_scope.cancel()

    # -- client -> upstreams ------------------------------------------------------------------
    async def pump_client(self, tg) -> None:
        async for item in self.client.read:
            message = None if isinstance(item, Exception) else to_dict(item)
            problem = item if isinstance(item, Exception) else unreadable(message, self.client.depth_checked)
            if problem is not None:
                # Answered, never forwarded, and the session goes on (JSON-RPC: id null when it is unknown).
                log.warning("refused a message from the client: %s", problem)
                code = problem.code if isinstance(problem, Unreadable) else INVALID_REQUEST
                await self.client.send(error(getattr(problem, "rid", None), code, f"invalid message: {problem}"))
                continue
            if "method" in message and "id" in message:
                if self.single:  # forwarding never waits for the answer: no task needed, one loop turn saved
                    await self.on_client_request(message)
                else:  # fan-out waits for every upstream; other requests must not queue behind it
                    tg.start_soon(self.on_client_request, message)
            elif "method" in message:
                await self.on_client_notification(message)
            else:  # a response to a request an upstream sent through us
                await self.client.resolve(message)

    async def on_client_request(self, request: dict) -> None:
        method, params = request["method"], request.get("params")
        if self.pipeline is not None and self.pipeline.gates:
            # Gates run before anything is forwarded: a refused call never reaches an upstream.
            refused = await self.pipeline.process_request(copy.deepcopy(request))
            if refused is not None:
                reason = refused.reason or "blocked"
                return await self.client.send(error(request["id"], BLOCKED, f"blocked by the gateway: {reason}",
                                                    {"reason": reason}))
        if self.single:
            return await self.forward(self.first, request, request)
        if method == "ping":
            return await self.answer(request, {"jsonrpc": "2.0", "id": request["id"], "result": {}})
        if method == "initialize":
            return await self.answer(request, await self.merged_initialize(request))
        if method in LISTS:
            return await self.answer(request, await self.merged_list(request))
        if method in CALLS and isinstance(params, dict) and isinstance(params.get("name"), str):
            name, _, rest = params["name"].partition(SEPARATOR)
            link = self.upstreams.get(name)
            if link is None or not rest:
                return await self.answer(request, error(request["id"], -32602, f"unknown {CALLS[method]} name "
                                                        f"{params['name']!r} (names are UPSTREAM{SEPARATOR}NAME)"))
            return await self.forward(link, {**request, "params": {**params, "name": rest}}, request)
        await self.forward(self.first, request, request)

    async def forward(self, link: Link, message: dict, request: dict) -> None:
        """Send `message` upstream; its response goes to the client under the client's id."""
        rid = request["id"]

        async def back(response: dict) -> None:
            self.in_flight.pop(rid, None)
            await self.answer(request, {**response, "id": rid})

        upstream_id = await link.request({k: v for k, v in message.items() if k != "id"}, back)
        if upstream_id in link.waiting:  # still unanswered: a cancellation can find it
            self.in_flight[rid] = (link, upstream_id)

    async def on_client_notification(self, message: dict) -> None:
        if self.pipeline is not None and self.pipeline.gates:
            # A notification naming a gated method (JSON-RPC lets any method be sent without an id, and an
            # upstream may act on it) is judged as a request would be; a refused one is dropped, unanswered.
            refused = await self.pipeline.process_request(copy.deepcopy(message))
            if refused is not None:
                log.warning("dropped a notification: %s", refused.reason)
                return
        if message["method"] == "notifications/cancelled":
            params = message.get("params") or {}
            # The upstream need not answer a cancelled request (and the client must ignore an answer), so
            # its bookkeeping goes now; a late answer finds no callback and is dropped.
            target = self.in_flight.pop(params.get("requestId"), None)
            if target is not None:
                link, upstream_id = target
                link.waiting.pop(upstream_id, None)
                await link.send({**message, "params": {**params, "requestId": upstream_id}})
            return
        for link in self.upstreams.values():
            await link.send(message)

    # -- upstreams -> client ------------------------------------------------------------------
    async def pump_upstream(self, link: Link) -> None:
        try:
            async for item in link.read:
                message = None if isinstance(item, Exception) else to_dict(item)
                problem = item if isinstance(item, Exception) else unreadable(message, link.depth_checked)
                if problem is not None:
                    log.warning("refused a message from %s: %s", link.name, problem)
                    if message is not None and "method" not in message:  # an answer the client must not wait for
                        await link.resolve(error(getattr(problem, "rid", None), INTERNAL,
                                                 f"{link.name} sent an invalid answer: {problem}"))
                    continue
                if "method" in message and "id" in message:
                    await self.on_upstream_request(link, message)
                elif message.get("method") == "notifications/cancelled":
                    await self.on_upstream_cancel(link, message)
                elif "method" in message:
                    message = await self.outbound(message)
                    if message is not None:
                        await self.client.send(message)
                else:
                    await link.resolve(message)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
            pass
        await link.die(f"upstream {link.name!r} closed the connection")

    async def on_upstream_request(self, link: Link, message: dict) -> None:
        rid = message["id"]
        passed = await self.outbound(message)
        if passed is None:
            return await link.send(error(rid, INTERNAL, "the gateway withheld this request (a plugin failed)"))
        message = passed

        async def back(response: dict) -> None:
            self.asked.pop((link.name, rid), None)
            await link.send({**response, "id": rid})

        ours = await self.client.request({k: v for k, v in message.items() if k != "id"}, back)
        if ours in self.client.waiting:
            self.asked[(link.name, rid)] = ours

    async def outbound(self, message: dict) -> dict | None:
        if self.pipeline is None or not self.pipeline.outbound:
            return message
        return await self.pipeline.process_outbound(message)

    async def on_upstream_cancel(self, link: Link, message: dict) -> None:
        """An upstream cancels a request it sent the client: tell the client under the id it knows."""
        params = message.get("params") or {}
        ours = self.asked.pop((link.name, params.get("requestId")), None)
        if ours is not None:
            self.client.waiting.pop(ours, None)
            # Its `reason` is the upstream's text: through the outbound plugins like every other notification. If
            # they withhold it (a critical plugin failed), the client is still told, without the reason.
            passed = await self.outbound({**message, "params": {**params, "requestId": ours}})
            await self.client.send(passed if passed is not None else {
                "jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": ours}})

    async def answer(self, request: dict, response: dict) -> None:
        if self.pipeline is not None and ("result" in response or "error" in response):
            outcome = await self.pipeline.process_response(copy.deepcopy(request), copy.deepcopy(response))
            if outcome.allowed and isinstance(outcome.response, dict):
                response = {**outcome.response, "jsonrpc": "2.0", "id": request["id"]}
            else:
                reason = outcome.reason or "blocked"
                response = error(request["id"], BLOCKED, f"blocked by the gateway: {reason}", {"reason": reason})
        await self.client.send(response)

    # -- aggregation (several upstreams) ------------------------------------------------------
    async def fan_out(self, method: str, params) -> dict[str, dict]:
        out: dict[str, dict] = {}

        async def one(name: str, link: Link) -> None:
            out[name] = await link.call(method, params)

        async with anyio.create_task_group() as tg:
            for name, link in self.upstreams.items():
                tg.start_soon(one, name, link)
        return {name: out[name] for name in self.upstreams}

    async def merged_initialize(self, request: dict) -> dict:
        answers = await self.fan_out("initialize", request.get("params"))
        results = [r["result"] for r in answers.values() if isinstance(r.get("result"), dict)]
        if not results:
            return {**next(iter(answers.values())), "id": request["id"]}
        merged = copy.deepcopy(results[0])
        caps: dict = {}
        for result in results:
            for key, value in (result.get("capabilities") or {}).items():
                if key == "extensions" and isinstance(value, dict) and isinstance(caps.get(key), dict):
                    for extension, settings in value.items():  # one key per extension, each from its first upstream
                        caps[key].setdefault(extension, copy.deepcopy(settings))
                else:
                    caps.setdefault(key, copy.deepcopy(value))
        merged["capabilities"], merged["serverInfo"] = caps, dict(GATEWAY_INFO)
        merged.pop("instructions", None)
        return {"jsonrpc": "2.0", "id": request["id"], "result": merged}

    async def merged_list(self, request: dict) -> dict:
        key, _ = LISTS[request["method"]]
        params = {k: v for k, v in (request.get("params") or {}).items() if k != "cursor"}
        items, first_error = [], None

        async def collect(name: str, link: Link) -> None:
            nonlocal first_error
            cursor = None
            for _ in range(MAX_PAGES):
                page = await link.call(request["method"], {**params, **({"cursor": cursor} if cursor else {})})
                result = page.get("result")
                if not isinstance(result, dict):
                    first_error = first_error or page.get("error")
                    return
                for item in result.get(key) or ():
                    if isinstance(item, dict) and isinstance(item.get("name"), str):
                        items.append((name, {**item, "name": f"{name}{SEPARATOR}{item['name']}"}))
                cursor = result.get("nextCursor")
                if not isinstance(cursor, str) or not cursor:
                    return

        async with anyio.create_task_group() as tg:
            for name, link in self.upstreams.items():
                tg.start_soon(collect, name, link)
        if not items and first_error is not None:
            return {"jsonrpc": "2.0", "id": request["id"], "error": first_error}
        order = list(self.upstreams)
        items.sort(key=lambda pair: order.index(pair[0]))  # upstream order, whatever order they answered in
        return {"jsonrpc": "2.0", "id": request["id"], "result": {key: [item for _, item in items]}}


def unchanged(message: dict) -> dict:
    return message


async def serve_session(client_read, client_write, config: Config, pipeline=None, raw: bool = False,
                        client_checked: bool = False) -> None:
    """Proxy one downstream session until the client goes away (`raw`: every side is a line pump;
    `client_checked`: the client's messages were judged on their bytes, as the HTTP front does)."""
    async with AsyncExitStack() as stack:
        links = {}
        for cfg in config.upstreams:
            # A command upstream is always a line pump, whatever the client's side is: the SDK's stdio_client
            # splits its buffer at every chunk (quadratic on a long line: 150 ms on the event loop for one 4 MiB
            # answer, in small steps) and turns every message into models and back.
            if cfg.command:
                read, write = await open_raw_upstream(stack, cfg)
            else:
                read, write = await open_upstream(stack, cfg)
            links[cfg.name] = Link(f"upstream {cfg.name!r}", read, write, unchanged if cfg.command else to_message,
                                   bool(cfg.command))
        client = Link("the client", client_read, client_write, unchanged if raw else to_message, raw or client_checked)
        proxy = Proxy(client, links, pipeline)
        await proxy.run()


def make_pipeline(config: Config):
    """The response pipeline, or None with no plugins (nothing to run: a pure pass-through)."""
    if not config.plugins:
        return None
    from .pipeline import build_pipeline

    return build_pipeline(config.plugins)


# ------------------------------------------------------------------------------------------ transports

async def serve_stdio(config: Config) -> None:
    pipeline = make_pipeline(config)
    if all(cfg.command for cfg in config.upstreams):
        pipes = await raw_stdio_client()
        if pipes is not None:
            read, write = pipes
            await serve_session(read, write, config, pipeline, raw=True)
            await write.aclose()
            return
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
        await serve_session(read, write, config, pipeline)
        # The client closed stdin: close our side too, or the SDK's stdout writer waits for more forever.
        await write.aclose()


LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]", "::1")
MAX_BODY = 4 * 1024 * 1024  # bytes of one POST; MCP messages are small, a bigger body is a mistake or an attack
SESSION_IDLE = 1800.0  # seconds without a request after which a session and its upstreams end
MAX_SESSIONS = 32  # sessions at once; each runs its own upstream processes, so one more is refused (503)
HEADER_TIMEOUT = 10.0  # seconds a client may take to send a request's headers, or the connection is closed
BODY_TIMEOUT = 30.0  # seconds a client may take to send a request's whole body, or it gets 408
MAX_CONNECTIONS = 128  # uvicorn's limit_concurrency: past it, requests get 503 (SSE streams count too)


def host_of(value: str) -> str:
    """The host part of a Host header or an Origin's authority ("[::1]:8000" -> "[::1]")."""
    if value.startswith("["):
        return value[:value.find("]") + 1]
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def refusal(headers: dict[str, str], loopback: bool) -> tuple[int, str] | None:
    """DNS rebinding protection (the MCP Streamable HTTP transport's security warning): a server bound to
    loopback answers only requests addressed to a loopback name, from no origin or a loopback one.
    Statuses as the SDK's own check: 421 for Host, 403 for Origin."""
    if not loopback:
        return None
    if host_of(headers.get("host", "")).lower() not in LOOPBACK_HOSTS:
        return 421, "Invalid Host header"
    origin = headers.get("origin")
    if origin is not None:
        scheme, _, authority = origin.partition("://")
        if scheme not in ("http", "https") or host_of(authority).lower() not in LOOPBACK_HOSTS:
            return 403, "Invalid Origin header"
    return None


class HttpFront:
    """Streamable HTTP downstream: one SDK server transport per session, each with its own upstreams.

    Guards before anything else runs (so a refused request never starts an upstream): Host/Origin on a
    loopback bind, the body cap (413). A session ends, and its upstreams with it, on DELETE (the SDK
    transport closes its streams, the proxy's client pump ends) or after `idle` seconds with no request."""

    def __init__(self, config: Config, tg, *, loopback: bool = True, max_body: int = MAX_BODY,
                 idle: float = SESSION_IDLE, max_sessions: int = MAX_SESSIONS, body_timeout: float = BODY_TIMEOUT,
                 max_values: int = MAX_VALUES):
        self.config, self.tg, self.max_values = config, tg, max_values
        self.loopback, self.max_body, self.idle = loopback, max_body, idle
        self.max_sessions, self.body_timeout = max_sessions, body_timeout
        self.pipeline = make_pipeline(config)
        self.sessions: dict[str, Any] = {}
        self.last_seen: dict[str, float] = {}
        self.scopes: dict[str, anyio.CancelScope] = {}

    async def __call__(self, scope, receive, send) -> None:
        from starlette.responses import Response

        if scope["type"] != "http":
            return
        ambiguous = header_problem(scope.get("headers"))
        if ambiguous is not None:
            return await Response(ambiguous, status_code=400, headers={"connection": "close"})(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers") or ()}
        refused = refusal(headers, self.loopback)
        if refused is not None:
            return await Response(refused[1], status_code=refused[0])(scope, receive, send)
        if scope["path"].rstrip("/") != "/mcp":
            return await Response("not found", status_code=404)(scope, receive, send)
        body = await self.capped(receive, headers)
        if not callable(body):
            status, text = (408, f"request body not received within {self.body_timeout:g} s") if body == "slow" \
                else (413, "request body too large")
            return await Response(text, status_code=status, headers={"connection": "close"})(scope, receive, send)
        receive = body
        if scope.get("method") == "POST":
            # Judged on its bytes before the SDK parses it (on this event loop, which every session shares).
            shape = await checked_shape(body.body, MAX_DEPTH, self.max_values)
            if shape is not None:
                log.warning("refused a request body: %s", shape)
                return await Response(json.dumps(error(None, INVALID_REQUEST, f"invalid message: {shape}")),
                                      status_code=400, media_type="application/json")(scope, receive, send)
        sid = headers.get("mcp-session-id")
        if sid:
            transport = self.sessions.get(sid)
            if transport is None:
                return await Response("session not found", status_code=404)(scope, receive, send)
            self.last_seen[sid] = anyio.current_time()
            if scope.get("method") != "DELETE":
                return await transport.handle_request(scope, receive, send)
            ended = await handled(transport, scope, receive, send)
            if ended < 300:  # the session is over: its place is free now, while its upstreams stop
                self.sessions.pop(sid, None)
                self.last_seen.pop(sid, None)
            return
        if scope.get("method") != "POST":
            return await Response("a session starts with a POST of initialize", status_code=400)(scope, receive, send)
        if len(self.sessions) >= self.max_sessions:
            # Each session starts its own upstream processes: without a cap, posts of initialize are processes.
            log.warning("refused a session: %d are running, the limit", len(self.sessions))
            return await Response(f"too many sessions: this gateway serves at most {self.max_sessions} at once",
                                  status_code=503, headers={"retry-after": "60"})(scope, receive, send)
        from mcp.server.streamable_http import StreamableHTTPServerTransport

        sid = uuid.uuid4().hex
        transport = StreamableHTTPServerTransport(mcp_session_id=sid)
        self.sessions[sid] = transport
        self.last_seen[sid] = anyio.current_time()
        scope_of_session = await self.tg.start(self.run_session, sid, transport)
        if await handled(transport, scope, receive, send) >= 400:
            # The opening request was refused (not an initialize): no session, and no upstreams kept for it.
            self.sessions.pop(sid, None)
            scope_of_session.cancel()

    async def capped(self, receive, headers: dict[str, str]):
        """A `receive` that replays the whole body; "large" when the body is over the cap, "slow" when it did not
        arrive within `body_timeout` (by hand: neither uvicorn nor starlette has a body read timeout)."""
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_body:
            return "large"
        body, more, tail = bytearray(), True, None
        with anyio.move_on_after(self.body_timeout) as timer:
            while more:
                message = await receive()
                if message["type"] != "http.request":
                    tail = message
                    break
                body += message.get("body", b"")
                if len(body) > self.max_body:
                    return "large"
                more = message.get("more_body", False)
        if timer.cancelled_caught:
            return "slow"
        queued = [{"type": "http.request", "body": bytes(body), "more_body": False}] + ([tail] if tail else [])

        async def replay():
            return queued.pop(0) if queued else await receive()

        replay.body = queued[0]["body"]  # type: ignore[attr-defined]
        return replay

    async def run_session(self, sid: str, transport, *, task_status=anyio.TASK_STATUS_IGNORED) -> None:
        with anyio.CancelScope() as cancel:
            self.scopes[sid] = cancel
            try:
                async with transport.connect() as (read, write):
                    task_status.started(cancel)
                    await serve_session(read, write, self.config, self.pipeline, client_checked=True)
            except Exception:
                log.exception("session %s ended with an error", sid)
            finally:
                self.sessions.pop(sid, None)
                self.last_seen.pop(sid, None)
                self.scopes.pop(sid, None)

    async def reap_idle(self) -> None:
        """Ends sessions no request has touched for `idle` seconds (a client that vanished without DELETE)."""
        while True:
            await anyio.sleep(min(self.idle / 4, 30.0))
            now = anyio.current_time()
            for sid, seen in list(self.last_seen.items()):
                if now - seen > self.idle and sid in self.scopes:
                    log.warning("session %s idle for %.0f s: ended", sid, now - seen)
                    self.sessions.pop(sid, None)
                    self.scopes[sid].cancel()


async def handled(transport, scope, receive, send) -> int:
    """`transport.handle_request(...)`, and the status it answered with (500 when it sent none)."""
    status = {}

    async def watch(message) -> None:
        if message["type"] == "http.response.start":
            status["code"] = message["status"]
        await send(message)

    await transport.handle_request(scope, receive, watch)
    return status.get("code", 500)


def header_timed_h11(timeout: float):
    """uvicorn's h11 protocol with a deadline for each request's headers: a connection that has not sent a
    complete request head `timeout` seconds after it opened, or after its previous response, is closed.
    Written by hand: uvicorn has no header read timeout (its timeout_keep_alive only covers a connection
    that sends nothing at all after a response), so a client sending a byte a second would hold a
    connection for ever."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class HeaderTimedH11(H11Protocol):
        header_timer = None

        def arm(self) -> None:
            self.disarm()
            self.header_timer = self.loop.call_later(timeout, self.headers_too_slow)

        def disarm(self) -> None:
            if self.header_timer is not None:
                self.header_timer.cancel()
                self.header_timer = None

        def headers_too_slow(self) -> None:
            self.header_timer = None
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                self.transport.close()

        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            self.arm()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.conn.their_state is not h11.IDLE:  # the head is in: the body has its own deadline
                self.disarm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
                self.arm()  # the next request's head, on a kept-alive connection

        def connection_lost(self, exc) -> None:
            self.disarm()
            super().connection_lost(exc)

    return HeaderTimedH11


async def serve_http(config: Config, port: int, host: str = "127.0.0.1", *, max_body: int = MAX_BODY,
                     idle: float = SESSION_IDLE, max_sessions: int = MAX_SESSIONS,
                     header_timeout: float = HEADER_TIMEOUT, body_timeout: float = BODY_TIMEOUT,
                     max_connections: int = MAX_CONNECTIONS) -> None:
    import ipaddress

    import uvicorn

    from ..httpguard import fast_sse_lines

    fast_sse_lines()  # a large answer is not split at line breaks it does not have, on the event loop

    make_pipeline(config)  # a bad plugin config fails at start, not at the first session
    # What every session uses, imported now rather than by the first session; then the start-up's objects (about
    # 84,000: the SDK's models, uvicorn, starlette) are left out of every later garbage collection. A full
    # collection walks them all: 35-40 ms on the event loop, at a moment no request chooses.
    import mcp.server.streamable_http  # noqa: F401
    import mcp.shared.message  # noqa: F401
    import mcp.types  # noqa: F401

    gc.collect()
    gc.freeze()
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = host == "localhost"
    async with anyio.create_task_group() as tg:
        front = HttpFront(config, tg, loopback=loopback, max_body=max_body, idle=idle, max_sessions=max_sessions,
                          body_timeout=body_timeout)
        tg.start_soon(front.reap_idle)
        # uvicorn's own settings where it has them: limit_concurrency (503 past it), timeout_keep_alive (an idle
        # kept-alive connection, 5 s, its default), h11's cap on a request head (16 KiB, its default: 400).
        server = uvicorn.Server(uvicorn.Config(front, host=host, port=port, log_level="warning", lifespan="off",
                                               http=header_timed_h11(header_timeout), limit_concurrency=max_connections,
                                               timeout_keep_alive=5))
        print(f"reference gateway on http://{host}:{port}/mcp", file=sys.stderr, flush=True)
        await server.serve()
        tg.cancel_scope.cancel()
