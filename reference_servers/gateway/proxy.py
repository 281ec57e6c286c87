"""The reference gateway: an MCP proxy that forwards raw JSON-RPC, with an ADR-009 response pipeline.

    python -m reference_servers.gateway [--http PORT] [--config FILE]

Theory of operation
-------------------
- Transports are the official SDK's (stdio server or Streamable HTTP server downstream; stdio_client
  or the Streamable HTTP client upstream), but no SDK session: the proxy moves `SessionMessage`s, each
  turned into a plain dict and back. The SDK's session layer would validate requests against its closed
  request union and re-validate results (the 2.x SDK drops unknown Tool fields), so extension fields
  and methods (`preprocessor`, `execution.requirements`, `middleware/*`, `augmentation/*`) would not
  survive it; the JSON-RPC envelope models keep params and results as raw dicts on 1.x and 2.x alike.
- Ids: every request the proxy sends on a link gets the link's next id, and its response is mapped
  back to the id the sender used, in both directions (upstream servers may send requests too:
  ping, sampling, roots). Params and results are never touched on the way through.
- One upstream: every request and notification goes to it, names unchanged. Several upstreams:
  `initialize` is answered from all of them (capabilities merged), the list methods of tools, prompts,
  middleware and augmentations are fanned out and merged with `NAME__` prefixes, the matching call
  methods are routed back by prefix with the prefix removed; `ping` is answered by the proxy; anything
  else goes to the first upstream. A method no upstream offers keeps the upstream's -32601.
- Responses pass through the plugin pipeline (reference_servers/gateway/pipeline.py) when plugins are
  configured: the client gets `outcome.response`, or, when a plugin blocks, a JSON-RPC error whose
  message names the reason. With no plugins nothing runs and every byte stays the upstream's.
- Never hang: an upstream that dies fails its pending requests at once (-32603, naming it), and every
  later request routed to it, with the reason.
"""

from __future__ import annotations

import copy
import itertools
import json
import logging
import os
import shlex
import sys
import uuid
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

import anyio
import mcp.types as types
from mcp.shared.message import SessionMessage

log = logging.getLogger("reference_gateway")

SEPARATOR = "__"
GATEWAY_INFO = {"name": "mcpx-reference-gateway", "version": "0.1.0"}
BLOCKED = -32000  # implementation-defined server error: the response was blocked by a plugin
INTERNAL = -32603
# List method -> (result key, the call method whose params.name names one of its items).
LISTS = {"tools/list": ("tools", "tools/call"), "prompts/list": ("prompts", "prompts/get"),
         "middleware/list": ("middleware", "middleware/invoke"),
         "augmentation/list": ("augmentations", "augmentation/augment")}
CALLS = {call: key for key, call in LISTS.values()}
MAX_PAGES = 50
EOF_GRACE = 5.0  # seconds in-flight requests may still finish after the client closed its side


# ------------------------------------------------------------------------------------------ SDK compatibility

def to_dict(item: SessionMessage) -> dict:
    message = item.message
    message = getattr(message, "root", message)  # 1.x wraps the union in a RootModel; 2.x does not
    return message.model_dump(by_alias=True, mode="json", exclude_unset=True)


def to_message(data: dict) -> SessionMessage:
    adapter = getattr(types, "jsonrpc_message_adapter", None)  # 2.x
    if adapter is not None:
        return SessionMessage(adapter.validate_python(data))
    return SessionMessage(types.JSONRPCMessage.model_validate(data))


def error(rid, code: int, message: str, data: Any = None) -> dict:
    err: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    return {"jsonrpc": "2.0", "id": rid, "error": err}


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
            data = json.load(handle)
    upstreams = []
    for name, spec in (data.get("upstreams") or {}).items():
        if SEPARATOR in name:
            raise ValueError(f"upstream name {name!r} must not contain {SEPARATOR!r}")
        if name.endswith("_"):
            # "a_" + "__" + "tool" is "a___tool", which is also "a" + "__" + "_tool": the prefixes of two
            # upstreams could name the same tool, and routing (split at the first "__") would pick "a".
            clash = f" (it collides with upstream {name.rstrip('_')!r})" if name.rstrip("_") in data["upstreams"] else ""
            raise ValueError(f"upstream name {name!r} must not end with '_': its prefix {name}{SEPARATOR} "
                             f"is ambiguous{clash}; rename it")
        # $VARS expand, so a config can name an upstream the environment provides ($MCPX_UPSTREAM_COMMAND).
        if spec.get("url"):
            upstreams.append(UpstreamConfig(name, url=os.path.expandvars(spec["url"])))
        elif spec.get("command"):
            argv = shlex.split(os.path.expandvars(spec["command"])) + [str(a) for a in spec.get("args") or ()]
            upstreams.append(UpstreamConfig(name, command=argv, env=spec.get("env")))
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


