"""Last line of defence: kill every process group the suite started and still owns.

Connections end their groups themselves; this covers what they cannot, such as
an interpreter leaving through Ctrl-C or SIGTERM before a `finally` ran.
"""

from __future__ import annotations

import atexit
import os
import signal

_groups: set[int] = set()


def track(pgid: int) -> None:
    _groups.add(pgid)


def untrack(pgid: int) -> None:
    _groups.discard(pgid)


def kill_all() -> None:
    for pgid in list(_groups):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        _groups.discard(pgid)


atexit.register(kill_all)
