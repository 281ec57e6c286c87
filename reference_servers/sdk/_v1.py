"""mcp 1.x adapter (tested on 1.9.4 to 1.30): a layer on the message streams, under the session.

`ExtensionServer.run` is what both stdio and the Streamable HTTP session
manager call for each connection, so wrapping its two streams there covers both
transports. Incoming requests for the extension methods are answered directly;
every other message goes to the SDK. Outgoing responses to `initialize` and
`tools/list` get the extension capabilities and Tool fields merged in (1.x
would keep extra Tool fields, but merging makes the wire exact regardless).
"""

from __future__ import annotations

import contextlib
import contextvars

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.shared.message import ServerMessageMetadata, SessionMessage

from ..core import EXTENSION_METHODS, INVALID_PARAMS, App, JsonRpcError
from . import HostGuard, widen_stdio_pipes

PATCHED = ("initialize", "tools/list")
# The key of the session a handler runs for: set by `run` (one call per session, stdio or HTTP), inherited by the
# tasks the SDK starts for its requests, and freed when `run` returns.
SESSION_KEY: contextvars.ContextVar = contextvars.ContextVar("mcp_ext_session")


class ExtensionServer(Server):
    def __init__(self, app: App):
        super().__init__(app.name)
        self.ext_app = app

        @self.list_tools()
        async def list_tools() -> list[types.Tool]:
            return [types.Tool(**tool) for tool in app.tool_list()]

        @self.call_tool()
        async def call_tool(name: str, arguments: dict):
            result = await app.call_tool(name, arguments, SESSION_KEY.get())
            content = [types.TextContent(**block) if block.get("type") == "text" else block
                       for block in result.get("content", [])]
            if result.get("isError"):
                # 1.x turns an exception in a tool handler into a result with isError: true.
                raise ToolError(" ".join(b.text for b in content if isinstance(b, types.TextContent)))
            return content

    async def run(self, read_stream, write_stream, initialization_options, *args, **kwargs):
        app = self.ext_app
        initialization_options.capabilities = types.ServerCapabilities(
            **initialization_options.capabilities.model_dump(exclude_none=True), **app.capabilities())
        to_sdk_send, to_sdk_recv = anyio.create_memory_object_stream(32)
        from_sdk_send, from_sdk_recv = anyio.create_memory_object_stream(32)
        pending: dict = {}  # request id -> method, for responses we patch
        key = object()
        SESSION_KEY.set(key)

        # A transport may close its streams under us when a session ends (1.9.x does, on
        # DELETE): a closed stream ends the pump quietly instead of failing the whole
        # session manager.
        closed = (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream)

        async def inbound():
            async with to_sdk_send:
                with contextlib.suppress(*closed):
                    async for item in read_stream:
                        message = getattr(getattr(item, "message", None), "root", None)
                        if isinstance(message, types.JSONRPCRequest) and message.method in EXTENSION_METHODS:
                            tg.start_soon(self._answer, message, write_stream)  # a slow call holds up nothing else
                            continue
                        if isinstance(message, types.JSONRPCRequest) and message.method == "tools/call" \
                                and (message.params or {}).get("name") not in app.tools:
                            # 1.x would turn the unknown tool into a result with isError; MCP says -32602.
                            tg.start_soon(self._reply, message.id, write_stream, JsonRpcError(
                                INVALID_PARAMS, f"Unknown tool: {(message.params or {}).get('name')}"))
                            continue
                        if isinstance(message, types.JSONRPCRequest) and message.method == "tools/call" \
                                and getattr(app.tools.get((message.params or {}).get("name")), "guard", None):
                            # A guarded tool's denied chain is a JSON-RPC error, which 1.x would make a result.
                            tg.start_soon(self._call_guarded, message, write_stream)
                            continue
                        if isinstance(message, types.JSONRPCRequest) and message.method in PATCHED:
                            pending[message.id] = message.method
                        await to_sdk_send.send(item)

        async def outbound():
            async with from_sdk_recv:
                with contextlib.suppress(*closed):
                    async for item in from_sdk_recv:
                        message = getattr(getattr(item, "message", None), "root", None)
                        if isinstance(message, types.JSONRPCResponse) and message.id in pending:
                            if pending.pop(message.id) == "initialize":
                                app.patch_capabilities(message.result)
                            else:
                                app.patch_tool_list(message.result)
                        await write_stream.send(item)

        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(inbound)
                tg.start_soon(outbound)
                async with from_sdk_send:
                    await super().run(to_sdk_recv, from_sdk_send, initialization_options, *args, **kwargs)
                tg.cancel_scope.cancel()
        finally:
            app.end_session(key)

    async def _answer(self, request: types.JSONRPCRequest, write_stream) -> None:
        async def notify(method: str, params: dict | None) -> None:
            # Related to the request, so Streamable HTTP sends it on that request's stream, before the response.
            note = types.JSONRPCNotification(jsonrpc="2.0", method=method, params=params)
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                await write_stream.send(SessionMessage(types.JSONRPCMessage(note),
                                                       metadata=ServerMessageMetadata(related_request_id=request.id)))

        try:
            result = await self.ext_app.handle_extension(request.method, request.params, SESSION_KEY.get(), notify)
        except JsonRpcError as err:
            result = err
        await self._reply(request.id, write_stream, result)

    async def _call_guarded(self, request: types.JSONRPCRequest, write_stream) -> None:
        params = request.params or {}
        try:
            result: dict | JsonRpcError = await self.ext_app.call_tool(params.get("name"), params.get("arguments"),
                                                                       SESSION_KEY.get())
        except JsonRpcError as err:
            result = err
        await self._reply(request.id, write_stream, result)

    @staticmethod
    async def _reply(request_id, write_stream, result: dict | JsonRpcError) -> None:
        if isinstance(result, JsonRpcError):
            reply = types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(
                code=result.code, message=result.message, data=result.data))
        else:
            reply = types.JSONRPCResponse(jsonrpc="2.0", id=request_id, result=result)
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            await write_stream.send(SessionMessage(types.JSONRPCMessage(reply)))


