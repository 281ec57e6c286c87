"""Writing a run's reports into its report directory: results.json, summary.md, index.html, the badges and
the official suite's checks.json form, each from the results document (report/results.py).

A run owns its role's outputs in the report directory (`OWNED`): it writes them into a hidden folder inside
it (`Staging`), pytest's junit.xml and pytest-report.json included, and moves them into place when the run
ends, each replacing the earlier run's, with what the earlier run wrote and this one did not removed. So a
reused directory never shows an earlier run beside this one, and an interrupted run leaves its own results,
marked interrupted (results.json `interrupted`, a banner in summary.md and index.html), never a mix. Ctrl-C
is held back while the files are written and moved. Other files in the directory are left alone.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
from pathlib import Path
from typing import Any

from . import official
from .badges import write_badges
from .html import render
from .pretty import pretty_json
from .results import summary_markdown

OWNED = ("results.json", "summary.md", "index.html", "junit.xml", "pytest-report.json", "badges", "official",
         "internal-error.txt")
STAGING_PREFIX = ".mcpx-partial-"


def write_all(directory: str | os.PathLike, doc: dict) -> Path:
    path = Path(directory)
    path.mkdir(parents=True, exist_ok=True)
    (path / "results.json").write_text(pretty_json(doc) + "\n", encoding="utf-8")
    (path / "summary.md").write_text(summary_markdown(doc), encoding="utf-8")

    (path / "index.html").write_text(render(doc), encoding="utf-8")
    write_badges(path / "badges", doc)
    if not doc.get("interrupted"):  # an interrupted run's verdicts are no official result (nor SUCCESS)
        official.write(path, doc)
    return path


class InterruptsDeferred:
    """Ctrl-C noted, not raised, for the span of the block (main thread only; elsewhere it changes nothing):
    `pending` says whether one came. Within another such block, the outer one notes it."""

    def __init__(self) -> None:
        self.pending = False
        self.previous: Any = None

    def _note(self, signum, frame) -> None:
        self.pending = True

    def __enter__(self) -> "InterruptsDeferred":
        current = signal.getsignal(signal.SIGINT)
        if isinstance(getattr(current, "__self__", None), InterruptsDeferred):
            return current.__self__  # type: ignore[union-attr]
        try:
            self.previous = signal.signal(signal.SIGINT, self._note)
        except ValueError:  # not the main thread
            self.previous = None
        return self

    def __exit__(self, *exc) -> None:
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)


class Staging:
    """Where a run writes its outputs before they replace the earlier run's in `report_dir`."""

    def __init__(self, report_dir: str | os.PathLike):
        self.final = Path(report_dir)
        self.final.mkdir(parents=True, exist_ok=True)
        _remove_abandoned(self.final)
        self.path = Path(tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{os.getpid()}-", dir=self.final))
        self.done = False

    def publish(self) -> None:
        """Move the staged outputs into the report directory; the earlier run's owned outputs go."""
        with InterruptsDeferred():
            previous = self.path / ".previous"
            previous.mkdir(exist_ok=True)
            for name in OWNED:
                target, staged = self.final / name, self.path / name
                if target.exists() or target.is_symlink():
                    os.replace(target, previous / name)
                if staged.exists():
                    os.replace(staged, target)
            shutil.rmtree(self.path, ignore_errors=True)
            self.done = True

    def discard(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
        self.done = True


def publish(report_dir: str | os.PathLike, doc: dict) -> Path:
    """The reports of `doc` written and moved into `report_dir` in one step (a run that never reached pytest's
    session: the CLI's interrupted-before-it-started run)."""
    staging = Staging(report_dir)
    try:
        write_all(staging.path, doc)
    except BaseException:
        staging.discard()
        raise
    staging.publish()
    return Path(report_dir)


def _remove_abandoned(directory: Path) -> None:
    """Staging folders of runs that were killed (their process is gone)."""
    for folder in directory.glob(STAGING_PREFIX + "*"):
        pid = folder.name[len(STAGING_PREFIX):].partition("-")[0]
        if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
