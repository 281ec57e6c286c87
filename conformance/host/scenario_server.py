"""Scenario servers: the MCP servers a host under test connects to, playing a scenario and recording it.

    python -m conformance.host.scenario_server --spec SPEC.json --log LOG.jsonl    # stdio

Theory of operation
-------------------
A scenario names its servers and what each exposes, from a small vocabulary
(tools `memo`, `echo`, `gated`; middleware `redact`, `restore`, `tag`, `fail`, `tool-filter`;
augmentations with a hint; interceptors `tag`, `shadow`, `reject-if`, `fail-if`). `ScenarioServer.handle` answers one JSON-RPC
message and records it; it is SDK-free so that extension fields reach the host
exactly as the scenario states them, and so it starts in milliseconds.

An interceptor with `stallIf: PATTERN` stalls an invocation whose payload holds the
pattern: its answer (what it would answer otherwise) comes `stall` seconds later
(default 60, far past any turn timeout), unless the invocation carries `timeoutMs`:
then, as a conforming server does, it gives up at that timeout and answers -32000
"Interceptor execution timeout" (SEP-2624 §Interceptor Invocation, Timeout and
Cancellation). A stalled invocation is recorded when it arrives, with the answer to
come, `delay` (when it comes) and `stall` (how long the work would have taken), so
the judges see it also when the host stops waiting and the answer is never read.
The answer is written by a timer thread (stdio only: the server keeps reading and
answering meanwhile); `notifications/cancelled` for it drops it.

Stdio servers run as processes the host starts from its config; they append one
JSON line per request to the log file (`{"t", "server", "method", "params",
"response"}`), flushed at once, so the harness reads them after the run. HTTP
servers run inside the harness (see harness.py) and record into its memory.
Times are `time.monotonic()`, one clock for every process on the machine, which
the mock LLM uses too: order is judged across the model and the servers.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import threading
import time
from typing import Any, Callable

from ..targets import peerkit
from ..targets.peerkit import RpcError

PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
OBJ = {"type": "object"}

# PII the `redact` middleware replaces: enough to judge that none of it reaches the model.
INTERCEPTORS_EXTENSION = "io.modelcontextprotocol/interceptors"
# What interceptors/list shows of a scenario interceptor (the rest, kind/pattern/severity, is the scenario's).
INTERCEPTOR_FIELDS = ("name", "description", "type", "hooks", "mode", "failOpen", "priorityHint")

PII_PATTERNS = (
    ("EMAIL", re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}")),
    ("SSN", re.compile(r"\b\d{3}-\d{2}-\d{4}\b")),
    ("CARD", re.compile(r"\b(?:\d{4}[ -]?){3}\d{4}\b")),
)
HANDLE = re.compile(r"\[(EMAIL|SSN|CARD)_(\d+)\]")
STALL_SECONDS = 60.0  # a stalled interceptor's work: far past any turn timeout
TIMEOUT_CODE = -32000  # SEP-2624: "A timeout error MUST be returned with code -32000"


class Stall(Exception):
    """An invocation answered later: `answer` (a result, or an RpcError) after `delay` seconds of `stall`."""

    def __init__(self, answer: Any, delay: float, stall: float):
        super().__init__(f"answered after {delay:g} s")
        self.answer, self.delay, self.stall = answer, delay, stall


def _text(text: str) -> dict:
    return {"type": "text", "text": text}


class ScenarioServer:
    """One scenario server's state and behaviour; `record(entry)` receives every request it answered."""

    def __init__(self, name: str, spec: dict, nonce: str, record: Callable[[dict], None],
                 defer: Callable[[Any, float, dict], None] | None = None,
                 cancel: Callable[[Any], None] | None = None):
        """`defer(request_id, delay, response)` writes a stalled invocation's response later; without it (HTTP, whose
        JSON answers cannot wait) the answer is given at once: stalls are for stdio servers. `cancel(request_id)`
        drops a deferred response."""
        self.name = name
        self.spec = spec
        self.nonce = nonce
        self.record = record
        self.defer = defer
        self.cancel = cancel
        self.calls: dict[str, int] = {}
        self.handles: dict[str, str] = {}  # handle -> original, for `restore` (state kept server-side)

    # -- what the server shows -------------------------------------------------------------
    def capabilities(self) -> dict:
        caps: dict[str, Any] = {"tools": {}}
        if self.spec.get("middleware"):
            caps["contextMiddleware"] = {}
        if self.spec.get("augmentations"):
            caps["augmentation"] = {}
        if self.spec.get("interceptors"):
            events = sorted({e for i in self.spec["interceptors"] for h in i["hooks"] for e in h["events"]})
            caps["extensions"] = {INTERCEPTORS_EXTENSION: {"supportedEvents": events}}
        return caps

    def tool_list(self) -> list[dict]:
        out = []
        for tool in self.spec.get("tools", ()):
            entry = {"name": tool["name"], "description": tool.get("description", tool["name"]),
                     "inputSchema": tool.get("inputSchema", OBJ)}
            if "preprocessor" in tool:
                entry["preprocessor"] = tool["preprocessor"]
            if "requirements" in tool:
                entry["execution"] = {"requirements": list(tool["requirements"])}
            out.append(entry)
        return out

    def _listing(self, key: str) -> list[dict]:
        return [{"name": m["name"], "description": m.get("description", m["name"]),
                 "inputSchema": m.get("inputSchema", OBJ)} for m in self.spec.get(key, ())]

    # -- dispatch --------------------------------------------------------------------------
    def handle(self, message: Any) -> dict | None:
        """The response to one incoming message (None for notifications and responses)."""
        started = time.monotonic()
        if not isinstance(message, dict) or "method" not in message or "id" not in message:
            # notifications, responses and junk are recorded verbatim, for the wire check
            self.record({"t": started, "server": self.name, "incoming": message})
            if (isinstance(message, dict) and message.get("method") == "notifications/cancelled" and self.cancel
                    and isinstance(message.get("params"), dict)):
                self.cancel(message["params"].get("requestId"))
            return None
        method, params = message["method"], message.get("params") or {}
        stalled = None
        try:
            try:
                result = self._dispatch(method, params)
            except Stall as stall:
                stalled = stall
                if isinstance(stall.answer, RpcError):
                    raise stall.answer from None
                result = stall.answer
            response = {"jsonrpc": "2.0", "id": message["id"], "result": result}
        except RpcError as exc:
            response = {"jsonrpc": "2.0", "id": message["id"], "error": exc.error()}
        entry = {"t": started, "server": self.name, "method": method, "params": params,
                 "incoming": message, "response": response}
        if stalled is not None and self.defer is not None:
            self.record({**entry, "delay": stalled.delay, "stall": stalled.stall})  # recorded now: see the docstring
            self.defer(message["id"], stalled.delay, response)
            return None
        self.record(entry)
        return response

    def _dispatch(self, method: str, params: dict) -> dict:
        if method == "initialize":
            asked = params.get("protocolVersion")
            version = asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[0]
            return {"protocolVersion": version, "capabilities": self.capabilities(),
                    "serverInfo": {"name": f"scenario-{self.name}", "version": "1"}}
        if method == "ping":
            return {}
        if method == "tools/list":
            return {"tools": self.tool_list()}
        if method == "tools/call":
            return self._call(params)
        if method == "middleware/list" and self.spec.get("middleware"):
            return {"middleware": self._listing("middleware")}
        if method == "middleware/invoke" and self.spec.get("middleware"):
            return self._invoke(params)
        if method == "augmentation/list" and self.spec.get("augmentations"):
            return {"augmentations": self._listing("augmentations")}
        if method == "augmentation/augment" and self.spec.get("augmentations"):
            return self._augment(params)
        if method == "interceptors/list" and self.spec.get("interceptors"):
            return {"interceptors": [{k: v for k, v in i.items() if k in INTERCEPTOR_FIELDS}
                                     for i in self.spec["interceptors"]]}
        if method == "interceptor/invoke" and self.spec.get("interceptors"):
            return self._intercept(params)
        if method in ("resources/list", "prompts/list", "resources/templates/list"):
            return {method.split("/")[0] if "templates" not in method else "resourceTemplates": []}
        raise RpcError(-32601, f"method not found: {method}")

    def _find(self, key: str, name: Any) -> dict:
        for item in self.spec.get(key, ()):
            if item["name"] == name:
                return item
        raise RpcError(-32602, f"unknown {key[:-1] if key != 'middleware' else key}: {name!r}")

    def _call(self, params: dict) -> dict:
        tool = self._find("tools", params.get("name"))
        arguments = params.get("arguments") or {}
        self.calls[tool["name"]] = count = self.calls.get(tool["name"], 0) + 1
        kind = tool.get("kind", "echo")
        if kind == "memo":  # a fresh token per call, so the judge can follow where each output went
            return {"content": [_text(f"{tool['label']}-{count}-{self.nonce}")]}
        if kind == "echo":
            return {"content": [_text(str(arguments.get("text", "")))]}
        if kind == "gated":
            unmet = [r for r in tool.get("requirements", ()) if r not in tool.get("satisfied", ())]
            if unmet:
                return {"content": [_text(f"unmet execution requirement: {unmet[0]}")], "isError": True}
            return {"content": [_text(f"{tool['name']} ran")]}
        raise RpcError(-32603, f"scenario tool kind {kind!r} unknown")

    def _invoke(self, params: dict) -> dict:
        item = self._find("middleware", params.get("name"))
        context = params.get("context")
        if not isinstance(context, list):
            raise RpcError(-32602, "context must be an array of content blocks")
        arguments = params.get("arguments") or {}
        kind = item.get("kind")
        secret = f"META-{self.nonce}"
        if kind == "fail":
            # Malformed results, not errors, for two tokens: a host holds a result to the schema before using it.
            seen = json.dumps(context, ensure_ascii=False)
            if "MALFORMED-CONTENT-" in seen:
                return {"content": " ".join(b.get("text", "") for b in context if isinstance(b, dict)),
                        "metadata": {"secret": secret}}
            if "MALFORMED-META-" in seen:
                return {"content": context, "metadata": "not an object"}
            raise RpcError(-32603, f"{item['name']} failed on purpose")
        if kind == "redact":
            return {"content": [self._map_text(b, self._redact) for b in context],
                    "metadata": {"secret": secret, "handles": len(self.handles)}}
        if kind == "restore":
            return {"content": [self._map_text(b, self._restore) for b in context], "metadata": {"secret": secret}}
        if kind == "tag":
            tag = str(arguments.get("tag", item["name"]))
            return {"content": [self._map_text(b, lambda t: f"{t} [tag:{tag}]") for b in context],
                    "metadata": {"secret": secret}}
        if kind == "tool-filter":  # the context as it came, and the tools to keep in metadata (SEP example 6)
            keep = list(item["keep"])
            return {"content": context,
                    "metadata": {"secret": secret, "suggestedToolSet": keep,
                                 "relevantTools": [{"name": n, "score": round(0.9 - i / 10, 2)}
                                                   for i, n in enumerate(keep)]}}
        raise RpcError(-32603, f"scenario middleware kind {kind!r} unknown")

    def _augment(self, params: dict) -> dict:
        item = self._find("augmentations", params.get("name"))
        if not isinstance(params.get("context"), list):
            raise RpcError(-32602, "context must be an array of content blocks")
        if "items" in item:
            content = [{"content": _text(i["text"]), **({"properties": {"relevance": i["relevance"]}}
                                                         if "relevance" in i else {})} for i in item["items"]]
        else:
            content = [{"content": _text(item["text"].replace("{nonce}", self.nonce))}]
        return {"content": content, "hint": item["hint"], "metadata": {"secret": f"META-{self.nonce}"}}

    def _intercept(self, params: dict, item: dict | None = None) -> dict:
        """One interceptor invocation. Each kind touches only strings holding the nonce (the user's and the
        model's), so the judges can follow them whatever shape the host gives the payload; conditions are
        substrings of the payload's JSON, so each turn's token triggers exactly one behaviour."""
        item = item or self._find("interceptors", params.get("name"))
        event, phase = params.get("event"), params.get("phase")
        if not any(h["phase"] == phase and (event in h["events"] or "*" in h["events"]) for h in item["hooks"]):
            raise RpcError(-32602, f"{item['name']} does not hook {event!r} in phase {phase!r}")
        if "payload" not in params:
            raise RpcError(-32602, "payload is required")
        payload = params["payload"]
        seen = json.dumps(payload, ensure_ascii=False)
        kind = item["kind"]
        base = {"interceptor": item["name"], "type": item["type"], "phase": phase}
        if item.get("stallIf") and item["stallIf"] in seen:
            raise self._stall(item, params, {k: v for k, v in item.items() if k != "stallIf"})
        if (kind == "fail-if" and item["pattern"] in seen) or (item.get("failIf") and item["failIf"] in seen):
            raise RpcError(-32603, "Interceptor execution failed")
        if item["type"] == "validation":
            if kind == "reject-if" and item["pattern"] in seen:
                severity = item.get("severity", "error")
                return {**base, "valid": False, "severity": severity,
                        "messages": [{"message": f"{item['pattern']} is not allowed", "severity": severity}]}
            return {**base, "valid": True}
        if kind == "tag":
            out = self._map_nonce(payload, lambda s: f"{s} [tag:{item['name']}]")
        elif kind == "shadow":
            out = self._map_nonce(payload, lambda s: f"SHADOW-{self.nonce} {s}")
        else:
            out = payload
        return {**base, "modified": out != payload, "payload": out}

    def _stall(self, item: dict, params: dict, unstalled: dict) -> Stall:
        """The stalled invocation of `item`: its own answer after the stall, or the timeout error at `timeoutMs`."""
        stall = float(item.get("stall", STALL_SECONDS))
        timeout_ms = params.get("timeoutMs")
        if isinstance(timeout_ms, (int, float)) and not isinstance(timeout_ms, bool) and 0 <= timeout_ms / 1000 < stall:
            error = RpcError(TIMEOUT_CODE, "Interceptor execution timeout",
                             {"interceptor": item["name"], "timeoutMs": timeout_ms, "phase": params.get("phase")})
            return Stall(error, timeout_ms / 1000, stall)
        try:
            answer: Any = self._intercept(params, unstalled)
        except RpcError as exc:
            answer = exc
        return Stall(answer, stall, stall)

    def _map_nonce(self, value: Any, change: Callable[[str], str]) -> Any:
        if isinstance(value, str):
            return change(value) if self.nonce in value else value
        if isinstance(value, list):
            return [self._map_nonce(v, change) for v in value]
        if isinstance(value, dict):
            return {k: self._map_nonce(v, change) for k, v in value.items()}
        return value

    @staticmethod
    def _map_text(block: Any, change: Callable[[str], str]) -> Any:
        if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
            return {**block, "text": change(block["text"])}
        return block

    def _redact(self, text: str) -> str:
        for kind, pattern in PII_PATTERNS:
            def swap(m: re.Match, kind=kind) -> str:
                for handle, value in self.handles.items():
                    if value == m.group(0):
                        return handle
                handle = f"[{kind}_{sum(1 for h in self.handles if h.startswith('[' + kind)) + 1}]"
                self.handles[handle] = m.group(0)
                return handle
            text = pattern.sub(swap, text)
        return text

    def _restore(self, text: str) -> str:
        return HANDLE.sub(lambda m: self.handles.get(m.group(0), m.group(0)), text)


