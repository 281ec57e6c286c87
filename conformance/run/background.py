"""What a run does in the background while pytest collects: the recording, begun as the session starts
(a target's start-up is often a second of imports; the command line starts a server role's stdio target
earlier still, targets/prestart.py), and the imports judging and the reports will need.
Free of pytest: the plugin hands in a function that records, and prints the progress lines it queues."""

from __future__ import annotations

import queue
import threading
from typing import Any, Callable


def warm_up() -> None:
    """Load what judging and the reports need while the recording waits on the target: jsonschema and the
    schemas, the catalog, the report writers."""

    def warm() -> None:
        try:
            from ..core import catalog, schemas_loader, wire

            wire.warm()
            schemas_loader.validator("capabilities")
            catalog.load()
            from ..report import badges, files, html, official, results  # noqa: F401 - for the report at the end

            html.warm()
            import yaml  # noqa: F401 - the official baseline file the report writes

            from ..core import provenance

            provenance.catalog_revisions()
        except Exception:  # noqa: BLE001 - judging imports the same modules again and reports any failure
            pass

    global _warming
    _warming = threading.Thread(target=warm, name="mcpx-warm-up", daemon=True)
    _warming.start()


_warming: threading.Thread | None = None


def settled() -> None:
    """Wait for the warm-up's imports to end before this thread imports the same modules for judging and the
    reports: two threads importing modules that import each other can each get the other's half done."""
    if _warming is not None:
        _warming.join()


class BackgroundRecording:
    """`record(say)` on a thread of its own. Its progress lines wait in a queue for the caller's thread to
    print: output capture is not to be touched from another thread."""

    _DONE = object()

    def __init__(self, record: Callable[[Callable[[str], None]], dict], profiles: list[str]):
        self.profiles = profiles
        self.lines: queue.SimpleQueue = queue.SimpleQueue()
        self.outcome: tuple[dict | None, BaseException | None] = (None, None)
        self.thread = threading.Thread(target=self._run, args=(record,), name="mcpx-recording", daemon=True)
        self.thread.start()

    def _run(self, record) -> None:
        try:
            self.outcome = (record(self.lines.put), None)
        except BaseException as exc:  # noqa: BLE001 - raised again on the caller's thread, by result()
            self.outcome = (None, exc)
        finally:
            self.lines.put(self._DONE)

    def result(self, say: Callable[[str], Any] | None) -> dict:
        while (line := self.lines.get()) is not self._DONE:
            if say:
                say(line)
        recordings, error = self.outcome
        if error is not None:
            raise error
        return recordings or {}
