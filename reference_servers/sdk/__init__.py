"""SDK adapters: put an App on the wire with the installed `mcp` release.

One small module per major version, because the two majors need different
seams (measured in specs/UPSTREAM-NOTES.md):
- 1.x (`_v1`): Tool and ServerCapabilities keep extra fields, but the session
  validates incoming requests against a closed union, so unknown methods never
  reach a handler: the adapter sits on the message streams under the session.
- 2.x (`_v2`): typed models drop unknown fields after the handler returns, and
  unknown methods are answered -32601: the adapter is a `Server.middleware`
  entry that serves the extension methods and puts the fields back on results.

Each exposes `run_stdio(app)` and `run_http(app, host, port)`.
"""

from __future__ import annotations

from importlib.metadata import version


def sdk_major() -> int:
    return int(version("mcp").split(".")[0])


def adapter():
    if sdk_major() >= 2:
        from . import _v2 as module
    else:
        from . import _v1 as module
    return module
