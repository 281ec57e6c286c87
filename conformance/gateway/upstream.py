"""The suite's own upstream fixture server: every fixture of docs/fixture-contract.md, correct.

    python -m conformance.gateway.upstream [--http PORT] [--log FILE]

For the gateway role the suite plays the upstream server: a gateway under test is started with
`MCPX_UPSTREAM_COMMAND` naming this module, and the suite, as the downstream client, looks at what
comes through. Written without the MCP SDK on purpose: a raw JSON-RPC server sends exactly the
extension fields the fixture contract fixes (the 2.x SDK would drop them), starts in milliseconds,
and is a second implementation of the fixtures, independent of reference_servers.

Theory of operation
-------------------
- `FixtureServer.handle(message)` returns the messages to write for one received message; it holds
  the only state (the side-effect counter). stdio serves one JSON line at a time; `--http PORT`
  serves Streamable HTTP on 127.0.0.1:PORT/mcp (a POST per message, each answered as
  application/json, a session id handed out at initialize), on the standard library alone.
- Every received message is appended as one JSON line to the file named by `--log` or env
  `MCPX_UPSTREAM_LOG`, before it is handled: the gateway checks read it to see what the gateway
  forwarded upstream (were `middleware/invoke` params left as the client sent them?).
- Capabilities decide what is served: `middleware/*` and `augmentation/*` are answered -32601 unless
  `serves()` says the capability is offered. Subclasses (tests/servers/fake_server.py) override the
  small methods below to break one rule at a time; this class breaks none.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SATISFIED = frozenset({"conformance:satisfied", "conformance:caf\u00e9"})
GATED = {
    "conformance_gated_ok": ["conformance:satisfied"],
    "conformance_gated_unmet": ["conformance:unsatisfied"],
    "conformance_gated_mixed": ["conformance:satisfied", "conformance:unsatisfied"],
    "conformance_gated_case": ["Conformance:Satisfied"],
    # Fixture contract version 2: near misses of satisfied strings (docs/fixture-contract.md).
    "conformance_gated_unicode_ok": ["conformance:caf\u00e9"],
    "conformance_gated_nfd": ["conformance:cafe\u0301"],
    "conformance_gated_confusable": ["conformance:s\u0430tisfied"],
    "conformance_gated_space": ["conformance:satisfied "],
}
OBJ = {"type": "object"}
LOG_ENV = "MCPX_UPSTREAM_LOG"


class RpcError(Exception):
    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code, self.message = code, message


def text_result(text: str) -> dict:
    return {"content": [{"type": "text", "text": text}]}


def error_result(text: str) -> dict:
    return {"content": [{"type": "text", "text": text}], "isError": True}


class FixtureServer:
    """Every fixture of every server-role profile; `plain=True` offers only `conformance_echo`."""

    name = "mcpx-upstream-fixtures"

    def __init__(self, plain: bool = False):
        self.plain = plain
        self.counter = 0  # how many times a gated tool's body has run

    # -- definitions ---------------------------------------------------------------------
    def tools(self) -> list[dict]:
        tools = [{"name": "conformance_echo", "description": "Returns its text unchanged.",
                  "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}]
        if self.plain:
            return tools
        tools.append({"name": "conformance_memories", "description": "Memories matching the query.",
                      "preprocessor": True,
                      "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}},
                                      "required": ["query"]}})
        for name, reqs in GATED.items():
            tools.append({"name": name, "inputSchema": OBJ, "execution": {"requirements": list(reqs)}})
        tools.append({"name": "conformance_side_effects", "description": "How many gated bodies ran.",
                      "inputSchema": OBJ})
        return tools

    def capabilities(self) -> dict:
        caps: dict = {"tools": {}}
        if not self.plain:
            caps["contextMiddleware"] = {}
            caps["augmentation"] = {"listChanged": False}
        return caps

    def serves(self, capability: str) -> bool:
        """Whether the methods of `capability` are answered (rather than -32601)."""
        return capability in self.capabilities()

    def middleware(self) -> list[dict]:
        return [{"name": "conformance_identity", "inputSchema": OBJ},
                {"name": "conformance_uppercase", "inputSchema": OBJ},
                {"name": "conformance_strict_args",
                 "inputSchema": {"type": "object", "properties": {"mode": {"type": "string", "enum": ["a", "b"]}},
                                 "required": ["mode"], "additionalProperties": False}},
                {"name": "stamp", "description": "a real middleware", "inputSchema": OBJ}]

    def augmentations(self) -> list[dict]:
        return [{"name": "conformance_identity", "inputSchema": OBJ},
                {"name": "conformance_prepend_note", "inputSchema": OBJ},
                {"name": "summarize", "description": "a real augmentation", "inputSchema": OBJ}]

    # -- dispatch ----------------------------------------------------------------------------
    def handle(self, msg) -> list[dict]:
        """The messages to write for one received message (notifications and responses get none)."""
        if not isinstance(msg, dict) or "method" not in msg:
            return []
        method, rid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
        if rid is None:
            return []
        out: list[dict] = []
        try:
            result = self.dispatch(method, params, out)
        except RpcError as err:
            return out + [{"jsonrpc": "2.0", "id": rid, "error": {"code": err.code, "message": err.message}}]
        return out + [self.reply(method, params, {"jsonrpc": "2.0", "id": rid, "result": result})]

    def reply(self, method: str, params: dict, message: dict) -> dict:
        """The response as written; a hook for subclasses that break the envelope."""
        return message

    def dispatch(self, method, params, out: list[dict]):
        """The result of one request; `out` collects messages to write before the response."""
        if method == "initialize":
            return {"protocolVersion": params.get("protocolVersion", "2025-11-25"),
                    "capabilities": self.capabilities(), "serverInfo": {"name": self.name, "version": "0"}}
        if method == "ping":
            return {}
        if method == "tools/list":
            return {"tools": self.tools()}
        if method == "tools/call":
            return self.call(params.get("name"), params.get("arguments") or {}, out)
        if method.startswith("middleware/") and self.serves("contextMiddleware"):
            if method == "middleware/list":
                return {"middleware": self.middleware()}
            if method == "middleware/invoke":
                return self.invoke(params)
        if method.startswith("augmentation/") and self.serves("augmentation"):
            if method == "augmentation/list":
                return {"augmentations": self.augmentations()}
            if method == "augmentation/augment":
                return self.augment(params)
        raise RpcError(-32601, f"Method not found: {method}")

    def call(self, name, args: dict, out: list[dict]) -> dict:
        if name == "conformance_echo":
            return text_result(str(args.get("text", "")))
        if not self.plain:
            if name == "conformance_memories":
                return text_result(f"memories for: {args.get('query', '')}")
            if name == "conformance_side_effects":
                return text_result(str(self.counter))
            if name in GATED:
                return self.gated(name)
        raise RpcError(-32602, f"Unknown tool: {name}")

    def unmet(self, name: str) -> list[str]:
        """The requirements of a gated tool this server does not satisfy (exact string match)."""
        return [r for r in GATED[name] if r not in SATISFIED]

    def gated(self, name: str) -> dict:
        # Requirements are checked before the body runs, so an unmet call has no side effect.
        unmet = self.unmet(name)
        if unmet:
            return error_result(f"unmet execution requirements: {', '.join(unmet)}")
        self.counter += 1
        return text_result("ran")

    @staticmethod
    def context_of(params: dict) -> list:
        context = params.get("context")
        if not isinstance(context, list):
            raise RpcError(-32602, "context must be an array of content blocks")
        return copy.deepcopy(context)

    def invoke(self, params: dict) -> dict:
        name, args = params.get("name"), params.get("arguments") or {}
        context = self.context_of(params)
        if name == "conformance_identity":
            return {"content": context}
        if name == "conformance_uppercase":
            changed = 0
            for block in context:
                if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
                    upper = block["text"].upper()
                    changed += upper != block["text"]
                    block["text"] = upper
            return {"content": context, "metadata": {"changed": changed}}
        if name == "conformance_strict_args":
            if not isinstance(args, dict) or args.get("mode") not in ("a", "b") or set(args) - {"mode"}:
                raise RpcError(-32602, "mode must be \"a\" or \"b\"")
            return {"content": context, "metadata": {"mode": args["mode"]}}
        if name == "stamp":
            return {"content": [{"type": "text", "text": "[stamp]"}] + context, "metadata": {"stamped": True}}
        raise RpcError(-32602, f"Unknown middleware: {name}")

    def augment(self, params: dict) -> dict:
        name = params.get("name")
        context = self.context_of(params)
        if name == "conformance_identity":
            return {"content": [{"content": block} for block in context]}
        if name == "conformance_prepend_note":
            return {"content": [{"content": {"type": "text", "text": "NOTE"}}], "hint": "prepend"}
        if name == "summarize":
            return {"content": [{"content": {"type": "text", "text": "summary"}, "properties": {"relevance": 1.0}}],
                    "hint": "prepend"}
        raise RpcError(-32602, f"Unknown augmentation: {name}")


# ------------------------------------------------------------------------------------------ transports

PARSE_ERROR = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}


class Log:
    """Appends each received message as a JSON line; flushes each, so a reader sees it at once."""

    def __init__(self, path: str | None):
        self.handle = open(path, "a", encoding="utf-8") if path else None
        self.lock = threading.Lock()

    def write(self, message) -> None:
        if self.handle is not None:
            with self.lock:
                self.handle.write(json.dumps(message, ensure_ascii=False) + "\n")
                self.handle.flush()


def serve_stdio(server: FixtureServer, log: Log) -> None:
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            msg = json.loads(line)
        except ValueError:
            sys.stdout.write(json.dumps(PARSE_ERROR) + "\n")
            sys.stdout.flush()
            continue
        log.write(msg)
        for out in server.handle(msg):
            sys.stdout.write(json.dumps(out, ensure_ascii=False) + "\n")
        sys.stdout.flush()


def serve_http(server: FixtureServer, log: Log, port: int, host: str = "127.0.0.1") -> None:
    """Streamable HTTP (2025-03-26 and later), JSON responses only: enough for a gateway's client."""
    lock = threading.Lock()  # one message at a time, as on stdio: the counter is shared state

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body leave in separate writes: no 40 ms delayed-ACK stall

        def log_message(self, *args):  # keep stderr for real problems
            pass

        def _send(self, status: int, body: bytes = b"", headers: dict | None = None) -> None:
            self.send_response(status)
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if body:
                self.wfile.write(body)

        def do_POST(self):
            if self.path.split("?")[0] != "/mcp":
                return self._send(404)
            size = int(self.headers.get("Content-Length") or 0)
            try:
                msg = json.loads(self.rfile.read(size) or b"null")
            except ValueError:
                return self._send(400, json.dumps(PARSE_ERROR).encode(), {"Content-Type": "application/json"})
            log.write(msg)
            with lock:
                out = server.handle(msg)
            headers = {"Content-Type": "application/json"}
            if isinstance(msg, dict) and msg.get("method") == "initialize":
                headers["Mcp-Session-Id"] = uuid.uuid4().hex
            responses = [m for m in out if "method" not in m]  # JSON mode carries the response alone
            if not responses:
                return self._send(202)
            self._send(200, json.dumps(responses[-1], ensure_ascii=False).encode(), headers)

        def do_GET(self):  # no server-initiated stream
            self._send(405, headers={"Allow": "POST, DELETE"})

        def do_DELETE(self):
            self._send(200)

    httpd = ThreadingHTTPServer((host, port), Handler)
    httpd.daemon_threads = True
    print(f"upstream fixture server on http://{host}:{httpd.server_port}/mcp", file=sys.stderr, flush=True)
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass


def main(argv=None, server: FixtureServer | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m conformance.gateway.upstream", description=__doc__.splitlines()[0])
    parser.add_argument("--http", type=int, metavar="PORT", help="serve Streamable HTTP on 127.0.0.1:PORT/mcp")
    parser.add_argument("--log", metavar="FILE", help=f"append every received message here (or env {LOG_ENV})")
    parser.add_argument("--plain", action="store_true", help="only conformance_echo, no extension at all")
    parser.add_argument("--tag", help="ignored: a label that makes the process easy to find in a listing")
    args = parser.parse_args(argv)
    server = server or FixtureServer(plain=args.plain)
    log = Log(args.log or os.environ.get(LOG_ENV) or None)
    if args.http is not None:
        serve_http(server, log, args.http)
    else:
        serve_stdio(server, log)


if __name__ == "__main__":
    main()
