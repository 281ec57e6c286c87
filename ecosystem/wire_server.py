"""A server with no SDK at all: every extension field and method on the wire, for the client probes.

    python ecosystem/wire_server.py

Newline-delimited JSON-RPC over stdio, standard library only, so what an SDK's
client shows its user is measured against a wire that certainly carries the
fields: `contextMiddleware` and `augmentation` capabilities, a tool with
`"preprocessor": true`, a tool with `execution.requirements` (beside
`taskSupport`), `_meta` on both, the interceptors extension in the SEP-2133
`capabilities.extensions` map, and answers to `middleware/list` and
`augmentation/list`.
"""

from __future__ import annotations

import json
import sys

OBJ = {"type": "object", "properties": {}}
TOOLS = [
    {"name": "conformance_memories", "description": "preprocessor fixture",
     "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
     "preprocessor": True, "_meta": {"conformance/probe": "memories"}},
    {"name": "conformance_gated_ok", "description": "execution-requirements fixture", "inputSchema": OBJ,
     "execution": {"taskSupport": "forbidden", "requirements": ["conformance:satisfied"]},
     "_meta": {"conformance/probe": "gated"}},
]
ANSWERS = {
    "tools/list": {"tools": TOOLS},
    "middleware/list": {"middleware": [{"name": "identity", "description": "returns its input",
                                        "inputSchema": OBJ}]},
    "augmentation/list": {"augmentations": [{"name": "identity", "description": "returns its input"}]},
    "ping": {},
}


def initialize(params: dict) -> dict:
    return {"protocolVersion": params.get("protocolVersion") or "2025-06-18",
            "capabilities": {"tools": {}, "contextMiddleware": {}, "augmentation": {"listChanged": False},
                             "extensions": {"io.modelcontextprotocol/interceptors": {"supportedEvents": ["tools/call"]}}},
            "serverInfo": {"name": "conformance-wire-server", "version": "0.1.0"}}


def main() -> None:  # its own loop, not conformance.targets.peerkit: the probes run it where only the SDK under test is installed
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if not isinstance(message, dict) or "id" not in message or "method" not in message:
            continue  # notifications and responses need no answer
        method = message["method"]
        if method == "initialize":
            reply = {"result": initialize(message.get("params") or {})}
        elif method in ANSWERS:
            reply = {"result": ANSWERS[method]}
        else:
            reply = {"error": {"code": -32601, "message": f"method not found: {method}"}}
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], **reply}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
