"""Hostile servers: each mode misbehaves in one way a real server can.

    python tests/servers/zoo_server.py MODE

It answers like a correct minimal server (tools, context middleware) until its
misbehaviour starts. tests/test_zoo.py asserts the suite ends every run with
a verdict and a reason within its timeout, loses no memory to floods, and
leaves no process behind.
"""

from __future__ import annotations

import json
import os
import sys
import time

MODES = {
    "hang-at-initialize": "never answers initialize",
    "hang-mid-call": "answers until the first tools/call, then never again",
    "hang-after-initialize": "answers initialize, then nothing at all",
    "crash-mid-run": "exits with code 3 at the first middleware/invoke, after a line on stderr",
    "exit-at-once": "exits before reading anything",
    "garbage": "prints a non-JSON line before every answer",
    "partial-json": "answers tools/list with half a JSON object",
    "wrong-ids": "answers every request after initialize with id + 1000",
    "duplicate-ids": "answers every request twice",
    "huge-result": "answers tools/list with a 50 MB result",
    "notification-flood": "sends 20,000 log notifications before answering tools/list",
    "drip": "writes its answers one byte at a time",
    "endless-notifications": "after initialize, sends log notifications without end and answers nothing else",
}


def write(line: str, drip: bool = False) -> None:
    if drip:
        for ch in line + "\n":
            sys.stdout.write(ch)
            sys.stdout.flush()
            time.sleep(0.0005)
    else:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def reply(msg: dict, result: dict) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result})


def main(mode: str) -> None:
    if mode == "exit-at-once":
        sys.exit(1)
    flooded = False
    for raw in sys.stdin:  # no peerkit serve loop: each zoo member misbehaves at the wire on purpose
        msg = json.loads(raw)
        method, rid = msg.get("method"), msg.get("id")
        if rid is None:
            continue
        if method == "initialize":
            if mode == "hang-at-initialize":
                time.sleep(3600)
            write(reply(msg, {"protocolVersion": "2025-11-25", "serverInfo": {"name": "zoo", "version": "0"},
                              "capabilities": {"tools": {}, "contextMiddleware": {}}}), mode == "drip")
            continue
        if mode == "endless-notifications":
            note = (json.dumps({"jsonrpc": "2.0", "method": "notifications/message",
                                "params": {"level": "info", "data": "flood"}}) + "\n") * 1000
            while True:  # until the suite closes the pipe (then the write fails and the process ends)
                sys.stdout.write(note)
                sys.stdout.flush()
        if mode == "hang-after-initialize":
            continue  # reads on, answers nothing
        if mode == "hang-mid-call" and method == "tools/call":
            time.sleep(3600)
        if mode == "crash-mid-run" and method == "middleware/invoke":
            sys.stderr.write("zoo: segmentation fault (simulated)\n")
            sys.stderr.flush()
            os._exit(3)
        if mode == "garbage":
            write("this is not JSON")
        if method == "tools/list":
            tools = [{"name": "conformance_memories", "preprocessor": True, "inputSchema": {"type": "object"}}]
            if mode == "partial-json":
                write(reply(msg, {"tools": tools})[:25])
                continue
            if mode == "huge-result":
                tools.append({"name": "huge", "inputSchema": {"type": "object"}, "description": "x" * 50_000_000})
            if mode == "notification-flood" and not flooded:  # once, before the first answer to tools/list
                flooded = True
                note = json.dumps({"jsonrpc": "2.0", "method": "notifications/message",
                                   "params": {"level": "info", "data": "flood"}})
                sys.stdout.write((note + "\n") * 20_000)
            result = {"tools": tools}
        elif method == "tools/call":
            query = ((msg.get("params") or {}).get("arguments") or {}).get("query", "")
            result = {"content": [{"type": "text", "text": f"memories for: {query}"}]}
        elif method == "ping":
            result = {}
        elif method == "middleware/list":
            result = {"middleware": [{"name": "conformance_identity", "inputSchema": {"type": "object"}}]}
        elif method == "middleware/invoke":
            params = msg.get("params") or {}
            if params.get("name") != "conformance_identity" or not isinstance(params.get("context"), list):
                write(json.dumps({"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": "bad invoke"}}))
                continue
            result = {"content": params["context"]}
        else:
            write(json.dumps({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}}))
            continue
        out = reply(msg, result)
        if mode == "wrong-ids":
            out = json.dumps({"jsonrpc": "2.0", "id": rid + 1000 if isinstance(rid, int) else f"{rid}-other",
                              "result": result})
        write(out, mode == "drip")
        if mode == "duplicate-ids":
            write(out)


if __name__ == "__main__":
    main(sys.argv[1])