async def open_upstream(stack: AsyncExitStack, cfg: UpstreamConfig):
    """The (read, write) streams of one upstream, through the SDK's client transports."""
    if cfg.url:
        from mcp.client import streamable_http

        connect = getattr(streamable_http, "streamable_http_client", None) or streamable_http.streamablehttp_client
        streams = await stack.enter_async_context(connect(cfg.url))
        return streams[0], streams[1]  # 1.x also yields a session-id getter
    from mcp.client.stdio import StdioServerParameters, get_default_environment, stdio_client

    # A minimal environment (the SDK's default: HOME, PATH, USER and the like) plus the upstream's own
    # configured `env`: the gateway's secrets (API keys in its environment) are not every server's business.
    env = {**get_default_environment(), **(cfg.env or {})}
    params = StdioServerParameters(command=cfg.command[0], args=cfg.command[1:], env=env)
    return await stack.enter_async_context(stdio_client(params))


# ------------------------------------------------------------------------------------------ links

Callback = Callable[[dict], Awaitable[None]]


class Link:
    """One side of the proxy (the client, or an upstream): sends with its own ids, maps responses back."""

    def __init__(self, name: str, read, write):
        self.name, self.read, self.write = name, read, write
        self.ids = itertools.count(1)
        self.waiting: dict[Any, Callback] = {}
        self.dead: str | None = None
        self.lock = anyio.Lock()

    async def send(self, message: dict) -> None:
        if self.dead:
            return
        try:
            async with self.lock:
                await self.write.send(to_message(message))
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
        self.unanswered: set = set()  # client request ids not answered yet

    async def run(self) -> None:
        async with anyio.create_task_group() as tg:
            for link in self.upstreams.values():
                tg.start_soon(self.pump_upstream, link)
            await self.pump_client(tg)
            # The client is gone (stdin EOF, DELETE): answers already asked for still go out, briefly.
            with anyio.move_on_after(EOF_GRACE):
                while self.unanswered:
                    await anyio.sleep(0.01)
            tg.cancel_scope.cancel()

    # -- client -> upstreams ------------------------------------------------------------------
    async def pump_client(self, tg) -> None:
        async for item in self.client.read:
            if isinstance(item, Exception):
                log.warning("unreadable message from the client: %s", item)
                continue
            message = to_dict(item)
            if "method" in message and "id" in message:
                self.unanswered.add(message["id"])
                tg.start_soon(self.on_client_request, message)
            elif "method" in message:
                await self.on_client_notification(message)
            else:  # a response to a request an upstream sent through us
                await self.client.resolve(message)

    async def on_client_request(self, request: dict) -> None:
        method, params = request["method"], request.get("params")
        if self.pipeline is not None:
            # Request gates (the tool allowlist) decide before anything is forwarded: a refused call
            # never runs upstream. The refusal is the proxy's own answer, not a response to pipeline.
            refusal = self.pipeline.check_request(request)
            if refusal is not None:
                self.unanswered.discard(request["id"])
                return await self.client.send(error(request["id"], BLOCKED, f"blocked by the gateway: {refusal}",
                                                    {"reason": refusal}))
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
        if message["method"] == "notifications/cancelled":
            params = message.get("params") or {}
            target = self.in_flight.get(params.get("requestId"))
            if target is not None:
                link, upstream_id = target
                await link.send({**message, "params": {**params, "requestId": upstream_id}})
            return
        for link in self.upstreams.values():
            await link.send(message)

    # -- upstreams -> client ------------------------------------------------------------------
    async def pump_upstream(self, link: Link) -> None:
        try:
            async for item in link.read:
                if isinstance(item, Exception):
                    log.warning("unreadable message from %s: %s", link.name, item)
                    continue
                message = to_dict(item)
                if "method" in message and "id" in message:
                    await self.on_upstream_request(link, message)
                elif "method" in message:
                    await self.client.send(self.outgoing(message))
                else:
                    await link.resolve(message)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
            pass
        await link.die(f"upstream {link.name!r} closed the connection")

    async def on_upstream_request(self, link: Link, message: dict) -> None:
        rid = message["id"]

        async def back(response: dict) -> None:
            await link.send({**response, "id": rid})

        await self.client.request(self.outgoing({k: v for k, v in message.items() if k != "id"}), back)

    def outgoing(self, message: dict) -> dict:
        """A notification or request an upstream sends the client, after the plugins that rewrite those
        (redaction covers log messages, progress, sampling and elicitation, not only results)."""
        return message if self.pipeline is None else self.pipeline.process_message(message)

    async def answer(self, request: dict, response: dict) -> None:
        self.unanswered.discard(request["id"])
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


