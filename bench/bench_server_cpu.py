"""Benchmark: the CPU a server-role CLI run costs, against a bare client sending the same requests.

    python bench/bench_server_cpu.py [--server fixture|reference|both] [--repeat N] [--before CHECKOUT]

For the suite's SDK-free fixture server (`python -m conformance.gateway.upstream`) and for the reference
server (`python -m reference_servers.everything`, on the SDK), over stdio, every profile on one connection:
- suite: `mcp-ext-conformance server --command SERVER --report-dir DIR` end to end, as a user runs it
  (interpreter start-up, pytest, recording, judging, every report written);
- bare:  a bare client in its own interpreter (this script's `--bare` mode) starting the same server and
  sending the very same requests (taken from a suite recording): the handshake, then every other request
  at once, then every answer read; no recording, no judging, no reports.
CPU is user + system time of the whole process tree (the server included: the CLI and the bare client
both wait for it), from `os.wait4`. Runs are interleaved (suite, bare, suite, bare, ...; with `--before`,
the checkout's suite too in every round), so a busy moment of the machine falls on every side alike, and
the medians' ratios are printed: suite CPU / bare CPU, and the suite's wall time.

Rows of the speed table this prints: "suite CPU against an SDK-free server ÷ a bare client" (fixture),
"the same against the reference server" and "server-role CLI run against the reference server, wall"
(reference).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bare_client import replay_stdio, sent_requests

ROOT = Path(__file__).resolve().parent.parent
SERVERS = {"fixture": "conformance.gateway.upstream", "reference": "reference_servers.everything"}


def python_of(checkout: Path) -> str:
    venv = checkout / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


# Bytecode is cached as an installed package has it (pip compiles it), outside the checkouts, which stay
# untouched: under PYTHONDONTWRITEBYTECODE=1 every run would compile every module of a checkout again.
ENV = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
       "PYTHONPYCACHEPREFIX": tempfile.mkdtemp(prefix="mcpx-bench-pycache-")}


def measured(argv: list[str], cwd: Path) -> tuple[float, float]:
    """(CPU seconds of the process tree, wall seconds) of one run of `argv`."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=ENV)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    # ru_* of wait4 hold the child and every descendant it waited for (the server it started).
    return usage.ru_utime + usage.ru_stime, wall


def suite_argv(checkout: Path, server: str, report_dir: str) -> list[str]:
    python = python_of(checkout)
    return [python, "-m", "conformance", "server", "--command", f"{python} -m {SERVERS[server]}",
            "--report-dir", report_dir]


def record_script(server: str) -> list[dict]:
    """Every message the suite sends on the run's one connection, in order (the handshake once)."""
    sys.path.insert(0, str(ROOT))
    from conformance.server import record as server_record
    from conformance.targets import TargetSpec

    spec = TargetSpec("stdio", command=f"{python_of(ROOT)} -m {SERVERS[server]}")
    return sent_requests(server_record.record_sync(spec, server_record.PROFILES, claimed=set(), run_timeout=120))


def bare(script_file: str, command: list[str]) -> None:
    """The bare client: the handshake, then every other request at once, then every answer read."""
    replay_stdio(json.loads(Path(script_file).read_text()), command, ROOT)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", choices=[*SERVERS, "both"], default="both")
    parser.add_argument("--repeat", type=int, default=5, help="rounds (one run of each side per round)")
    parser.add_argument("--before", type=Path, help="another checkout (with its .venv) measured alongside")
    parser.add_argument("--bare", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.bare:
        bare(args.bare[0], args.bare[1:])
        return
    sides = [("after", ROOT)] + ([("before", args.before.resolve())] if args.before else [])
    work = Path(tempfile.mkdtemp(prefix="mcpx-bench-cpu-"))
    print(f"median of {args.repeat} interleaved rounds; CPU of the process tree (server included)")
    print(f"{'server':<10} {'side':<7} {'suite CPU s':>12} {'bare CPU s':>11} {'CPU ratio':>10} "
          f"{'suite wall s':>13} {'bare wall s':>12}   every CPU ratio, by round")
    for server in ([*SERVERS] if args.server == "both" else [args.server]):
        script_file = work / f"{server}.json"
        script_file.write_text(json.dumps(record_script(server)))
        bare_argv = [python_of(ROOT), str(Path(__file__).resolve()), "--bare", str(script_file),
                     python_of(ROOT), "-m", SERVERS[server]]
        for name, checkout in sides:  # a first run of each compiles what it imports
            measured(suite_argv(checkout, server, str(work / name)), checkout)
        measured(bare_argv, ROOT)
        runs: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in sides}
        bares: list[tuple[float, float]] = []
        for i in range(args.repeat):
            order = sides if i % 2 == 0 else sides[::-1]
            for name, checkout in order:
                runs[name].append(measured(suite_argv(checkout, server, str(work / name)), checkout))
            bares.append(measured(bare_argv, ROOT))
        bare_cpu = statistics.median(c for c, _ in bares)
        bare_wall = statistics.median(w for _, w in bares)
        for name, _ in sides:
            cpu = statistics.median(c for c, _ in runs[name])
            wall = statistics.median(w for _, w in runs[name])
            each = " ".join(f"{c / b:.2f}" for (c, _), (b, _) in zip(runs[name], bares))
            print(f"{server:<10} {name:<7} {cpu:>12.3f} {bare_cpu:>11.3f} {cpu / bare_cpu:>9.2f}x "
                  f"{wall:>13.3f} {bare_wall:>12.3f}   {each}")


if __name__ == "__main__":
    main()