def kit_handler(server: ScenarioServer):
    """The peer kit's handler and note for `server`: junk is recorded for the wire check, as requests are."""

    def handle(message: dict) -> list[dict]:
        response = server.handle(message)
        return [response] if response is not None else []

    def note(problem: str, raw: str, value) -> None:
        if problem == "not JSON":
            server.record({"t": time.monotonic(), "server": server.name, "problem": problem, "raw": raw})
        else:
            server.handle(value)  # records it verbatim (as "incoming") and answers nothing; the kit says -32600

    return handle, note


class LaterLines:
    """stdout shared by the reading loop and the timers of stalled answers: whole lines, one writer at a time."""

    def __init__(self, out):
        self.out = out
        self.lock = threading.Lock()
        self.pending: dict[str, threading.Timer] = {}

    def write(self, text: str) -> None:
        with self.lock:
            self.out.write(text)

    def flush(self) -> None:
        with self.lock:
            self.out.flush()

    def defer(self, request_id: Any, delay: float, response: dict) -> None:
        key = json.dumps(request_id)
        timer = threading.Timer(delay, self._send, (key, response))
        timer.daemon = True  # a stall never keeps the server alive once its stdin closed
        with self.lock:
            self.pending[key] = timer
        timer.start()

    def cancel(self, request_id: Any) -> None:
        with self.lock:
            timer = self.pending.pop(json.dumps(request_id), None)
        if timer is not None:
            timer.cancel()

    def _send(self, key: str, response: dict) -> None:
        with self.lock:
            if self.pending.pop(key, None) is None:
                return
            try:
                self.out.write(peerkit.dumps(response) + "\n")
                self.out.flush()
            except (OSError, ValueError):  # the host went away meanwhile
                pass