async def serve_session(client_read, client_write, config: Config, pipeline=None) -> None:
    """Proxy one downstream session until the client goes away."""
    async with AsyncExitStack() as stack:
        links = {}
        for cfg in config.upstreams:
            read, write = await open_upstream(stack, cfg)
            links[cfg.name] = Link(f"upstream {cfg.name!r}", read, write)
        proxy = Proxy(Link("the client", client_read, client_write), links, pipeline)
        await proxy.run()


def make_pipeline(config: Config):
    """The response pipeline, or None with no plugins (nothing to run: a pure pass-through)."""
    if not config.plugins:
        return None
    from .pipeline import build_pipeline

    return build_pipeline(config.plugins)


# ------------------------------------------------------------------------------------------ transports

async def serve_stdio(config: Config) -> None:
    from mcp.server.stdio import stdio_server

    pipeline = make_pipeline(config)
    async with stdio_server() as (read, write):
        await serve_session(read, write, config, pipeline)
        # The SDK's stdout writer runs until its stream is closed: without this, stdin EOF ends the
        # session but never the process.
        await write.aclose()


MAX_BODY_BYTES = 4 * 1024 * 1024  # a POST body larger than this gets 413 before it is parsed
IDLE_TIMEOUT = 600.0  # seconds without a request after which a session and its upstreams end
LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")


def loopback_security(host: str, port: int):
    """DNS-rebinding protection for a loopback bind (the MCP Streamable HTTP transport's security warning):
    Host must name the loopback address and port, and an Origin, when sent, must be a loopback origin.
    None for other binds: whoever binds a public address chooses the hosts it answers to."""
    if host not in LOOPBACK:
        return None
    from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings

    names = ("127.0.0.1", "localhost", "[::1]")
    return TransportSecurityMiddleware(TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{name}:{port}" for name in names],
        allowed_origins=[f"{scheme}://{name}:{port}" for scheme in ("http", "https") for name in names]))


class BodyTooLarge(Exception):
    pass


async def buffered_body(receive, limit: int):
    """The request body read whole (refusing more than `limit` bytes) and a `receive` that replays it."""
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge
        chunks.append(chunk)
        if not message.get("more_body"):
            break
    body, sent = b"".join(chunks), False

    async def replay():
        nonlocal sent
        if sent:
            return await receive()  # disconnect, when it comes
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay


@dataclass
class HttpSession:
    transport: Any
    cancel: Any = None  # the session task's CancelScope
    last_seen: float = 0.0
    active: int = 0  # requests being handled (a long tool call or an open GET stream is not idleness)