class ToolError(Exception):
    pass


def run_stdio(app: App) -> None:
    from mcp.server.stdio import stdio_server

    widen_stdio_pipes()

    server = ExtensionServer(app)

    async def main():
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(main)


def run_http(app: App, host: str, port: int, guard: HostGuard) -> None:
    from ..httpguard import fast_sse_lines

    fast_sse_lines()  # a large answer is not split at line breaks it does not have, on the event loop
    import contextlib
    import inspect

    import uvicorn
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from starlette.applications import Starlette
    from starlette.routing import Route

    from .events import resumability

    manager = StreamableHTTPSessionManager(app=ExtensionServer(app), json_response=False, stateless=False,
                                           security_settings=guard.settings(),
                                           **resumability(inspect.signature(StreamableHTTPSessionManager).parameters))

    class Endpoint:  # a raw ASGI endpoint, so /mcp is served without a redirect to /mcp/
        async def __call__(self, scope, receive, send):
            await manager.handle_request(scope, receive, send)

    @contextlib.asynccontextmanager
    async def lifespan(_):
        async with manager.run():
            yield

    starlette = Starlette(routes=[Route("/mcp", endpoint=Endpoint(), methods=["GET", "POST", "DELETE"])],
                          lifespan=lifespan)
    from ..httpguard import MAX_CONNECTIONS, GuardedHttp

    # Bodies judged on their bytes before the SDK parses them (reference_servers/httpguard.py).
    # limit_concurrency: past MAX_CONNECTIONS requests at once (SSE streams count), uvicorn answers 503, so the
    # request bodies the transport holds stay within MAX_CONNECTIONS x the SDK's body cap.
    uvicorn.run(GuardedHttp(starlette, max_values=app.limits.max_json_values), host=host, port=port,
                log_level="warning", limit_concurrency=MAX_CONNECTIONS)
