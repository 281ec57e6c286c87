"""python -m reference_servers.gateway [--http PORT] [--config FILE]: the reference gateway (see proxy.py)."""

from __future__ import annotations

import argparse
import logging
import sys

import anyio

from .proxy import (
    BODY_TIMEOUT,
    HEADER_TIMEOUT,
    MAX_BODY,
    MAX_CONNECTIONS,
    MAX_SESSIONS,
    SESSION_IDLE,
    load_config,
    serve_http,
    serve_stdio,
)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reference_servers.gateway",
                                     description="Reference MCP gateway: a raw JSON-RPC proxy with a plugin pipeline.")
    parser.add_argument("--http", type=int, metavar="PORT", help="serve Streamable HTTP on 127.0.0.1:PORT/mcp")
    parser.add_argument("--config", metavar="FILE",
                        help='JSON: {"upstreams": {NAME: {"command", "args", "env"} | {"url"}}, "plugins": [...]}')
    parser.add_argument("--max-body", type=int, default=MAX_BODY, metavar="BYTES",
                        help=f"HTTP: refuse larger request bodies with 413 (default {MAX_BODY})")
    parser.add_argument("--session-idle", type=float, default=SESSION_IDLE, metavar="SECONDS",
                        help=f"HTTP: end a session and its upstreams after this long without a request "
                             f"(default {SESSION_IDLE:.0f})")
    parser.add_argument("--max-sessions", type=int, default=MAX_SESSIONS, metavar="N",
                        help=f"HTTP: sessions at once, each with its own upstream processes; past it, 503 "
                             f"(default {MAX_SESSIONS})")
    parser.add_argument("--header-timeout", type=float, default=HEADER_TIMEOUT, metavar="SECONDS",
                        help=f"HTTP: close a connection whose request headers take longer (default {HEADER_TIMEOUT:g})")
    parser.add_argument("--body-timeout", type=float, default=BODY_TIMEOUT, metavar="SECONDS",
                        help=f"HTTP: answer 408 to a request whose body takes longer (default {BODY_TIMEOUT:g})")
    parser.add_argument("--max-connections", type=int, default=MAX_CONNECTIONS, metavar="N",
                        help=f"HTTP: connections and requests at once; past it, 503 (default {MAX_CONNECTIONS})")
    args = parser.parse_args(argv)
    for name in ("max_body", "session_idle", "max_sessions", "header_timeout", "body_timeout", "max_connections"):
        if getattr(args, name) <= 0:
            parser.error(f"--{name.replace('_', '-')} must be positive")
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="gateway: %(message)s")
    try:
        config = load_config(args.config)
        if args.http is not None:
            anyio.run(lambda: serve_http(config, args.http, max_body=args.max_body, idle=args.session_idle,
                                         max_sessions=args.max_sessions, header_timeout=args.header_timeout,
                                         body_timeout=args.body_timeout, max_connections=args.max_connections))
        else:
            anyio.run(serve_stdio, config)
    except ValueError as exc:  # configuration: say what is wrong, no traceback
        print(f"gateway: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