class HttpFront:
    """Streamable HTTP downstream: one SDK server transport per session, each with its own upstreams.
    Host/Origin are checked (loopback binds) and bodies capped before a session or upstream exists; a
    session ends, and its upstreams with it, on DELETE or after `idle_timeout` seconds without a request."""

    def __init__(self, config: Config, tg, *, security=None, max_body: int = MAX_BODY_BYTES,
                 idle_timeout: float = IDLE_TIMEOUT):
        self.config, self.tg = config, tg
        self.pipeline = make_pipeline(config)
        self.sessions: dict[str, HttpSession] = {}
        self.security, self.max_body, self.idle_timeout = security, max_body, idle_timeout

    async def __call__(self, scope, receive, send) -> None:
        from starlette.requests import Request
        from starlette.responses import Response

        if scope["type"] != "http":
            return
        if scope["path"].rstrip("/") != "/mcp":
            return await Response("not found", status_code=404)(scope, receive, send)
        if self.security is not None:
            refusal = await self.security.validate_request(Request(scope), is_post=False)
            if refusal is not None:
                return await refusal(scope, receive, send)
        headers = {k.decode().lower(): v.decode() for k, v in scope.get("headers") or ()}
        if scope.get("method") == "POST":
            try:
                if int(headers.get("content-length") or 0) > self.max_body:
                    raise BodyTooLarge
                receive = await buffered_body(receive, self.max_body)
            except (BodyTooLarge, ValueError):
                return await Response(f"request body larger than {self.max_body} bytes",
                                      status_code=413)(scope, receive, send)
        sid = headers.get("mcp-session-id")
        if sid:
            session = self.sessions.get(sid)
            if session is None:
                return await Response("session not found", status_code=404)(scope, receive, send)
            session.last_seen, session.active = anyio.current_time(), session.active + 1
            try:
                return await session.transport.handle_request(scope, receive, send)
            finally:
                session.last_seen, session.active = anyio.current_time(), session.active - 1
        if scope.get("method") != "POST":
            return await Response("a session starts with a POST of initialize", status_code=400)(scope, receive, send)
        from mcp.server.streamable_http import StreamableHTTPServerTransport

        sid = uuid.uuid4().hex
        session = HttpSession(StreamableHTTPServerTransport(mcp_session_id=sid), last_seen=anyio.current_time())
        self.sessions[sid] = session
        session.cancel = await self.tg.start(self.run_session, sid, session.transport)
        status = {}

        async def watch(message) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await send(message)

        await session.transport.handle_request(scope, receive, watch)
        if status.get("code", 500) >= 400:
            # The opening request was refused (not an initialize): no session, and no upstreams kept for it.
            self.end(sid)

    def end(self, sid: str) -> None:
        session = self.sessions.pop(sid, None)
        if session is not None and session.cancel is not None:
            session.cancel.cancel()

    async def reap_idle(self) -> None:
        """End sessions nobody has sent a request to for `idle_timeout` seconds (an abandoned client
        never sends DELETE; its upstream processes would run until the gateway stops)."""
        while True:
            await anyio.sleep(min(1.0, self.idle_timeout / 4))
            now = anyio.current_time()
            for sid, session in list(self.sessions.items()):
                if not session.active and now - session.last_seen > self.idle_timeout:
                    log.warning("session %s idle for %.0f s: ended", sid, now - session.last_seen)
                    self.end(sid)

    async def run_session(self, sid: str, transport, *, task_status=anyio.TASK_STATUS_IGNORED) -> None:
        with anyio.CancelScope() as cancel:
            try:
                async with transport.connect() as (read, write):
                    task_status.started(cancel)
                    await serve_session(read, write, self.config, self.pipeline)
            except Exception:
                log.exception("session %s ended with an error", sid)
            finally:
                # A DELETE (the SDK transport terminates, the client stream ends) or a cancel: either way
                # the session's upstreams have been closed by serve_session's exit stack; forget it.
                self.sessions.pop(sid, None)


async def serve_http(config: Config, port: int, host: str = "127.0.0.1", *, max_body: int = MAX_BODY_BYTES,
                     idle_timeout: float = IDLE_TIMEOUT) -> None:
    import uvicorn

    make_pipeline(config)  # a bad plugin config fails at start, not at the first session
    async with anyio.create_task_group() as tg:
        front = HttpFront(config, tg, security=loopback_security(host, port), max_body=max_body,
                          idle_timeout=idle_timeout)
        tg.start_soon(front.reap_idle)
        server = uvicorn.Server(uvicorn.Config(front, host=host, port=port, log_level="warning", lifespan="off"))
        print(f"reference gateway on http://{host}:{port}/mcp", file=sys.stderr, flush=True)
        await server.serve()
        tg.cancel_scope.cancel()
