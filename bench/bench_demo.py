"""Benchmark: `mcp-ext-conformance demo`, its wall time and each role's.

    python bench/bench_demo.py [--repeat N] [--before /path/to/other/mcp-ext-conformance]

Runs the demo N times (default 3) and prints, per run, the demo's wall time and each role's: taken from the
demo's summary where it shows them (`host  exit 0  9.8 s  reports in ...`), otherwise (a demo that runs the
roles one after another and prints no times) from when each role's `=== name ===` header appeared. With
`--before`, each run of this checkout's demo is paired with one of the other command's, interleaved (before,
after, before, after, ...), so that both see the same load; the medians and their ratio close the table.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROLES = ("server-stdio", "server-http", "host", "gateway")
SUMMARY = re.compile(r"^\s+(\S+)\s+exit (\d+)\s+(?:([\d.]+) s\s+)?reports in ")
HEADER = re.compile(r"^=== (\S+) ===$")


def this_demo() -> str:
    found = Path(sys.executable).parent / "mcp-ext-conformance"
    return str(found) if found.exists() else shutil.which("mcp-ext-conformance") or "mcp-ext-conformance"


def run_demo(command: str) -> dict:
    """One demo run: {"wall": s, "codes": {role: exit code}, "roles": {role: s}}."""
    with tempfile.TemporaryDirectory(prefix="mcpx-bench-demo-") as tmp:
        started = time.monotonic()
        proc = subprocess.Popen([command, "demo", "--report-dir", tmp], stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True, cwd=tmp)
        assert proc.stdout is not None
        headers: list[tuple[str, float]] = []
        codes, roles = {}, {}
        for line in proc.stdout:
            line = line.rstrip("\n")
            if m := HEADER.match(line):
                headers.append((m.group(1), time.monotonic() - started))
            elif m := SUMMARY.match(line):
                codes[m.group(1)] = int(m.group(2))
                if m.group(3):
                    roles[m.group(1)] = float(m.group(3))
        proc.wait()
        wall = time.monotonic() - started
    if not roles:  # a serial demo: a role runs from its header to the next one
        for (name, at), (_, until) in zip(headers, headers[1:]):
            if name in ROLES:
                roles[name] = until - at
    return {"wall": wall, "codes": codes, "roles": roles}


def row(label: str, result: dict) -> str:
    roles = "  ".join(f"{name} {result['roles'].get(name, float('nan')):5.1f}" for name in ROLES)
    failed = [name for name, code in result["codes"].items() if code != 0]
    return f"  {label:<7} demo {result['wall']:5.1f} s   {roles}" + (f"   exit != 0: {failed}" if failed else "")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--before", help="another mcp-ext-conformance to compare with, interleaved")
    args = parser.parse_args()
    after = this_demo()
    print(f"demo wall and per-role wall (s); load {os.getloadavg()[0]:.1f}; after = {after}"
          + (f", before = {args.before}" if args.before else ""))
    results: dict[str, list[dict]] = {"before": [], "after": []}
    for _ in range(args.repeat):
        for label, command in (("before", args.before), ("after", after)):
            if command:
                results[label].append(run_demo(command))
                print(row(label, results[label][-1]), flush=True)
    print(f"load {os.getloadavg()[0]:.1f}")
    for label in ("before", "after"):
        if results[label]:
            walls = [r["wall"] for r in results[label]]
            roles = {name: statistics.median(r["roles"].get(name, float("nan")) for r in results[label])
                     for name in ROLES}
            print(f"  median {label:<7} demo {statistics.median(walls):5.1f} s   "
                  + "  ".join(f"{name} {roles[name]:5.1f}" for name in ROLES))
    if results["before"] and results["after"]:
        ratio = statistics.median(r["wall"] for r in results["after"]) / statistics.median(
            r["wall"] for r in results["before"])
        print(f"  after / before (demo wall, medians): {ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
