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
  application/json with a session id), on the standard library alone: both loops are the suite's peer
  kit (conformance/targets/peerkit.py), shared with the host scenario servers.
- Every received message is appended as one JSON line to the file named by `--log` or env
  `MCPX_UPSTREAM_LOG`, before it is handled: the gateway checks read it to see what the gateway
  forwarded upstream (were `middleware/invoke` params left as the client sent them?).
- Capabilities decide what is served: `middleware/*`, `augmentation/*`, `interceptors/list` and
  `interceptor/invoke` are answered -32601 unless `serves()` says the capability is offered. Subclasses (tests/servers/fake_server.py) override the
  small methods below to break one rule at a time; this class breaks none.
- `--run MARK` (the gateway role passes a fresh one per connection) marks every answer with MARK and adds
  every optional field of the gateway upstream contract (docs/fixture-contract.md#gateway-upstream-contract),
  after the fixture has answered (`marked`): an answer a gateway did not get from this run's upstream lacks
  the mark, and a gateway that drops an optional field shows. Without it the answers are the bare fixtures.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

if not __package__:  # run by path (launch.upstream_command): the package is beside, not necessarily installed
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from conformance.targets import peerkit  # noqa: E402
from conformance.targets.peerkit import RpcError  # noqa: E402  (re-exported: the mutant servers raise it)

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
# The interceptors fixtures (SEP-2624), as the fixture contract fixes them: name -> definition.
INTERCEPTORS_EXTENSION = "io.modelcontextprotocol/interceptors"
INVALID_MARKER = "conformance:invalid"
_REQUEST = {"events": ["tools/call"], "phase": "request"}
INTERCEPTORS: dict[str, dict[str, Any]] = {
    "conformance_validator": {"type": "validation", "hooks": [_REQUEST],
                              "configSchema": {"type": "object", "properties": {"strict": {"type": "boolean"}},
                                               "additionalProperties": False}},
    "conformance_uppercase": {"type": "mutation", "hooks": [_REQUEST, {"events": ["tools/call"], "phase": "response"}],
                              "priorityHint": {"request": -100, "response": 100}},
    "conformance_audit": {"type": "validation", "hooks": [{"events": ["*"], "phase": "request"},
                                                          {"events": ["*"], "phase": "response"}],
                          "mode": "audit", "failOpen": True},
    "conformance_response_only": {"type": "validation", "hooks": [{"events": ["resources/read"], "phase": "response"}]},
    "conformance_failing": {"type": "mutation", "hooks": [_REQUEST]},
    # Fixture contract version 3: runs SLOW_SECONDS unless timeoutMs cuts it short (then -32000).
    "conformance_slow": {"type": "validation", "hooks": [_REQUEST]},
}
SLOW_SECONDS = 6.0
# The gateway upstream contract (--run MARK): where the mark and the optional fields go.
META_KEY = "dev.mcp-ext-conformance/upstream"  # the key of every `_meta` the upstream sends
UNKNOWN_KEY = "mcpxUnknownField"  # a key no schema defines: a gateway passes it on like any other
UNMARKED_TEXT = ("conformance_echo", "conformance_side_effects")  # their text is the caller's or a count
DURATION_MS = 0.5
COMPAT = {"minProtocol": "2025-06-18", "maxProtocol": "2025-11-25"}


def text_result(text: str) -> dict:
    return {"content": [{"type": "text", "text": text}]}


def error_result(text: str) -> dict:
    return {"content": [{"type": "text", "text": text}], "isError": True}


class FixtureServer:
    """Every fixture of every server-role profile; `plain=True` offers only `conformance_echo`."""

    name = "mcpx-upstream-fixtures"

    def __init__(self, plain: bool = False, run: str | None = None):
        self.plain = plain
        self.run_mark = run  # the gateway role's run mark: answers carry it and every optional field (`marked`)
        self.counter = 0  # how many times a gated tool's body has run

    # -- definitions ---------------------------------------------------------------------
    def tools(self) -> list[dict]:
        tools: list[dict[str, Any]] = [
            {"name": "conformance_echo", "description": "Returns its text unchanged.",
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
            events = sorted({e for d in INTERCEPTORS.values() for h in d["hooks"] for e in h["events"]})
            caps["extensions"] = {INTERCEPTORS_EXTENSION: {"supportedEvents": events}}
        return caps

    def serves(self, capability: str) -> bool:
        """Whether the methods of `capability` are answered (rather than -32601); "interceptors" is the
        extension of that name under `capabilities.extensions`."""
        caps = self.capabilities()
        if capability == "interceptors":
            return INTERCEPTORS_EXTENSION in (caps.get("extensions") or {})
        return capability in caps

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
        method, rid, params = msg["method"], msg.get("id"), msg.get("params") or {}
        if rid is None:
            return []
        out: list[dict] = []
        try:
            result = self.dispatch(method, params, out)
        except RpcError as err:
            if self.run_mark and isinstance(err.data, dict):
                err.data = {**err.data, "run": self.run_mark}
            return out + [err.response(rid)]
        if self.run_mark and isinstance(result, dict):
            result = marked(method, params, result, self.run_mark)
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
        if method in ("interceptors/list", "interceptor/invoke") and self.serves("interceptors"):
            return self.interceptors(params) if method == "interceptors/list" else self.intercept(params)
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

    # -- interceptors (SEP-2624) ---------------------------------------------------------------
    def interceptors(self, params: dict) -> dict:
        event = params.get("event")
        if event is not None and not isinstance(event, str):
            raise RpcError(-32602, "event must be a string")
        return {"interceptors": [{"name": name, **copy.deepcopy(d)} for name, d in INTERCEPTORS.items()
                                 if event is None or any(event in h["events"] or "*" in h["events"]
                                                         for h in d["hooks"])]}

    def intercept(self, params: dict) -> dict:
        """interceptor/invoke: the params are checked before anything runs (the SEP's "payloads MUST be
        validated before processing"), then the fixture answers as the fixture contract says."""
        name, event, phase = params.get("name"), params.get("event"), params.get("phase")
        definition = INTERCEPTORS.get(name) if isinstance(name, str) else None
        if definition is None:
            raise RpcError(-32602, f"Unknown interceptor: {name}")
        if not isinstance(event, str) or not event or phase not in ("request", "response") or "payload" not in params:
            raise RpcError(-32602, "interceptor/invoke needs event (a string), phase (request or response) and payload")
        if not any(h["phase"] == phase and (event in h["events"] or "*" in h["events"]) for h in definition["hooks"]):
            raise RpcError(-32602, f"{name} does not hook {event} in the {phase} phase")
        timeout_ms = params.get("timeoutMs")
        if timeout_ms is not None and (isinstance(timeout_ms, bool) or not isinstance(timeout_ms, (int, float))
                                       or timeout_ms <= 0):
            raise RpcError(-32602, "timeoutMs must be a positive number")
        config = params.get("config", {})
        # conformance_validator's configSchema by hand (standard library only): an object whose one known
        # key, `strict`, is a boolean; nothing else.
        if not isinstance(config, dict) or (name == "conformance_validator" and (
                set(config) - {"strict"} or not isinstance(config.get("strict", False), bool))):
            raise RpcError(-32602, f"invalid config for {name}: {json.dumps(config)[:200]}")
        base = {"interceptor": name, "type": definition["type"], "phase": phase}
        payload = params["payload"]
        if name == "conformance_failing":
            raise RpcError(-32603, "Interceptor execution failed", {"interceptor": name, "reason": "always fails"})
        if name == "conformance_slow":
            # Blocking on purpose: this server answers one message at a time, and only this fixture waits.
            if timeout_ms is not None and timeout_ms / 1000 < SLOW_SECONDS:
                time.sleep(timeout_ms / 1000)
                raise RpcError(-32000, "Interceptor execution timeout",
                               {"interceptor": name, "timeoutMs": timeout_ms, "phase": phase})
            time.sleep(SLOW_SECONDS)
        if name == "conformance_uppercase":
            upper = _map_strings(payload, str.upper)
            return {**base, "modified": upper != payload, "payload": upper}
        if name == "conformance_validator":
            bad = [path for path, text in _strings(payload, "$") if INVALID_MARKER in text]
            if bad:
                return {**base, "valid": False, "severity": "error",
                        "messages": [{"path": p, "message": f"contains {INVALID_MARKER}", "severity": "error"}
                                     for p in bad]}
        return {**base, "valid": True}


def _extras(run: str) -> dict:
    """The `_meta` and the unknown key every marked item and result carries."""
    return {"_meta": {META_KEY: {"run": run}}, UNKNOWN_KEY: {"run": run}}


def _describe(item: dict, run: str) -> dict:
    description = item.get("description")
    return {**item, "description": f"{description} [{run}]" if description else f"[{run}]", **_extras(run)}


def marked(method: str, params: dict, result: dict, run: str) -> dict:
    """`result` as the gateway upstream contract sends it under --run: the run mark in every listed item's
    description and in the text the fixture writes, and every optional field of each shape (values carrying
    the mark where they are free), plus `_meta` and an unknown key on each item and each call result."""
    result = copy.deepcopy(result)
    if method == "tools/list":
        tools = []
        for tool in result.get("tools") or ():
            tool = _describe(tool, run)
            if tool["name"] == "conformance_memories":
                tool["title"] = f"Conformance memories [{run}]"
            if isinstance(tool.get("execution"), dict):
                tool["execution"] = {**tool["execution"], "taskSupport": "forbidden", UNKNOWN_KEY: {"run": run}}
            tools.append(tool)
        return {**result, "tools": tools}
    for list_method, key in (("middleware/list", "middleware"), ("augmentation/list", "augmentations"),
                             ("interceptors/list", "interceptors")):
        if method == list_method:
            items = [_describe(item, run) for item in result.get(key) or ()]
            if key == "interceptors":
                items = [{**item, "version": "1.0.0", "compat": dict(COMPAT)} for item in items]
            return {**result, key: items}
    if method == "tools/call":
        if params.get("name") not in UNMARKED_TEXT:
            content = result.get("content") or []
            first = next((b for b in content if isinstance(b, dict) and b.get("type") == "text"), None)
            if first is not None:
                first["text"] = f"{first['text']} [{run}]"
        return {**result, **_extras(run)}
    if method in ("middleware/invoke", "augmentation/augment"):
        result["metadata"] = {**(result.get("metadata") or {}), "run": run}
        if method == "augmentation/augment":
            for item in result.get("content") or ():
                if isinstance(item, dict):
                    item["properties"] = {"relevance": 0.5, **(item.get("properties") or {}), UNKNOWN_KEY: {"run": run}}
        return {**result, **_extras(run)}
    if method == "interceptor/invoke":
        result = {**result, "durationMs": DURATION_MS, "info": {"run": run}, **_extras(run)}
        for message in result.get("messages") or ():
            message["message"] = f"{message['message']} [{run}]"
        if result.get("valid") is False:
            result["suggestions"] = [{"path": "$", "value": run}]
        return result
    return result


def _strings(value, path: str):
    """(JSON path, string) for every string value, keys excluded."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, f"{path}[{index}]")


def _map_strings(value, change):
    if isinstance(value, str):
        return change(value)
    if isinstance(value, dict):
        return {key: _map_strings(item, change) for key, item in value.items()}
    if isinstance(value, list):
        return [_map_strings(item, change) for item in value]
    return value


# ------------------------------------------------------------------------------------------ transports


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


def logged(server: FixtureServer, log: Log):
    """The kit's handler and note for `server`: every message received (parsed) is logged before it is handled."""

    def handle(message: dict) -> list[dict]:
        log.write(message)
        return server.handle(message)

    def note(problem: str, raw: str, value) -> None:
        if problem != "not JSON":
            log.write(value)

    return handle, note


def serve_stdio(server: FixtureServer, log: Log) -> None:
    peerkit.serve_stdio(*logged(server, log))


def serve_http(server: FixtureServer, log: Log, port: int, host: str = "127.0.0.1") -> None:
    """Streamable HTTP (2025-03-26 and later), JSON responses only: enough for a gateway's client."""
    handle, note = logged(server, log)
    peerkit.serve_http(handle, port, host, note=note, session=uuid.uuid4().hex, name="upstream fixture server")


def main(argv=None, server: FixtureServer | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m conformance.gateway.upstream", description=__doc__.splitlines()[0])
    parser.add_argument("--http", type=int, metavar="PORT", help="serve Streamable HTTP on 127.0.0.1:PORT/mcp")
    parser.add_argument("--log", metavar="FILE", help=f"append every received message here (or env {LOG_ENV})")
    parser.add_argument("--plain", action="store_true", help="only conformance_echo, no extension at all")
    parser.add_argument("--run", metavar="MARK", help="mark every answer with MARK and send every optional field "
                                                       "(the gateway upstream contract)")
    parser.add_argument("--tag", help="ignored: a label that makes the process easy to find in a listing")
    args = parser.parse_args(argv)
    server = server or FixtureServer(plain=args.plain, run=args.run)
    log = Log(args.log or os.environ.get(LOG_ENV) or None)
    if args.http is not None:
        serve_http(server, log, args.http)
    else:
        serve_stdio(server, log)


if __name__ == "__main__":
    main()
