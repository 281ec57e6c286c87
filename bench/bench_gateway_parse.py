"""Benchmark: what the reference gateway's raw stdio path does to each line before forwarding it.

    python bench/bench_gateway_parse.py

`parse_line` (parse, depth judged) and `unreadable` (the JSON-RPC checks) on a tools/call request, its
result, and a 1 MB text result full of brackets and commas: the best of 7 runs, in microseconds per
message. It is the per-message work bench/bench_gateway.py's added latency holds, without the pipes'
noise (on a shared machine that bench's medians vary by 2x from run to run).
"""

from __future__ import annotations

import inspect
import json
import sys
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from reference_servers.gateway.proxy import parse_line, unreadable  # noqa: E402

CHECKED = "depth_checked" in inspect.signature(unreadable).parameters  # an older tree judged depth in unreadable
LINES = {
    "request": {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                "params": {"name": "conformance_echo", "arguments": {"text": "hello world"}}},
    "response": {"jsonrpc": "2.0", "id": "g7", "result": {"content": [{"type": "text", "text": "hello world"}],
                                                          "structuredContent": {"echo": "hello world"}}},
    "1 MB result": {"jsonrpc": "2.0", "id": "g8",
                    "result": {"content": [{"type": "text", "text": "x, y: [z] " * 100_000}]}},
}


def main() -> None:
    for name, message in LINES.items():
        line = json.dumps(message).encode() + b"\n"
        if CHECKED:
            def once(line: bytes = line):
                return unreadable(parse_line(line), True)
        else:
            def once(line: bytes = line):
                return unreadable(parse_line(line))
        number = 20_000 if len(line) < 1000 else 20
        best = min(timeit.repeat(once, number=number, repeat=7)) / number
        print(f"{name}: {best * 1e6:.1f} us per message (parse_line + unreadable)")


if __name__ == "__main__":
    main()
