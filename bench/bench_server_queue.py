"""Benchmark: many large calls at once against the reference server's worker slots (issue 32, item 10).

    python bench/bench_server_queue.py [--calls 24] [--chars 4200000]

Starts `python -m reference_servers.everything --http PORT` (maxConcurrent 4, maxSeconds 120, the other limits
their defaults), sends `--calls` middleware/invoke calls of pii_redaction over `--chars` characters of text
each (PII every few words: seconds of work), all at once from one session, and prints how many were answered "busy" (-32000, maxQueued), how many
ran, how long the busy answers took, and the server's peak resident memory (sampled every 50 ms) against its
resident memory before the calls.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_server_limits import Server, session  # noqa: E402


def rss_mb(pid: int) -> float:
    total = 0
    for child in [pid, *[int(p) for p in os.listdir("/proc") if p.isdigit() and _parent(int(p)) == pid]]:
        try:
            for line in Path(f"/proc/{child}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024


def _parent(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return -1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=24)
    parser.add_argument("--chars", type=int, default=4_000_000)
    args = parser.parse_args()
    line = "Call +44 20 7946 0958 or mail jane.doe@example.com about order 4111 1111 1111 1111 today. "
    text = (line * (args.chars // len(line) + 1))[:args.chars]  # seconds of detection per call
    params = {"name": "pii_redaction", "arguments": {}, "context": [{"type": "text", "text": text}]}
    with Server({"limits": {"maxConcurrent": 4, "maxSeconds": 120}}) as server:
        pid = server.group.pid
        before = rss_mb(pid)
        peak, stop = [before], threading.Event()

        def sample() -> None:
            while not stop.is_set():
                peak.append(rss_mb(pid))
                time.sleep(0.05)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        outcomes: list[tuple[str, float]] = []

        async def run() -> None:
            conn = await session(server.url)
            try:
                started = time.perf_counter()

                async def one() -> None:
                    exchange = await conn.request("middleware/invoke", params)
                    response = exchange.response or {}
                    error = response.get("error") or {}
                    if not response:
                        print("no answer:", exchange.outcome_text()[:300])
                    kind = "busy" if (error.get("data") or {}).get("limit") == "maxQueued" else \
                        "result" if "result" in response else f"error {error.get('code')}"
                    outcomes.append((kind, time.perf_counter() - started))

                async with anyio.create_task_group() as tg:
                    for _ in range(args.calls):
                        tg.start_soon(one)
            finally:
                await conn.__aexit__(None, None, None)

        anyio.run(run)
        stop.set()
        sampler.join()
    busy = [t for kind, t in outcomes if kind == "busy"]
    kinds = sorted({kind for kind, _ in outcomes})
    print(f"{args.calls} calls of {args.chars} characters: " + ", ".join(
        f"{kind} {sum(1 for k, _ in outcomes if k == kind)}" for kind in kinds))
    done = [t for kind, t in outcomes if kind == "result"]
    if busy:
        print(f"busy answers after {min(busy):.2f}-{max(busy):.2f} s")
    if done:
        print(f"results after {min(done):.2f}-{max(done):.2f} s")
    print(f"server RSS {before:.0f} MB before, peak {max(peak):.0f} MB")


if __name__ == "__main__":
    main()
