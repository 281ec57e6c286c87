"""Hostile hosts: each breaks the harness contract (HARNESS.md §2) in one way.

    python tests/hosts/zoo_host.py MODE MARKER

MARKER only makes the process (and anything it starts) findable by the tests.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

MODES = {
    "never-prints": "reads every turn and never answers",
    "garbage": "answers with a line that is not JSON",
    "partial-json": "answers with half a JSON object",
    "not-an-answer": "answers with JSON that is not an assistant message",
    "exits-before-last-turn": "answers the first turn, then exits with code 3",
    "exit-at-once": "exits with code 1 before reading anything",
    "huge-line": "answers with a 5 MB line",
    "line-flood": "prints 200,000 lines for the first turn",
    "ignores-stdin-close": "answers every turn, then never exits",
    "grandchild-then-hang": "starts a grandchild and every stdio scenario server, then never answers",
}


def answer(text: str = "hi") -> None:
    print(json.dumps({"role": "assistant", "content": text}), flush=True)


def main() -> int:
    mode, marker = sys.argv[1], sys.argv[2]
    if mode == "exit-at-once":
        print("zoo host: giving up", file=sys.stderr)
        return 1
    if mode == "grandchild-then-hang":
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", marker])
        config = json.load(open(os.environ["MCPX_CONFIG"]))
        for spec in config["mcpServers"].values():
            if "command" in spec:  # started and abandoned: the harness must still leave nothing behind
                subprocess.Popen([spec["command"], *spec["args"]], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 env={**os.environ, **spec.get("env", {})}, start_new_session=True)
    for index, line in enumerate(sys.stdin, 1):
        if mode in ("never-prints", "grandchild-then-hang"):
            continue
        if mode == "garbage":
            print("Sure! Here is my answer:", flush=True)
        elif mode == "partial-json":
            print('{"role": "assistant", "cont', flush=True)
        elif mode == "not-an-answer":
            print(json.dumps({"answer": 42}), flush=True)
        elif mode == "huge-line":
            answer("x" * 5_000_000)
        elif mode == "line-flood":
            sys.stdout.write("noise\n" * 200_000)
            sys.stdout.flush()
        elif mode == "exits-before-last-turn" and index == 2:
            print("zoo host: crashed on turn 2", file=sys.stderr)
            return 3
        else:
            answer()
    if mode == "ignores-stdin-close":
        time.sleep(600)
    return 0


if __name__ == "__main__":
    sys.exit(main())
