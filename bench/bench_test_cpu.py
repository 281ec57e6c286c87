"""Benchmark: the CPU a selection of the suite's own tests costs, this checkout against another, taking turns.

    python bench/bench_test_cpu.py --before CHECKOUT [--rounds N] TEST_FILE_OR_ID...

Each round runs `python -m pytest -q -n 0 SELECTION` once in each checkout (with that checkout's `.venv`), in
alternating order, and prints the wall seconds and the CPU seconds of the whole process tree (pytest and every
process it started and waited for: servers, hosts, fork servers and their children). Serial, so that the CPU
is the tests' own and not another worker's. Then the medians. On a machine whose speed moves by a third, the
CPU of a side's run moves with it: compare medians of the same rounds, not figures of different days.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(checkout: Path, selection: list[str]) -> tuple[float, float, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    done = subprocess.run([str(checkout / ".venv" / "bin" / "python"), "-m", "pytest", "-q", "-n", "0", *selection],
                          cwd=checkout, capture_output=True, text=True)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    last = (done.stdout.strip().splitlines() or ["(no output)"])[-1]
    return wall, cpu, last


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", required=True, type=Path, help="another checkout, with its own .venv")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("selection", nargs="+", help="test files or ids, as pytest takes them")
    args = parser.parse_args()
    sides = {"after": ROOT, "before": args.before.resolve()}
    for name, checkout in sides.items():
        if not (checkout / ".venv" / "bin" / "python").exists():
            print(f"bench_test_cpu: {checkout} has no .venv/bin/python", file=sys.stderr)
            return 2
    figures: dict[str, list[tuple[float, float]]] = {name: [] for name in sides}
    for round_ in range(args.rounds):
        order = list(sides) if round_ % 2 == 0 else list(reversed(sides))
        for name in order:
            wall, cpu, last = run(sides[name], args.selection)
            figures[name].append((wall, cpu))
            print(f"round {round_ + 1} {name:6} wall {wall:7.1f} s  cpu {cpu:7.1f} s  {last}", flush=True)
    for name, runs in figures.items():
        print(f"{name:6} median wall {statistics.median(w for w, _ in runs):7.1f} s  "
              f"median cpu {statistics.median(c for _, c in runs):7.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
