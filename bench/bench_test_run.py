"""Benchmark: the README's test command, timed; for the notes, not run in CI (a whole run takes minutes).

    python bench/bench_test_run.py [--repo DIR] [--python PY] [pytest arguments after --]

The command is read from README.md's "Two commands" section (the code block that runs pytest), not written
here, so the figure stays the one a newcomer meets. `--durations=0` is added to it, and what follows `--` too
(a selection of files or `-k`, to try the script on a part of the suite). Prints the wall seconds, the counts
of pytest's last line (passed, skipped, ...) and the 10 slowest groups of tests by file, summed over setup,
call and teardown. `--repo` and `--python` run another checkout with its own interpreter, for A/B figures.
"""

from __future__ import annotations

import argparse
import re
import shlex
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DURATION_RE = re.compile(r"^([0-9.]+)s (setup|call|teardown)\s+(\S+?)(?:::\S.*)?$")
COUNT_RE = re.compile(r"([0-9]+) (passed|failed|skipped|xfailed|xpassed|errors?|deselected|warnings?)")


def readme_test_command(readme: Path) -> list[str]:
    """The pytest command of the README's "Two commands" section, without the venv activation before it."""
    text = readme.read_text(encoding="utf-8")
    section = re.search(r"^## Two commands\n(.*?)(?=^## )", text, re.M | re.S)
    if section is None:
        raise SystemExit(f"{readme}: no '## Two commands' section")
    for block in re.findall(r"```sh\n(.*?)```", section.group(1), re.S):
        if "pytest" in block:
            last = block.strip().split("&&")[-1]  # ". .venv/bin/activate && python -m pytest": the pytest part
            return shlex.split(last)
    raise SystemExit(f"{readme}: the 'Two commands' section has no pytest command")


def slowest_files(output: str, n: int = 10) -> list[tuple[str, float, int]]:
    """(file, seconds, entries) of the `n` files whose tests took longest in a `--durations=0` report."""
    seconds: dict[str, float] = defaultdict(float)
    entries: dict[str, int] = defaultdict(int)
    for line in output.splitlines():
        m = DURATION_RE.match(line.strip())
        if m:
            seconds[m.group(3)] += float(m.group(1))
            entries[m.group(3)] += 1
    ranked = sorted(seconds, key=seconds.__getitem__, reverse=True)[:n]
    return [(name, seconds[name], entries[name]) for name in ranked]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, default=ROOT, help="the checkout to run (default: this one)")
    parser.add_argument("--python", default=sys.executable, help="its interpreter (default: this one)")
    parser.add_argument("extra", nargs="*", help="more pytest arguments (after --)")
    args = parser.parse_args()
    command = readme_test_command(args.repo / "README.md")
    if command[0] in ("python", "python3"):
        command[0] = args.python
    command += ["--durations=0", "--durations-min=0", *args.extra]
    print("command:", shlex.join(command), flush=True)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=args.repo, capture_output=True, text=True)
    wall = time.perf_counter() - start
    last = next((line for line in reversed(done.stdout.splitlines()) if COUNT_RE.search(line)), "")
    counts = {kind: int(n) for n, kind in COUNT_RE.findall(last)}
    print(f"wall: {wall:.1f} s (exit {done.returncode})")
    print("counts:", ", ".join(f"{n} {kind}" for kind, n in counts.items()) or "none found")
    print(f"{'slowest files':<56} {'seconds':>9} {'entries':>8}")
    for name, seconds, entries in slowest_files(done.stdout):
        print(f"{name:<56} {seconds:>9.1f} {entries:>8}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
