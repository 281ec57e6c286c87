"""What a deterministic renderer made from the suite's own inputs, kept between runs in the cache directory.

The HTML report renders the shipped catalog's Markdown, and the badges are drawn by a badge library; both give
the same output for the same input every run, and importing the libraries cost more of a short run's CPU than
using them (markdown-it-py and anybadge: 60-90 ms together, against about 1 ms of rendering). A `Memo` maps
inputs to outputs, in a JSON file whose name holds everything else the output depends on (the suite's version,
the library's installed files), so an entry is only ever read by a run that would render the same thing. The
library is imported only when an input is new. Like the catalog cache (core/catalog.py), a folder that cannot be
read or written leaves every run rendering, as without it; a damaged file is ignored and rewritten.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from importlib.util import find_spec
from typing import Callable

from .catalog import cache_dir

MAX_ENTRIES = 4096  # the catalog's texts and badges' labels are a few hundred; past this, render without keeping


def library_stamp(module: str) -> str:
    """Where `module` is installed and when its package was last written, without importing it: an upgrade
    changes the stamp, and with it the memo file read."""
    spec = find_spec(module)
    origin = spec.origin if spec is not None else None
    if not origin:
        return f"{module}:missing"
    try:
        stat = os.stat(origin)
    except OSError:
        return f"{module}:{origin}"
    return f"{module}:{origin}:{stat.st_mtime_ns}:{stat.st_size}"


class Memo:
    """`get(key, render)`: the kept output for `key`, or `render(key)`'s, kept; `save()` writes new entries."""

    def __init__(self, name: str, *depends_on: str):
        from .. import __version__

        digest = hashlib.sha256(json.dumps([__version__, *depends_on]).encode()).hexdigest()[:16]
        self.path = cache_dir() / f"{name}-{digest}.json"
        self._entries: dict[str, str] | None = None
        self._new = False
        self._lock = threading.Lock()  # the report's warm-up (run/background.py) may load it from its thread

    def load(self) -> dict[str, str]:
        with self._lock:
            if self._entries is None:
                try:
                    entries = json.loads(self.path.read_text(encoding="utf-8"))
                except (OSError, ValueError):
                    entries = {}
                ok = isinstance(entries, dict) and all(isinstance(v, str) for v in entries.values())
                self._entries = entries if ok else {}
            return self._entries

    def get(self, key: str, render: Callable[[str], str]) -> str:
        entries = self.load()
        out = entries.get(key)
        if out is None:
            out = render(key)
            if len(entries) < MAX_ENTRIES:
                entries[key] = out
                self._new = True
        return out

    def save(self) -> None:
        if not self._new or self._entries is None:
            return
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.{threading.get_ident()}")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(json.dumps(self._entries, ensure_ascii=False), encoding="utf-8")
            os.replace(tmp, self.path)  # whole or not at all: a concurrent run reads the old file or the new one
            self._new = False
        except OSError:
            try:
                tmp.unlink()
            except OSError:
                pass
