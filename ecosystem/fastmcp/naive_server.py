"""A server on the standalone `fastmcp` package, written as its docs teach.

    python ecosystem/fastmcp/naive_server.py naive|subclass

naive: `@mcp.tool(meta=...)` decorated functions (the decorator has no place
for `preprocessor` or `execution.requirements`, so only `_meta` is given) and
`experimental_capabilities` for the two capabilities and the interceptors
extension (FastMCP takes no SEP-2133 `extensions` map).
subclass: the best a FastMCP user can do without leaving its API: a
`FunctionTool` subclass whose `to_mcp_tool` rebuilds the SDK Tool it returns
with the extension fields added. FastMCP documents no way to serve custom methods, so
neither variant answers `middleware/list` or `augmentation/list`.
"""

from __future__ import annotations

import sys

from fastmcp import FastMCP
from fastmcp.tools import FunctionTool

EXTRA = {"conformance_memories": {"preprocessor": True},
         "conformance_gated_ok": {"execution": {"taskSupport": "forbidden",
                                                "requirements": ["conformance:satisfied"]}}}
EXPERIMENTAL = {"contextMiddleware": {}, "augmentation": {},
                "io.modelcontextprotocol/interceptors": {"supportedEvents": ["tools/call"]}}


def conformance_memories(query: str) -> str:
    """preprocessor fixture"""
    return f"memories for: {query}"


def conformance_gated_ok() -> str:
    """execution-requirements fixture"""
    return "ran"


class ExtensionTool(FunctionTool):
    def to_mcp_tool(self, **overrides):
        # Overrides only reach fields the SDK's Tool declares, so rebuild it from its JSON with ours added.
        tool = super().to_mcp_tool(**overrides)
        return type(tool).model_validate({**tool.model_dump(by_alias=True, exclude_none=True),
                                          **EXTRA.get(self.name, {})})


def build(variant: str) -> FastMCP:
    mcp = FastMCP("naive-fastmcp", experimental_capabilities=EXPERIMENTAL)
    for fn in (conformance_memories, conformance_gated_ok):
        meta = {"conformance/probe": fn.__name__}
        if variant == "subclass":
            mcp.add_tool(ExtensionTool.from_function(fn, meta=meta))
        else:
            mcp.tool(meta=meta)(fn)
    return mcp


if __name__ == "__main__":
    build(sys.argv[1] if len(sys.argv) > 1 else "naive").run(show_banner=False)
