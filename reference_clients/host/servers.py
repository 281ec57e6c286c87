"""MCP connections through the official `mcp` SDK client, on 1.x and 2.x alike.

The typed helpers cannot be used for what this host needs: on 2.x
`ClientSession.initialize()` and `list_tools()` drop unknown fields (the
`contextMiddleware`/`augmentation` capabilities, `preprocessor`,
`execution.requirements`), and neither release has helpers for
`middleware/invoke` or `augmentation/augment`. So every request goes through
`ClientSession.send_request` with a free request model and a result model that
keeps every field (the 2.x typed API drops unknown Tool fields; docs/reference-implementations.md, "Reference host").

Each server lives in its own task that holds the transport and the session open
until the host stops: the SDK's transports are anyio contexts, which must be
entered and left in the same task, and separate tasks let the servers start in
parallel and fail alone.
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import AsyncExitStack
from typing import Any

from mcp import types
from mcp.client.session import ClientSession
from pydantic import BaseModel, ConfigDict

from .logic import ServerError

log = logging.getLogger("reference_host")

try:  # built in from Python 3.11; anyio brings the backport before that
    _Group: Any = BaseExceptionGroup
except NameError:  # pragma: no cover - Python 3.10
    from exceptiongroup import BaseExceptionGroup as _Group

try:  # 2.x: the handshake versions live beside the session
    from mcp.client.session import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION
except ImportError:  # 1.x
    from mcp.shared.version import SUPPORTED_PROTOCOL_VERSIONS as HANDSHAKE_PROTOCOL_VERSIONS
    from mcp.types import LATEST_PROTOCOL_VERSION as LATEST_HANDSHAKE_VERSION

CLIENT_INFO = {"name": "mcp-ext-reference-host", "version": "0.1.0"}


class FreeRequest(types.Request[dict[str, Any] | None, str]):
    """Any method with any params: how custom methods go through `send_request`."""


class RawResult(BaseModel):
    """A result with every field kept, extension fields included."""

    model_config = ConfigDict(extra="allow")


class Server:
    """One configured MCP server: its session, capabilities and raw tool list once ready."""

    def __init__(self, name: str, spec: dict, timeout: float) -> None:
        self.name = name
        self.spec = spec
        self.timeout = timeout
        self.session: ClientSession | None = None
        self.capabilities: dict = {}
        self.tools: list[dict] = []
        self.ready = asyncio.Event()
        self.failed: str | None = None
        self._stop = asyncio.Event()
        self._task: asyncio.Task | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"mcp-server-{self.name}")

    async def stop(self, grace: float) -> None:
        self._stop.set()
        if self._task is None:
            return
        try:
            await asyncio.wait_for(asyncio.shield(self._task), grace)
        except asyncio.TimeoutError:
            log.warning("server %s did not close within %.1fs; cancelling", self.name, grace)
            self._task.cancel()
            try:
                await asyncio.wait_for(self._task, 1.0)
            except BaseException:  # noqa: BLE001 - best effort at shutdown
                pass
        except Exception:  # noqa: BLE001 - already logged by _run
            pass

    async def _run(self) -> None:
        try:
            async with AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(self._transport())
                self.session = await stack.enter_async_context(ClientSession(read, write))
                await asyncio.wait_for(self._handshake(), self.timeout)
                self.tools = await self._list_tools()
                log.info("server %s ready: %d tool(s), capabilities %s",
                         self.name, len(self.tools), sorted(self.capabilities))
                self.ready.set()
                await self._stop.wait()
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # noqa: BLE001 - a broken server must not take the host down
            self.failed = _describe(exc)
            log.error("server %s: %s", self.name, self.failed)
        finally:
            self.session = None  # closed now: later requests fail fast instead of hanging
            self.ready.set()

    def _transport(self) -> Any:
        spec = self.spec
        if isinstance(spec.get("url"), str):
            from mcp.client import streamable_http

            connect = getattr(streamable_http, "streamable_http_client", None) \
                or streamable_http.streamablehttp_client
            return _two_streams(connect(spec["url"]))
        if isinstance(spec.get("command"), str):
            from mcp.client.stdio import StdioServerParameters, stdio_client

            env = server_environment(spec.get("env"))
            params = StdioServerParameters(command=spec["command"], args=[str(a) for a in spec.get("args") or ()],
                                           env=env)
            return stdio_client(params)
        raise ValueError("needs either `command` (stdio) or `url` (Streamable HTTP)")

    async def _handshake(self) -> None:
        # By hand rather than `initialize()`, to read the capabilities raw (2.x drops unknown ones).
        assert self.session is not None
        params = {"protocolVersion": LATEST_HANDSHAKE_VERSION, "capabilities": {}, "clientInfo": CLIENT_INFO}
        result = await self.session.send_request(FreeRequest(method="initialize", params=params), RawResult)
        raw = result.model_dump(mode="json", by_alias=True)
        version = raw.get("protocolVersion")
        if version not in HANDSHAKE_PROTOCOL_VERSIONS:
            log.warning("server %s answered protocol version %r; carrying on", self.name, version)
        if hasattr(self.session, "adopt"):  # 2.x keeps the negotiated version for later requests
            self.session.adopt(types.InitializeResult.model_validate(raw))
        caps = raw.get("capabilities")
        self.capabilities = caps if isinstance(caps, dict) else {}
        await self._notify_initialized()

    async def _notify_initialized(self) -> None:
        assert self.session is not None
        note = types.InitializedNotification(method="notifications/initialized")
        if hasattr(types, "ClientNotification") and hasattr(types.ClientNotification, "root"):
            note = types.ClientNotification(note)  # 1.x wraps notifications in a root model
        await self.session.send_notification(note)

    async def _list_tools(self) -> list[dict]:
        tools: list[dict] = []
        cursor = None
        for _ in range(100):  # a server that pages forever must not hang start-up
            result = await self.request("tools/list", {"cursor": cursor} if cursor else None)
            page = result.get("tools")
            tools.extend(t for t in page or () if isinstance(t, dict))
            cursor = result.get("nextCursor")
            if not cursor:
                break
        return tools

    async def request(self, method: str, params: dict | None, timeout: float | None = None) -> dict:
        """One raw request; ServerError on a JSON-RPC error, a timeout or a lost connection."""
        if self.session is None or self.failed:
            raise ServerError(f"server {self.name} is not connected" + (f" ({self.failed})" if self.failed else ""))
        try:
            result = await asyncio.wait_for(
                self.session.send_request(FreeRequest(method=method, params=params), RawResult),
                timeout or self.timeout)
        except asyncio.TimeoutError:
            raise ServerError(f"{method} on {self.name} timed out after {timeout or self.timeout:g}s") from None
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - McpError/MCPError, validation, closed streams
            raise ServerError(f"{method} on {self.name} failed: {_describe(exc)}") from None
        return result.model_dump(mode="json", by_alias=True)


def server_environment(configured: Any) -> dict[str, str]:
    """What a stdio server is started with: the SDK's minimal environment plus its configured `env`.

    Never the host's own environment: it holds the model's API key and whatever else the
    host was given, which no server needs (docs/reference-implementations.md, "Security notes: reference host").
    """
    from mcp.client.stdio import get_default_environment

    env = get_default_environment()
    if isinstance(configured, dict):
        env.update({str(k): str(v) for k, v in configured.items()})
    return env


class _two_streams:
    """Wraps 1.x `streamablehttp_client` (three values) and 2.x `streamable_http_client` (two) alike."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    async def __aenter__(self) -> tuple[Any, Any]:
        streams = await self._inner.__aenter__()
        return streams[0], streams[1]

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._inner.__aexit__(*exc)


def _describe(exc: BaseException) -> str:
    """A one-line description, unwrapping the exception groups anyio raises."""
    while isinstance(exc, _Group) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    if isinstance(exc, _Group):
        return "; ".join(_describe(e) for e in exc.exceptions)
    error = getattr(exc, "error", None)  # McpError / MCPError carry the JSON-RPC error
    if error is not None and getattr(error, "message", None) is not None:
        return f"JSON-RPC error {getattr(error, 'code', '?')}: {error.message}"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
