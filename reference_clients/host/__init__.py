"""The reference host application (`python -m reference_clients.host`); see __main__.py for usage.

Modules: `logic` (the pure decisions of HARNESS.md §3), `servers` (MCP sessions over the
official SDK), `llm` (the official openai client), `host` (the turn loop).
"""
