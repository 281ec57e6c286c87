"""Run the reference server.

    python -m reference_servers.everything [--http PORT] [--host HOST] [--config FILE]

stdio by default; with --http, Streamable HTTP at http://HOST:PORT/mcp (HOST
defaults to 127.0.0.1). Logs go to stderr; stdout carries JSON-RPC only.

--config FILE is JSON:
    {
      "profiles": ["preprocessor-tools", "execution-requirements", "context-middleware", "augmentation"],
      "satisfiedRequirements": ["env:production", ...],   # strings this deployment satisfies, exactly
      "fixtures": true,                                     # expose the conformance_* fixtures (default: true,
                                                            #   except when --host is not a loopback address)
      "memoryScope": "session",                             # or "shared"; default: per session, in memory;
                                                            #   over stdio "shared" when a store is named
                                                            #   (memoryStore, MCPX_MEMORY_STORE; app.memory_stores)
      "allowedHosts": ["mcp.example.com:*"],                # Host headers accepted over HTTP (required when
      "allowedOrigins": ["https://app.example.com"],        #   --host is not loopback); Origin headers accepted
      "limits": {"maxTextChars": 4194304, "maxInputChars": 8388608,   # per call of every extension method
                 "maxOutputChars": 8388608, "maxSeconds": 10, "maxConcurrent": 4,   #   (reference_servers/limits.py)
                 "maxQueued": 32, "maxJsonValues": 20000},
      "memoryMaxCount": 1000, "memoryMaxBytes": 4194304      # caps of one memory store (one session's, by default)
    }
deploy.example.json beside this file is a deployment configuration (no fixtures, explicit limits).
MCPX_SATISFIED_REQUIREMENTS (comma-separated) adds satisfied strings from the environment.

    python -m reference_servers.everything --prefork SOCKET

is a fork server (reference_servers/prefork.py): it imports the SDK once, and every reference server started
with MCPX_SERVER_PREFORK=SOCKET in its environment runs as its child, on its own stdin, stdout, stderr,
arguments and environment. The suite's own tests run most of their reference servers this way.
"""

from __future__ import annotations

import os
import sys

PREFORK_ENV = "MCPX_SERVER_PREFORK"
NAME = "reference server"

if __name__ == "__main__" and os.environ.get(PREFORK_ENV) and sys.argv[1:2] != ["--prefork"]:
    # A fork server runs this server with its imports done; checked before the imports below, which a starter
    # does not need.
    from ..prefork import hand_over

    hand_over(os.environ[PREFORK_ENV], NAME)

import argparse  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import signal  # noqa: E402

from ..sdk import LOOPBACK_HOSTS, HostGuard, adapter  # noqa: E402
from .app import build_app  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reference_servers.everything")
    parser.add_argument("--http", type=int, metavar="PORT", help="serve Streamable HTTP on this port")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--config", metavar="FILE", help="JSON configuration (see the module docstring)")
    parser.add_argument("--allowed-host", action="append", default=[], metavar="HOST",
                        help="a Host header value to accept over HTTP, e.g. mcp.example.com:* (repeatable; adds to "
                             "the configuration's allowedHosts; required when --host is not loopback)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    config = {}
    if args.config:
        try:
            with open(args.config, encoding="utf-8") as handle:
                config = json.load(handle)
        except (OSError, ValueError) as exc:
            print(f"reference server: cannot read config {args.config}: {exc}", file=sys.stderr)
            return 2
    env_satisfied = [s for s in os.environ.get("MCPX_SATISFIED_REQUIREMENTS", "").split(",") if s]
    config["satisfiedRequirements"] = list(config.get("satisfiedRequirements") or ()) + env_satisfied
    # Memories are personal data, and nothing says who a process serves: a gateway may start one stdio process per
    # user session. So by default each session keeps its own, in memory, gone with it (app.py). One store shared by
    # every session and process that names it (a file that persists) only when configured: "memoryScope": "shared",
    # or, over stdio, a store named explicitly (`memoryStore` or MCPX_MEMORY_STORE) for the user who started it.
    explicit_store = config.get("memoryStore") or os.environ.get("MCPX_MEMORY_STORE")
    config.setdefault("memoryScope", "shared" if explicit_store and not args.http else "session")
    config.setdefault("fixtures", args.host in LOOPBACK_HOSTS or not args.http)
    try:
        app = build_app(config)
        guard = HostGuard.for_bind(args.host, [*(config.get("allowedHosts") or ()), *args.allowed_host],
                                   config.get("allowedOrigins") or ()) if args.http else None
    except ValueError as exc:
        print(f"reference server: {exc}", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    # Everything made so far (the SDK's modules, the app) lives as long as the process: out of the garbage
    # collector's reach, its full passes walk only what requests make (with the SDK loaded, one pass took
    # 55 ms, and a 1 MB pii_redaction triggered one every few calls).
    gc.freeze()
    try:
        if args.http:
            adapter().run_http(app, args.host, args.http, guard)
        else:
            adapter().run_stdio(app)
            # stdin is closed, every answer written and every memory write committed: skip tearing down
            # the SDK's module graph, which takes a fifth of a second and changes nothing.
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(0)
    except KeyboardInterrupt:
        pass
    return 0


def _preload() -> None:
    # What a server imports before its first answer, over stdio and over HTTP; shared by every child.
    import ctypes  # noqa: F401 - prefork's _die_with_parent

    adapter()  # imports the installed SDK's adapter module
    import uvicorn  # noqa: F401
    from mcp.server.stdio import stdio_server  # noqa: F401

    from .. import httpguard  # noqa: F401
    from ..sdk import events  # noqa: F401
    build_app({"satisfiedRequirements": [], "memoryScope": "session", "fixtures": True})
    gc.collect()
    gc.freeze()  # what is preloaded stays shared with every child (the collector does not touch it)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--prefork"] and len(sys.argv) == 3:
        from ..prefork import serve

        sys.exit(serve(sys.argv[2], NAME, PREFORK_ENV, _preload, main))
    sys.exit(main())
