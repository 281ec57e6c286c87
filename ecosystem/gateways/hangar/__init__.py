"""mcp-hangar 2.34: its interceptor routes on an MCP connection (bridge.py) and behind the working group's
adapter contract (wg_adapter.py)."""
