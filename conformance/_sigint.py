"""Ctrl-C before the command line has read its arguments: noted, and acted on once it has (cli.main).

Until then nothing has started and the report directory is not known, so an interruption there cannot yet say
so where the user will look; raised at once, it would be a traceback from the middle of an import."""

from __future__ import annotations

import signal
import threading

pending = False


def _note(signum, frame) -> None:
    global pending
    pending = True


def hold() -> None:
    """Note Ctrl-C from now on (the main thread's handler; elsewhere signals cannot be handled)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _note)
