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

The tree's CPU is mostly the server's (the reference server's start-up alone is about a second of imports),
and the server's CPU for the same requests moves by a third from run to run on a virtual machine. So each
run's own process also writes its own CPU (RUSAGE_SELF, as it exits) to a file, and a second table splits
the tree: the suite's process and the bare client's, their difference (what the suite adds: recording,
judging, reports, pytest and the imports), and the server's share under each.

Rows of the speed table this prints: "suite CPU against an SDK-free server ÷ a bare client" (fixture),
"the same against the reference server" and "server-role CLI run against the reference server, wall"
(reference).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
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


# Where a measured process writes its own CPU: named in the environment of both sides (the suite's launcher, this
# script's bare mode).
OWN_CPU = Path(os.environ.get("MCPX_BENCH_OWN_CPU") or Path(tempfile.mkdtemp(prefix="mcpx-bench-own-")) / "own-cpu")
ENV["MCPX_BENCH_OWN_CPU"] = str(OWN_CPU)

# `python -m conformance`, and as it exits (the CLI runs the exit handlers before os._exit) its own CPU into
# OWN_CPU: what RUSAGE_SELF counts, without the server it waited for.
SUITE_LAUNCHER = """import atexit, os, resource, runpy, sys
def note():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    with open(os.environ["MCPX_BENCH_OWN_CPU"], "w") as file:
        file.write(repr(usage.ru_utime + usage.ru_stime))
atexit.register(note)
sys.argv[0] = "mcp-ext-conformance"
runpy.run_module("conformance", run_name="__main__", alter_sys=True)
"""


def own_cpu() -> float:
    """The CPU the last run's own process wrote (nan when it wrote none)."""
    try:
        return float(OWN_CPU.read_text())
    except (OSError, ValueError):
        return float("nan")


def measured(argv: list[str], cwd: Path) -> tuple[float, float, float]:
    """(CPU seconds of the process tree, wall seconds, CPU seconds of the process alone) of one run of `argv`."""
    OWN_CPU.unlink(missing_ok=True)
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=ENV)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    # ru_* of wait4 hold the child and every descendant it waited for (the server it started).
    return usage.ru_utime + usage.ru_stime, wall, own_cpu()


def suite_argv(checkout: Path, server: str, report_dir: str) -> list[str]:
    python = python_of(checkout)
    return [python, "-c", SUITE_LAUNCHER, "server", "--command", f"{python} -m {SERVERS[server]}",
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
    usage = resource.getrusage(resource.RUSAGE_SELF)
    OWN_CPU.parent.mkdir(exist_ok=True)
    OWN_CPU.write_text(repr(usage.ru_utime + usage.ru_stime))


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
    splits: dict[str, tuple] = {}
    for server in ([*SERVERS] if args.server == "both" else [args.server]):
        script_file = work / f"{server}.json"
        script_file.write_text(json.dumps(record_script(server)))
        bare_argv = [python_of(ROOT), str(Path(__file__).resolve()), "--bare", str(script_file),
                     python_of(ROOT), "-m", SERVERS[server]]
        for name, checkout in sides:  # a first run of each compiles what it imports
            measured(suite_argv(checkout, server, str(work / name)), checkout)
        measured(bare_argv, ROOT)
        runs: dict[str, list[tuple[float, float, float]]] = {name: [] for name, _ in sides}
        bares: list[tuple[float, float, float]] = []
        for i in range(args.repeat):
            order = sides if i % 2 == 0 else sides[::-1]
            for name, checkout in order:
                runs[name].append(measured(suite_argv(checkout, server, str(work / name)), checkout))
            bares.append(measured(bare_argv, ROOT))
        bare_cpu = statistics.median(c for c, _, _ in bares)
        bare_wall = statistics.median(w for _, w, _ in bares)
        for name, _ in sides:
            cpu = statistics.median(c for c, _, _ in runs[name])
            wall = statistics.median(w for _, w, _ in runs[name])
            each = " ".join(f"{c / b:.2f}" for (c, _, _), (b, _, _) in zip(runs[name], bares))
            print(f"{server:<10} {name:<7} {cpu:>12.3f} {bare_cpu:>11.3f} {cpu / bare_cpu:>9.2f}x "
                  f"{wall:>13.3f} {bare_wall:>12.3f}   {each}")
        splits[server] = (bares, runs)
    print("\nthe same runs, the tree split: each side's own process, and the server (the tree less the process);"
          " medians")
    print(f"{'server':<10} {'side':<7} {'own CPU s':>10} {'bare own s':>11} {'suite adds s':>13} "
          f"{'server s':>9} {'server, bare s':>15}")
    for server, (bares, runs) in splits.items():
        bare_own = statistics.median(o for _, _, o in bares)
        bare_server = statistics.median(c - o for c, _, o in bares)
        for name, rows in runs.items():
            own = statistics.median(o for _, _, o in rows)
            added = statistics.median(o - b for (_, _, o), (_, _, b) in zip(rows, bares))
            print(f"{server:<10} {name:<7} {own:>10.3f} {bare_own:>11.3f} {added:>13.3f} "
                  f"{statistics.median(c - o for c, _, o in rows):>9.3f} {bare_server:>15.3f}")


if __name__ == "__main__":
    main()
