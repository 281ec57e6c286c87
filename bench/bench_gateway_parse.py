"""Benchmark: what the reference gateway's raw stdio path does to each line before forwarding it.

    python bench/bench_gateway_parse.py

`parse_line` (parse, depth judged) and `unreadable` (the JSON-RPC checks) on a tools/call request, its
result, and a 1 MB text result full of brackets and commas: the best of 7 runs, in microseconds per
message. It is the per-message work bench/bench_gateway.py's added latency holds, without the pipes'
noise (on a shared machine that bench's medians vary by 2x from run to run).

Then a 4 MiB text result, parsed on the event loop and through the parser process (`OffLoopParser`, for lines
past 1 MiB): the loop thread's CPU for the line, in how many loop steps, and the longest step. The longest step
is what another session's ping waits behind.
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
    off_loop()


def off_loop() -> None:
    import asyncio
    import asyncio.events
    import time

    try:
        from reference_servers.gateway.proxy import OffLoopParser
    except ImportError:  # a tree from before the parser process
        return
    steps: list[float] = []
    run = asyncio.events.Handle._run

    def timed(handle) -> None:
        started = time.thread_time()
        run(handle)
        steps.append(time.thread_time() - started)

    line = json.dumps({"jsonrpc": "2.0", "id": 3, "result": {"content": [{"type": "text", "text": "x" * 4 * 2**20}]}})
    line_bytes = line.encode() + b"\n"

    async def measure() -> None:
        parser = OffLoopParser.of_running_loop()
        await parser.parse(line_bytes)  # starts the parser process
        for _ in range(3):
            steps.clear()
            started = time.thread_time()
            await parser.parse(line_bytes)
            total = time.thread_time() - started
            print(f"4 MiB text, parser process: {total * 1e3:.1f} ms of the loop thread's CPU in {len(steps)} steps, "
                  f"the longest {max(steps) * 1e3:.2f} ms")
        for _ in range(3):
            started = time.thread_time()
            parse_line(line_bytes)
            print(f"4 MiB text, on the loop: {(time.thread_time() - started) * 1e3:.1f} ms in one step")

    asyncio.events.Handle._run = timed  # type: ignore[method-assign]
    try:
        asyncio.run(measure())
    finally:
        asyncio.events.Handle._run = run  # type: ignore[method-assign]


if __name__ == "__main__":
    main()
