"""The test run's own settings (the suite's checks live in conformance/, not here)."""

from __future__ import annotations

import os


def pytest_xdist_auto_num_workers(config) -> int | None:
    """`-n auto` (the README's test command): two workers per core this process may use. Most tests wait on
    subprocesses, loopback servers and timeouts rather than compute, so a second worker per core fills the
    waits (on the 2-core development machine: about 5 min with four workers against 6 min 30 s with two).
    PYTEST_XDIST_AUTO_NUM_WORKERS, when set, decides instead (xdist's own rule)."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # xdist reads it
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return 2 * cores
