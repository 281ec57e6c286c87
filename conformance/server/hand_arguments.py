"""The hand tool's command line (server/hand.py): its subcommands, actions and target options.

Apart from the tool, which judges with the server role's checks (jsonschema and every check module): the
command line builds its parser from this alone, so reading the arguments of any run costs none of that.
"""

from __future__ import annotations

import argparse

# The server role's target options, by name, with help that speaks of this tool.
TARGET_OPTIONS = {"command": "start the server with this command line (stdio)",
                  "url": "the server's Streamable HTTP endpoint, e.g. http://127.0.0.1:8000/mcp",
                  "header": "HTTP header, 'Name: value' (repeatable); ${VAR} in the value is read from the environment",
                  "ca-bundle": "verify an https server against the CA certificates in FILE (PEM)",
                  "env": "KEY=VALUE for the started server (repeatable)",
                  "timeout": "seconds to wait for any one response (default 10)"}


def positive_int(text: str) -> int:
    if not text.isdigit() or int(text) <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: give a positive whole number")
    return int(text)


def add_arguments(sub, kind: str) -> list:
    """The `interceptors` or `middleware` subcommand and its two actions; the command line adds the server
    role's target options (TARGET_OPTIONS) to each action returned."""
    parser = sub.add_parser(kind, help=f"send one {kind} request to a server by hand and judge it on the spot")
    actions = parser.add_subparsers(dest="action", required=True, parser_class=type(parser))
    lister = actions.add_parser("list", help=f"list the server's {kind}")
    invoker = actions.add_parser("invoke", help=f"invoke one of the server's {kind}")
    invoker.add_argument("name", help="the name as listed")
    if kind == "interceptors":
        lister.add_argument("--event", help="only those hooking EVENT (interceptors/list {event})")
        invoker.add_argument("--event", required=True, help="the event, e.g. tools/call")
        invoker.add_argument("--phase", required=True, choices=("request", "response"))
        invoker.add_argument("--payload", required=True, metavar="JSON|@FILE", help="the payload to judge")
        invoker.add_argument("--config", metavar="JSON|@FILE", help="the invocation's config")
        invoker.add_argument("--timeout-ms", type=positive_int, metavar="N",
                             help="the invocation's timeoutMs")
    else:
        invoker.add_argument("--context", required=True, metavar="JSON|@FILE", help="the content blocks (an array)")
        invoker.add_argument("--arguments", metavar="JSON|@FILE", help="the middleware's arguments (an object)")
    for action in (lister, invoker):
        action.add_argument("--json", action="store_true", help="print request, response and verdict as JSON")
    return [lister, invoker]
