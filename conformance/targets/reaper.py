"""Last line of defence: kill every process group the suite started and still owns.

Connections end their groups themselves; this covers what they cannot, such as
an interpreter leaving through Ctrl-C or SIGTERM before a `finally` ran.
"""

from __future__ import annotations

import atexit
import os
import signal

_groups: set[int] = set()
_ending = False  # set by kill_all: the interpreter is leaving


def track(pgid: int) -> None:
    """Own a group; once kill_all has run, end it at once (the recording thread may start a target
    while the main thread is already leaving, and nothing would be left to end it)."""
    _groups.add(pgid)
    if _ending:
        kill_all()


def untrack(pgid: int) -> None:
    _groups.discard(pgid)


def kill_all() -> None:
    global _ending
    _ending = True
    for pgid in list(_groups):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        _groups.discard(pgid)


atexit.register(kill_all)
