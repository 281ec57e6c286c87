"""mcp 2.x adapter (tested on 2.0.0 and the newest 2.x): a `Server.middleware` entry.

2.x re-validates results against typed models, dropping unknown fields, and
answers methods it does not know with -32601. The SDK's provisional
middleware hook sees every request before lookup and the wire result dict
after the SDK's own filtering, so one middleware serves the extension methods
(short-circuiting the chain) and puts capabilities and Tool fields back.
Tools are served by ordinary `on_list_tools` / `on_call_tool` handlers.
"""

from __future__ import annotations

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from ..core import EXTENSION_METHODS, App, JsonRpcError
from . import HostGuard, widen_stdio_pipes

try:
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS as MODERN_VERSIONS
except ImportError:  # 2.0.0 predates the module
    MODERN_VERSIONS = ("2026-07-28",)


class RawNotification:
    """An extension notification for ServerSession.send_notification, which reads only model_dump()."""

    def __init__(self, method: str, params: dict | None):
        self.method, self.params = method, params

    def model_dump(self, **_) -> dict:
        return {"method": self.method, **({"params": self.params} if self.params is not None else {})}


class ExtensionMiddleware:
    def __init__(self, app: App):
        self.app = app

    async def __call__(self, ctx, call_next):
        if ctx.method in EXTENSION_METHODS:
            async def notify(method: str, params: dict | None) -> None:
                # Related to the request (its stream over Streamable HTTP). The SDK's typed notifications do not
                # know the extension's method; send_notification only needs what model_dump gives.
                await ctx.session.send_notification(RawNotification(method, params), related_request_id=ctx.request_id)

            try:
                return await self.app.handle_extension(ctx.method,
                                                       dict(ctx.params) if ctx.params is not None else None,
                                                       session_key(self.app, ctx), notify)
            except JsonRpcError as err:
                raise MCPError(code=err.code, message=err.message, data=err.data) from None
        result = await call_next(ctx)
        if hasattr(result, "model_dump"):
            result = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        if isinstance(result, dict):
            if ctx.method in ("initialize", "server/discover"):
                self.app.patch_capabilities(result)
            elif ctx.method == "tools/list":
                self.app.patch_tool_list(result)
        return result


def session_key(app: App, ctx):
    """One key per MCP session: ctx.session is per request in 2.x; its connection is per session.

    The session's state is freed when the connection's exit stack unwinds (DELETE, idle timeout, end of stdio).
    """
    connection = getattr(ctx.session, "connection", None) or getattr(ctx.session, "_connection", None)
    if connection is None or ctx.protocol_version in MODERN_VERSIONS:
        return "process"  # the stateless 2026-07-28 mode has no session: one counter for the process
    key = getattr(connection, "session_id", None) or id(connection)
    exit_stack = getattr(connection, "exit_stack", None)
    if key not in app.sessions and exit_stack is not None:
        app.session(key)
        exit_stack.callback(app.end_session, key)
    return key


def build_server(app: App) -> Server:
    async def on_list_tools(ctx, params):
        return types.ListToolsResult(tools=[types.Tool.model_validate(tool) for tool in app.tool_list()])

    async def on_call_tool(ctx, params):
        try:
            result = await app.call_tool(params.name, params.arguments, session_key(app, ctx))
        except JsonRpcError as err:  # an unknown tool: a protocol error, not an exception with code 0
            raise MCPError(code=err.code, message=err.message, data=err.data) from None
        return types.CallToolResult.model_validate(result)

    server = Server(app.name, version=app.version, on_list_tools=on_list_tools, on_call_tool=on_call_tool)
    server.middleware.append(ExtensionMiddleware(app))
    return server


def run_stdio(app: App) -> None:
    from mcp.server.stdio import stdio_server

    widen_stdio_pipes()

    server = build_server(app)

    async def main():
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(main)


def run_http(app: App, host: str, port: int, guard: HostGuard) -> None:
    from ..httpguard import fast_sse_lines

    fast_sse_lines()  # a large answer is not split at line breaks it does not have, on the event loop
    import inspect

    import uvicorn

    from ..httpguard import MAX_CONNECTIONS, GuardedHttp
    from .events import resumability

    server = build_server(app)
    starlette = server.streamable_http_app(host=host, transport_security=guard.settings(),
                                           **resumability(inspect.signature(server.streamable_http_app).parameters))
    # Bodies judged on their bytes before the SDK parses them (reference_servers/httpguard.py).
    # limit_concurrency: past MAX_CONNECTIONS requests at once (SSE streams count), uvicorn answers 503, so the
    # request bodies the transport holds stay within MAX_CONNECTIONS x the SDK's body cap.
    uvicorn.run(GuardedHttp(starlette, max_values=app.limits.max_json_values), host=host, port=port,
                log_level="warning", limit_concurrency=MAX_CONNECTIONS)
