"""A server on the official Python `mcp` SDK, written as its low-level server docs teach.

    python ecosystem/python/naive_server.py

Tools are the SDK's `Tool` model with the extension fields passed as keyword
arguments (`preprocessor=True`, `execution={"requirements": [...]}`) and a
`_meta` beside them; the two capabilities go where the SDK takes
non-standard ones (`experimental_capabilities`), the interceptors extension
in its SEP-2133 `extensions` argument (2.x; 1.x has none, so it goes with the
experimental ones); no handler is written for
`middleware/list` or `augmentation/list`, since the SDK documents none. What
reaches the wire is up to the installed release (ecosystem/probe.py).
"""

from __future__ import annotations

import inspect
from importlib.metadata import version

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

OBJ = {"type": "object", "properties": {}}
EXPERIMENTAL = {"contextMiddleware": {}, "augmentation": {}}
EXTENSIONS = {"io.modelcontextprotocol/interceptors": {"supportedEvents": ["tools/call"]}}


def tools() -> list[types.Tool]:
    return [
        types.Tool(name="conformance_memories", description="preprocessor fixture", inputSchema=OBJ,
                   preprocessor=True, _meta={"conformance/probe": "memories"}),
        types.Tool(name="conformance_gated_ok", description="execution-requirements fixture", inputSchema=OBJ,
                   execution={"taskSupport": "forbidden", "requirements": ["conformance:satisfied"]},
                   _meta={"conformance/probe": "gated"}),
    ]


def build() -> Server:
    if int(version("mcp").split(".")[0]) >= 2:
        async def on_list_tools(ctx, params):
            return types.ListToolsResult(tools=tools())

        return Server("naive-python", on_list_tools=on_list_tools)
    server = Server("naive-python")

    @server.list_tools()
    async def list_tools():
        return tools()

    return server


async def main() -> None:
    server = build()
    async with stdio_server() as (read_stream, write_stream):
        if "extensions" in inspect.signature(server.create_initialization_options).parameters:
            options = server.create_initialization_options(experimental_capabilities=EXPERIMENTAL,
                                                           extensions=EXTENSIONS)
        else:
            options = server.create_initialization_options(experimental_capabilities={**EXPERIMENTAL, **EXTENSIONS})
        await server.run(read_stream, write_stream, options)


if __name__ == "__main__":
    anyio.run(main)
