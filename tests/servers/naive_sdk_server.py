"""A server written the naive way: plain `mcp` SDK usage, extension fields on Tool, no adapter.

    python tests/servers/naive_sdk_server.py

It declares the preprocessor and execution-requirements fixtures with their
extension fields straight on the SDK's Tool model and enforces requirements
in its call handler, as a developer would on first try. Whether the fields
reach the wire is then up to the SDK release: 1.x keeps them (Tool allows
extra fields), 2.x drops them (typed models). The SDK matrix (`nox -s matrix`)
runs the suite against it on each release to show exactly that.
"""

from __future__ import annotations

from importlib.metadata import version

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

SATISFIED = {"conformance:satisfied"}
GATED = {
    "conformance_gated_ok": ["conformance:satisfied"],
    "conformance_gated_unmet": ["conformance:unsatisfied"],
    "conformance_gated_mixed": ["conformance:satisfied", "conformance:unsatisfied"],
    "conformance_gated_case": ["Conformance:Satisfied"],
}
OBJ = {"type": "object", "properties": {}}
runs = 0

TOOLS = [
    {"name": "conformance_memories", "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}},
                                                     "required": ["query"]}, "preprocessor": True},
    {"name": "conformance_echo", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}},
                                                 "required": ["text"]}},
    *({"name": n, "inputSchema": OBJ, "execution": {"requirements": r}} for n, r in GATED.items()),
    {"name": "conformance_side_effects", "inputSchema": OBJ},
]


def call(name: str, arguments: dict) -> tuple[str, bool]:
    global runs
    if name == "conformance_memories":
        return f"memories for: {arguments.get('query', '')}", False
    if name == "conformance_echo":
        return str(arguments.get("text", "")), False
    if name == "conformance_side_effects":
        return str(runs), False
    unmet = [r for r in GATED[name] if r not in SATISFIED]
    if unmet:
        return f"unmet execution requirements: {', '.join(unmet)}", True
    runs += 1
    return "ran", False


def tools() -> list:
    return [types.Tool.model_validate(tool) for tool in TOOLS]


def build_v1() -> Server:
    server = Server("naive")

    @server.list_tools()
    async def list_tools():
        return tools()

    @server.call_tool()
    async def call_tool(name, arguments):
        text, error = call(name, arguments or {})
        if error:
            raise RuntimeError(text)
        return [types.TextContent(type="text", text=text)]

    return server


def build_v2() -> Server:
    async def on_list_tools(ctx, params):
        return types.ListToolsResult(tools=tools())

    async def on_call_tool(ctx, params):
        text, error = call(params.name, params.arguments or {})
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=error)

    return Server("naive", on_list_tools=on_list_tools, on_call_tool=on_call_tool)


async def main() -> None:
    server = build_v2() if int(version("mcp").split(".")[0]) >= 2 else build_v1()
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
