"""Reference MCP gateway: a proxy between clients and upstream servers, with an ADR-009 plugin pipeline."""
