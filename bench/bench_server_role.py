"""Benchmark: the full server-role run against the reference server, against its floor.

    python bench/bench_server_role.py [--repeat N]

For stdio and for Streamable HTTP, against the reference server (on the SDK), and over stdio against the
suite's SDK-free fixture server (`python -m conformance.gateway.upstream`, which serves every fixture and
starts in a twentieth of a second), it measures, median of N runs:
- suite:  recording every profile and judging every check, in-process (what the
          CLI does minus pytest start-up);
- cli:    `mcp-ext-conformance server ...` end to end, as a user runs it;
- floor:  the very same requests (taken from a suite recording), replayed by a
          minimal raw JSON-RPC client with the same shape (one connection per
          profile, the four in parallel), with no recording or judging.
and prints suite/floor: the price of the suite's machinery over the protocol itself.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from conformance.model import REGISTRY  # noqa: E402
from conformance.peerkit import free_port, spawn  # noqa: E402
from conformance.runner import evaluate  # noqa: E402
from conformance.server import record as server_record  # noqa: E402
from conformance.targets import TargetSpec  # noqa: E402

REFERENCE = [sys.executable, "-m", "reference_servers.everything"]
FIXTURE = [sys.executable, "-m", "conformance.gateway.upstream"]


def suite_run(spec: TargetSpec):
    recordings = server_record.record_sync(spec, server_record.PROFILES, claimed=set(), run_timeout=120)
    results = [evaluate(c, recordings[c.profile]) for c in REGISTRY.values() if c.role == "server"]
    return recordings, results


def sent_requests(recordings) -> dict[str, list[dict]]:
    """Per profile, every message the suite sent, in order."""
    return {p: [e.message for e in rec.wire if e.direction == "out"] for p, rec in recordings.items()}


def floor_stdio(script: dict[str, list[dict]], command: list[str] = REFERENCE) -> None:
    def one(messages):
        proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                cwd=ROOT, text=True, bufsize=1)
        for msg in messages:
            proc.stdin.write(json.dumps(msg) + "\n")
            proc.stdin.flush()
            if "id" in msg and "method" in msg:
                while True:  # skip notifications until the response arrives
                    reply = json.loads(proc.stdout.readline())
                    if reply.get("id") == msg["id"] and "method" not in reply:
                        break
        proc.stdin.close()
        proc.wait()

    threads = [threading.Thread(target=one, args=(m,)) for m in script.values()]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def floor_http(script: dict[str, list[dict]], url: str) -> None:
    def one(messages):
        headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        with httpx.Client(timeout=30) as client:
            for msg in messages:
                resp = client.post(url, json=msg, headers=headers)
                if msg.get("method") == "initialize":
                    headers["Mcp-Session-Id"] = resp.headers.get("mcp-session-id", "")
                    headers["MCP-Protocol-Version"] = "2025-11-25"
            client.delete(url, headers=headers)

    threads = [threading.Thread(target=one, args=(m,)) for m in script.values()]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def timed(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def cli(argv: list[str]) -> None:
    subprocess.run([sys.executable, "-m", "conformance", "server", *argv, "--report-dir", "/tmp/mcpx-bench"],
                   cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    os.chdir(ROOT)
    rows = []

    stdio = TargetSpec("stdio", command=" ".join(REFERENCE))
    recordings, results = suite_run(stdio)
    bad = [r.id for r in results if r.outcome in ("fail", "warn")]
    script = sent_requests(recordings)
    n_messages = sum(len(m) for m in script.values())
    rows.append(("stdio", timed(lambda: suite_run(stdio), args.repeat),
                 timed(lambda: cli(["--command", " ".join(REFERENCE)]), args.repeat),
                 timed(lambda: floor_stdio(script), args.repeat)))

    fixture = TargetSpec("stdio", command=" ".join(FIXTURE))
    f_recordings, _ = suite_run(fixture)
    f_script = sent_requests(f_recordings)
    rows.append(("stdio (fixture server)", timed(lambda: suite_run(fixture), args.repeat),
                 timed(lambda: cli(["--command", " ".join(FIXTURE)]), args.repeat),
                 timed(lambda: floor_stdio(f_script, FIXTURE), args.repeat)))

    port = free_port()
    with spawn([*REFERENCE, "--http", str(port)], cwd=ROOT) as reference:
        assert reference.wait_listening(port), f"reference server did not start: {reference.stderr_tail()}"
        url = f"http://127.0.0.1:{port}/mcp"
        http = TargetSpec("http", url=url)
        h_recordings, _ = suite_run(http)
        h_script = sent_requests(h_recordings)
        rows.append(("http", timed(lambda: suite_run(http), args.repeat),
                     timed(lambda: cli(["--url", url]), args.repeat),
                     timed(lambda: floor_http(h_script, url), args.repeat)))

    print(f"server-role run against the reference server: {len(results)} checks, {n_messages} messages sent "
          f"over 4 connections; median of {args.repeat} runs; non-passing: {bad or 'none'}")
    print(f"{'transport':<24} {'suite s':>9} {'cli s':>9} {'floor s':>9} {'suite/floor':>12} {'cli/floor':>10}")
    for name, suite_s, cli_s, floor_s in rows:
        print(f"{name:<24} {suite_s:>9.3f} {cli_s:>9.3f} {floor_s:>9.3f} {suite_s / floor_s:>12.2f} "
              f"{cli_s / floor_s:>10.2f}")


if __name__ == "__main__":
    main()
