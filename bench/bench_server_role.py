"""Benchmark: the full server-role run against the reference server, against its floor.

    python bench/bench_server_role.py [--repeat N]

For stdio and for Streamable HTTP, against the reference server (on the SDK), and over stdio against the
suite's SDK-free fixture server (`python -m conformance.gateway.upstream`, which serves every fixture and
starts in a twentieth of a second), it measures, median of N interleaved runs:
- suite:  recording every profile and judging every check, in-process (what the
          CLI does minus pytest start-up);
- cli:    `mcp-ext-conformance server ...` end to end, as a user runs it (every profile on one
          connection, the default), and with `--isolate-profiles` (a connection each);
- floor:  the very same requests (taken from a suite recording), replayed by a
          minimal raw JSON-RPC client on one connection: the handshake, then every
          other request at once, then every answer read; no recording, no judging.
and prints suite/floor and cli/floor: the price of the suite's machinery over the protocol itself.
"""

from __future__ import annotations

import argparse
import compileall
import concurrent.futures
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bare_client import replay_stdio, sent_requests, split_handshake  # noqa: E402

from conformance.core.model import REGISTRY  # noqa: E402
from conformance.core.runner import evaluate  # noqa: E402
from conformance.server import record as server_record  # noqa: E402
from conformance.targets import TargetSpec  # noqa: E402
from conformance.targets.peerkit import free_port, spawn  # noqa: E402

REFERENCE = [sys.executable, "-m", "reference_servers.everything"]
FIXTURE = [sys.executable, "-m", "conformance.gateway.upstream"]


def suite_run(spec: TargetSpec):
    recordings = server_record.record_sync(spec, server_record.PROFILES, claimed=set(), run_timeout=120)
    results = [evaluate(c, recordings[c.profile]) for c in REGISTRY.values() if c.role == "server"]
    return recordings, results


def floor_stdio(script: list[dict], command: list[str] = REFERENCE) -> None:
    replay_stdio(script, command, ROOT)


def floor_http(script: list[dict], url: str) -> None:
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    handshake, rest = split_handshake(script)
    with httpx.Client(timeout=30) as client:
        for msg in handshake:
            resp = client.post(url, json=msg, headers=headers)
            if msg.get("method") == "initialize":
                headers["Mcp-Session-Id"] = resp.headers.get("mcp-session-id", "")
                headers["MCP-Protocol-Version"] = "2025-11-25"
        with concurrent.futures.ThreadPoolExecutor(16) as pool:  # every other request at once
            list(pool.map(lambda m: client.post(url, json=m, headers=headers), rest))
        client.delete(url, headers=headers)


def interleaved(fns, repeat: int) -> list[float]:
    """The median of `repeat` runs of each function, taken in rounds (one run of each per round), so that
    a busy moment of the machine falls on all of them alike and their ratios stay fair."""
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for fn, out in zip(fns, times):
            t0 = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t0)
    return [statistics.median(t) for t in times]


def cli(argv: list[str]) -> None:
    subprocess.run([sys.executable, "-m", "conformance", "server", *argv, "--report-dir", "/tmp/mcpx-bench"],
                   cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    os.chdir(ROOT)
    # An installed package has its bytecode compiled (pip does it); a fresh clone under
    # PYTHONDONTWRITEBYTECODE=1 would otherwise compile every module on every run.
    for package in ("conformance", "reference_servers"):
        compileall.compile_dir(ROOT / package, quiet=1)
    rows = []

    stdio = TargetSpec("stdio", command=" ".join(REFERENCE))
    recordings, results = suite_run(stdio)
    bad = [r.id for r in results if r.outcome in ("fail", "warn")]
    script = sent_requests(recordings)
    n_messages = len(script)
    rows.append(("stdio", *interleaved([lambda: suite_run(stdio),
                                        lambda: cli(["--command", " ".join(REFERENCE)]),
                                        lambda: cli(["--command", " ".join(REFERENCE), "--isolate-profiles"]),
                                        lambda: floor_stdio(script)], args.repeat)))

    fixture = TargetSpec("stdio", command=" ".join(FIXTURE))
    f_recordings, _ = suite_run(fixture)
    f_script = sent_requests(f_recordings)
    rows.append(("stdio (fixture server)", *interleaved([lambda: suite_run(fixture),
                                                         lambda: cli(["--command", " ".join(FIXTURE)]),
                                                         lambda: cli(["--command", " ".join(FIXTURE),
                                                                      "--isolate-profiles"]),
                                                         lambda: floor_stdio(f_script, FIXTURE)], args.repeat)))

    port = free_port()
    with spawn([*REFERENCE, "--http", str(port)], cwd=ROOT) as reference:
        assert reference.wait_listening(port), f"reference server did not start: {reference.stderr_tail()}"
        url = f"http://127.0.0.1:{port}/mcp"
        http = TargetSpec("http", url=url)
        h_recordings, _ = suite_run(http)
        h_script = sent_requests(h_recordings)
        rows.append(("http", *interleaved([lambda: suite_run(http), lambda: cli(["--url", url]),
                                           lambda: cli(["--url", url, "--isolate-profiles"]),
                                           lambda: floor_http(h_script, url)], args.repeat)))

    print(f"server-role run against the reference server: {len(results)} checks, {n_messages} messages sent "
          f"on one connection; median of {args.repeat} runs; non-passing: {bad or 'none'}")
    print(f"{'transport':<24} {'suite s':>9} {'cli s':>9} {'isolated s':>11} {'floor s':>9} {'suite/floor':>12} "
          f"{'cli/floor':>10}")
    for name, suite_s, cli_s, isolated_s, floor_s in rows:
        print(f"{name:<24} {suite_s:>9.3f} {cli_s:>9.3f} {isolated_s:>11.3f} {floor_s:>9.3f} "
              f"{suite_s / floor_s:>12.2f} {cli_s / floor_s:>10.2f}")


if __name__ == "__main__":
    main()