def serve_stdio(server: ScenarioServer, out: LaterLines | None = None) -> None:
    handle, note = kit_handler(server)
    peerkit.serve_stdio(handle, note, stdout=out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.host.scenario_server")
    parser.add_argument("--spec", required=True, help="JSON file: {name, nonce, server: {...}}")
    parser.add_argument("--log", required=True, help="append one JSON line per request here")
    parser.add_argument("--marker", help="ignored: lets the suite's tests find the process")
    args = parser.parse_args(argv)
    with open(args.spec, encoding="utf-8") as fh:
        spec = json.load(fh)
    log = open(args.log, "a", encoding="utf-8", buffering=1)

    def record(entry: dict) -> None:
        log.write(json.dumps(entry, ensure_ascii=False) + "\n")
        log.flush()

    record({"t": time.monotonic(), "server": spec["name"], "started": os.getpid()})  # lets the harness reap it
    out = LaterLines(sys.stdout)
    try:
        serve_stdio(ScenarioServer(spec["name"], spec["server"], spec["nonce"], record, out.defer, out.cancel), out)
    except (KeyboardInterrupt, BrokenPipeError):
        pass
    return 0



def http_app(server: ScenarioServer):
    """A Streamable HTTP endpoint at /mcp for one scenario server: JSON responses, no SSE stream needed."""
    from starlette.applications import Starlette
    from starlette.responses import Response
    from starlette.routing import Route

    session = f"scenario-{server.name}-{server.nonce[:8]}"
    handle, note = kit_handler(server)

    async def mcp(request):
        status, headers, body = peerkit.answer_http(request.method, request.url.path, await request.body(),
                                                    handle, note, session)
        return Response(body, status_code=status, headers=headers)

    return Starlette(routes=[Route("/mcp", mcp, methods=["GET", "POST", "DELETE"])])


if __name__ == "__main__":
    sys.exit(main())
