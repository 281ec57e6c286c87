"""mcp-ext-conformance: a conformance suite for MCP context extensions."""

__version__ = "0.1.0"
