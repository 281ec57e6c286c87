"""Bench helper: run a module (`python bench/loop_blocks.py MODULE ARGS...`) with every event-loop step timed.

Each asyncio callback (a task step, a transport's read, a timer) that takes at least MCPX_LOOP_BLOCKS_MS
milliseconds of this thread's CPU time (default 2) is appended to the file MCPX_LOOP_BLOCKS as one line:
`UNIX-TIME CPU-MS WALL-MS WHAT`. CPU time, not wall time: on a loaded machine a step's wall time includes the
time the scheduler gave to other processes, so a step's CPU time is what the code itself holds the loop for,
the figure a quieter machine would see as wall time. The module is found from the current directory first, so
the same helper times another checkout's code (run it from there).
"""

from __future__ import annotations

import asyncio.events
import os
import runpy
import sys
import time

LOG = os.environ["MCPX_LOOP_BLOCKS"]
THRESHOLD = float(os.environ.get("MCPX_LOOP_BLOCKS_MS", "2")) / 1000
_run = asyncio.events.Handle._run


def what(handle) -> str:
    callback = handle._callback
    owner = getattr(callback, "__self__", None)
    if isinstance(owner, asyncio.Task):
        # The task's chain of coroutines where it now waits (a task group's wrapper names only itself).
        names, coro = [], owner.get_coro()
        while coro is not None and len(names) < 4:
            names.append(getattr(coro, "__qualname__", type(coro).__name__))
            coro = getattr(coro, "cr_await", None)
        return "task step: " + " > ".join(names)
    return getattr(callback, "__qualname__", repr(callback))


def timed(self) -> None:
    cpu, wall = time.thread_time(), time.perf_counter()
    _run(self)
    cpu = time.thread_time() - cpu
    if cpu >= THRESHOLD:
        with open(LOG, "a", encoding="utf-8") as log:
            log.write(f"{time.time():.6f} {cpu * 1000:.1f} {(time.perf_counter() - wall) * 1000:.1f} {what(self)}\n")


asyncio.events.Handle._run = timed  # type: ignore[method-assign]
sys.path.insert(0, os.getcwd())
sys.argv = sys.argv[1:]
runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
