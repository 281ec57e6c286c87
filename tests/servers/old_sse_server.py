"""A server on the HTTP+SSE transport of MCP 2024-11-05, the one Streamable HTTP replaced, made with the `mcp`
SDK's own `sse_app` (its `SseServerTransport`): GET /sse opens the event stream whose first event names the
path to POST messages to; POST /sse itself is 405.

    python tests/servers/old_sse_server.py --port PORT [--mount /mcp]

With `--mount PATH` the same app is mounted under PATH (Starlette answers PATH without its trailing slash
with a 307 to PATH/), which is how a URL missing or adding a slash meets a redirect.
"""

from __future__ import annotations

import argparse

import uvicorn
from mcp.server.mcpserver import MCPServer
from starlette.applications import Starlette
from starlette.routing import Mount


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--mount", help="serve the app under this path")
    args = parser.parse_args()
    server = MCPServer("old-sse-weather")

    @server.tool()
    def forecast(city: str) -> str:
        """Tomorrow's weather."""
        return f"sunny in {city}"

    app = server.sse_app(host="127.0.0.1")
    if args.mount:
        app = Starlette(routes=[Mount(args.mount, app=app)])
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
