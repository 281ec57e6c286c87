"""Benchmark: the reference server under the attacks its limits answer, over Streamable HTTP on loopback.

    python bench/bench_server_limits.py [--value-chars N] [--attackers N]

1. Amplification: middleware/invoke pii_restoration with 150 handles and one large value behind them (the
   default limits): the size of the answer and the server's resident memory after it.
2. Abandoned work: `--attackers` concurrent interceptor/invoke calls of some seconds each (pii-detector over
   40,000 short strings), then as many middleware/invoke calls (pii_redaction over 40,000 blocks), against a server with maxSeconds 0.5 and maxConcurrent 2: how long each caller waits
   for its answer, how much CPU the server burns after the last answer (work nobody waits for), and a ping's
   latency on another session while the attack runs (against its latency at idle).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from conformance.client.session import PROTOCOL_VERSION  # noqa: E402
from conformance.targets import TargetSpec  # noqa: E402
from conformance.targets.peerkit import free_port, spawn  # noqa: E402

INIT = {"protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": {"name": "limits-bench", "version": "0"}}


def proc_stat(pid: int) -> tuple[float, int]:
    """(CPU seconds, resident KiB) of a process."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    with open(f"/proc/{pid}/status") as f:
        rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
    return (int(fields[11]) + int(fields[12])) / 100, rss


class Server:
    def __init__(self, config: dict):
        self.dir = tempfile.TemporaryDirectory()
        path = Path(self.dir.name) / "config.json"
        path.write_text(json.dumps(config))
        self.port = free_port()
        self.group = spawn([sys.executable, "-m", "reference_servers.everything", "--http", str(self.port),
                            "--config", str(path)], cwd=ROOT, env={**os.environ, "MCPX_MEMORY_STORE": ":memory:"})

    def __enter__(self):
        self.group.__enter__()
        if not self.group.wait_listening(self.port):
            raise SystemExit(self.group.stderr_tail(lines=20))
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        return self

    def __exit__(self, *exc):
        self.group.__exit__(*exc)
        self.dir.cleanup()


async def session(url: str):
    conn = TargetSpec("http", url=url, timeout=300, max_message_bytes=2 ** 31).connect()
    await conn.__aenter__()
    await conn.request("initialize", INIT)
    await conn.notify("notifications/initialized")
    return conn


def amplification(value_chars: int) -> None:
    print(f"\n1. pii_restoration, 150 handles, one value of {value_chars:,} characters (request about "
          f"{value_chars / 1e6:.1f} MB)")
    with Server({}) as server:
        async def main():
            conn = await session(server.url)
            try:
                started = time.monotonic()
                ex = await conn.request("middleware/invoke", {
                    "name": "pii_restoration", "arguments": {"redactions": {"EMAIL_1": "x" * value_chars}},
                    "context": [{"type": "text", "text": "[EMAIL_1]" * 150}]})
                return ex, time.monotonic() - started
            finally:
                await conn.__aexit__(None, None, None)

        ex, elapsed = anyio.run(main)
        _, rss = proc_stat(server.group.pid)
    answer = json.dumps(ex.response) if ex.response is not None else ex.outcome_text()
    error = (ex.response or {}).get("error")
    print(f"   answer: {len(answer) / 1e6:.2f} MB in {elapsed:.2f} s"
          + (f", error {error['code']} {error.get('data', {}).get('limit')}" if error else ", a result")
          + f"; server resident memory after it: {rss / 1024:.0f} MiB")


def abandoned_work(attackers: int, method: str) -> None:
    print(f"\n2. {attackers} {method} calls of some seconds each (40,000 strings or blocks of PII), "
          f"maxSeconds 0.5, maxConcurrent 2")
    notes = [f"call 415-555-{i % 10000:04d} or mail user{i}@example.com" for i in range(40_000)]
    if method == "interceptor/invoke":
        params = {"name": "pii-detector", "event": "tools/call", "phase": "request",
                  "payload": {"arguments": {"notes": notes}}}
    else:
        params = {"name": "pii_redaction", "arguments": {}, "context": [{"type": "text", "text": n} for n in notes]}
    with Server({"limits": {"maxSeconds": 0.5, "maxConcurrent": 2, "maxJsonValues": 400_000}}) as server:
        pid = server.group.pid
        figures: dict = {"waits": [], "pings": []}

        async def main():
            attacker, other = await session(server.url), await session(server.url)
            try:
                for _ in range(10):
                    started = time.monotonic()
                    await other.request("ping", {})
                    figures.setdefault("idle", []).append(time.monotonic() - started)

                async def attack():
                    started = time.monotonic()
                    ex = await attacker.request(method, params)
                    figures["waits"].append(time.monotonic() - started)
                    error = (ex.response or {}).get("error")
                    figures.setdefault("answers", []).append(error["data"].get("limit") if error else "result")

                async def pings():
                    await anyio.sleep(0.3)
                    while len(figures["waits"]) < attackers:
                        started = time.monotonic()
                        await other.request("ping", {})
                        figures["pings"].append(time.monotonic() - started)
                        await anyio.sleep(0.1)

                async with anyio.create_task_group() as tg:
                    for _ in range(attackers):
                        tg.start_soon(attack)
                    tg.start_soon(pings)
                figures["cpu_at_last_answer"] = proc_stat(pid)[0]
            finally:
                await other.__aexit__(None, None, None)
                await attacker.__aexit__(None, None, None)

        anyio.run(main)
        time.sleep(5)
        after = proc_stat(pid)[0] - figures["cpu_at_last_answer"]
    answers = {a: figures["answers"].count(a) for a in set(figures["answers"])}
    print(f"   answers: {answers}; caller waits: median {statistics.median(figures['waits']):.2f} s, "
          f"longest {max(figures['waits']):.2f} s")
    print(f"   server CPU in the 5 s after the last answer: {after:.2f} s")
    pings = figures["pings"] or [float("nan")]
    print(f"   another session's ping: idle median {statistics.median(figures['idle']) * 1000:.1f} ms; under attack "
          f"median {statistics.median(pings) * 1000:.1f} ms, worst {max(pings) * 1000:.1f} ms ({len(pings)} pings)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--value-chars", type=int, default=200_000,
                        help="the restored value's length (default 200,000; the issue used 2,000,000)")
    parser.add_argument("--attackers", type=int, default=6)
    args = parser.parse_args()
    amplification(args.value_chars)
    abandoned_work(args.attackers, "interceptor/invoke")
    abandoned_work(args.attackers, "middleware/invoke")


if __name__ == "__main__":
    main()
