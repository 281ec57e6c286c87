"""python -m reference_servers.gateway [--http PORT] [--config FILE]: the reference gateway (see proxy.py)."""

from __future__ import annotations

import argparse
import logging
import sys

import anyio

from .proxy import MAX_BODY, SESSION_IDLE, load_config, serve_http, serve_stdio


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
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="gateway: %(message)s")
    try:
        config = load_config(args.config)
        if args.http is not None:
            anyio.run(lambda: serve_http(config, args.http, max_body=args.max_body, idle=args.session_idle))
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
