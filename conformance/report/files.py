"""Writing a run's reports into its report directory: results.json, summary.md, index.html, the badges and
the official suite's checks.json form, each from the results document (report/results.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from . import official
from .badges import write_badges
from .html import render
from .results import summary_markdown


def write_all(directory: str | os.PathLike, doc: dict) -> Path:
    path = Path(directory)
    path.mkdir(parents=True, exist_ok=True)
    (path / "results.json").write_text(json.dumps(doc, indent=2, ensure_ascii=False, default=str) + "\n",
                                       encoding="utf-8")
    (path / "summary.md").write_text(summary_markdown(doc), encoding="utf-8")

    (path / "index.html").write_text(render(doc), encoding="utf-8")
    write_badges(path / "badges", doc)
    official.write(path, doc)
    return path
