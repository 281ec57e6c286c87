"""python -m reference_servers.gateway [--http PORT] [--config FILE]: the reference gateway (see proxy.py)."""

from __future__ import annotations

import argparse
import logging
import sys
from functools import partial

import anyio

from .proxy import IDLE_TIMEOUT, MAX_BODY_BYTES, load_config, serve_http, serve_stdio


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reference_servers.gateway",
                                     description="Reference MCP gateway: a raw JSON-RPC proxy with a plugin pipeline.")
    parser.add_argument("--http", type=int, metavar="PORT", help="serve Streamable HTTP on 127.0.0.1:PORT/mcp")
    parser.add_argument("--config", metavar="FILE",
                        help='JSON: {"upstreams": {NAME: {"command", "args", "env"} | {"url"}}, "plugins": [...]}')
    parser.add_argument("--max-body", type=int, default=MAX_BODY_BYTES, metavar="BYTES",
                        help=f"HTTP: larger POST bodies get 413 (default {MAX_BODY_BYTES})")
    parser.add_argument("--idle-timeout", type=float, default=IDLE_TIMEOUT, metavar="SECONDS",
                        help=f"HTTP: end a session and its upstreams after this long without a request "
                             f"(default {IDLE_TIMEOUT:g})")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="gateway: %(message)s")
    try:
        config = load_config(args.config)
        if args.http is not None:
            anyio.run(partial(serve_http, config, args.http, max_body=args.max_body, idle_timeout=args.idle_timeout))
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
