"""The cross-implementation dashboard: many runs' results.json on one static page.

    mcp-ext-conformance dashboard RESULTS.json... [NAME=RESULTS.json]... --out DIR

Rows are checks (grouped by profile), columns are implementations, each cell
the verdict one run gave that check, linking to the check in that run's
index.html. Column names come from each run's target, or from NAME= before
the path. Runs given the same name are one implementation's column (say, its
server run and its host run from separate CI jobs); two runs of one role under
one name are an error, since a cell could then hold two verdicts.

Columns are grouped by role (server, host, gateway; a column of several
roles' runs is a group of its own) and, within one, by kind: reference, SDK or
third party, from the `implementation` object a run's results.json may carry
(ecosystem/snapshot.py writes it; a run without one is "other"). Each column
header carries the implementation's version (`implementation.version`, else
the version the target announced in `targetInfo`) and the date it ran. The
first column and the header rows stay in view while the table scrolls.

A cell says why it is empty: "not run" when the run was of the check's role
but has no verdict for it (an older suite, or -k), "·" when the run was of
another role. The page is one file, readable without scripts (a real table
with row and column headers); a few lines of script add the filters (a text
box matching check ids and profiles, role and kind toggles, profile, level and
outcome), hide the columns with nothing to show for the rows left, and recount
the summary row for what is shown.

Loading is separate from rendering: `load` validates each file against
schemas/results.json and raises DashboardError with a readable message,
`build` merges the runs into a plain model, `render` turns it into HTML from
a Jinja2 template (templates/dashboard.html.j2) with autoescaping, as the run
report is built; each check's requirement is the catalog's Markdown, rendered.
"""

from __future__ import annotations

import json
import os
import shlex
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ..core import roles
from ..core.model import LEVELS, PROFILES
from .html import environment

ROLES = tuple(roles.ROLES)
KINDS = ("reference", "sdk", "third-party", "")  # "": a run whose results.json names no kind
KIND_LABELS = {"reference": "reference", "sdk": "SDK", "third-party": "third party", "": "other"}
SUMMARY_OUTCOMES = ("pass", "fail", "warn", "info", "skip", "xfail", "stale")
LEVEL_ORDER = {level: i for i, level in enumerate(LEVELS)}
INTERPRETERS = {"python", "python3", "node", "npx", "uv", "uvx", "bash", "sh", "deno", "bun", "docker"}


class DashboardError(Exception):
    """A results file that cannot go on the dashboard; the message names the file and the problem."""


@dataclass
class Run:
    """One results.json: where it is, its document, and the name of its column."""
    path: Path
    doc: dict
    name: str
    named: bool = False  # named with NAME= (else after its target)

    @property
    def implementation(self) -> dict:
        return self.doc.get("implementation") or {}

    @property
    def index_html(self) -> Path | None:
        page = self.path.parent / "index.html"
        return page if page.exists() else None


@dataclass
class Column:
    name: str
    runs: list[Run] = field(default_factory=list)
    cells: dict[str, tuple[dict, Run]] = field(default_factory=dict)  # check id -> (check, run)

    @property
    def roles(self) -> set[str]:
        return {run.doc["role"] for run in self.runs}

    @property
    def role(self) -> str:
        """The column's role group: its one role, or its roles joined ("server + host")."""
        return " + ".join(r for r in ROLES if r in self.roles)

    @property
    def kind(self) -> str:
        return next((k for run in self.runs if (k := run.implementation.get("kind")) in KINDS), "")

    @property
    def version(self) -> str | None:
        """The implementation's version as the runner named it, else as the target announced it."""
        for run in self.runs:
            if run.implementation.get("version"):
                return run.implementation["version"]
        return next((v for run in self.runs if (v := (run.doc.get("targetInfo") or {}).get("version"))), None)

    @property
    def date(self) -> str:
        """The day its newest run started (UTC)."""
        return max(run.doc["startedAt"] for run in self.runs)[:10]

    def group_key(self) -> tuple[int, int]:
        """By its (first) role, then kind: a column of several roles sits with its first role's columns."""
        return min(ROLES.index(r) for r in self.roles), KINDS.index(self.kind)


@dataclass
class Row:
    id: str
    profile: str
    role: str
    level: str
    requirement: str
    shipped: bool = False  # the requirement is this suite's catalog text (rendered as Markdown), not the file's


@dataclass
class Dashboard:
    columns: list[Column]
    rows: list[Row]


def target_name(target: dict) -> str:
    """A short name for a run's target: the module or program of a command, else the URL, image or adapter."""
    if target.get("command"):
        try:
            words = shlex.split(target["command"])
        except ValueError:
            words = target["command"].split()
        if "-m" in words[:-1]:
            return words[words.index("-m") + 1]
        programs = [w for w in words if not w.startswith("-") and Path(w).name not in INTERPRETERS
                    and not Path(w).name.startswith("python")]
        return Path(programs[0]).name if programs else Path(words[0]).name if words else "?"
    for key in ("url", "image", "adapter"):
        if target.get(key):
            return target[key]
    return "?"


def parse_spec(spec: str) -> tuple[str | None, Path]:
    """NAME=PATH or PATH; PATH is a results.json or a directory holding one."""
    name, sep, rest = spec.partition("=")
    if sep and name and not Path(spec).exists():
        return name, Path(rest)
    return None, Path(spec)


def load(spec: str) -> Run:
    from ..core.schemas_loader import errors

    name, path = parse_spec(spec)
    if path.is_dir():
        path = path / "results.json"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DashboardError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DashboardError(f"{path}: cannot read it ({exc})") from None
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise DashboardError(f"{path}: not JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != "mcp-ext-conformance/results":
        raise DashboardError(f"{path}: not an mcp-ext-conformance results.json (its \"format\" is not "
                             f"\"mcp-ext-conformance/results\")")
    problems = errors("results", doc)
    if problems:
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        raise DashboardError(f"{path}: does not match schemas/results.json: {'; '.join(problems[:3])}{more}")
    return Run(path=path, doc=doc, name=name or target_name(doc["target"]), named=name is not None)


def full_target(target: dict) -> str:
    return next((target[k] for k in ("command", "url", "image", "adapter") if target.get(k)), "?")


def build(runs: list[Run]) -> Dashboard:
    """Merge runs into columns (by name; grouped by role and kind, in the order first given within a group) and
    rows (every check any run has)."""
    columns: dict[str, Column] = {}
    rows: dict[str, Row] = {}
    # Two runs of one role whose targets shorten to the same name (one program, other arguments): the whole target.
    short = Counter((run.name, run.doc["role"]) for run in runs if not run.named)
    for run in runs:
        if not run.named and short[(run.name, run.doc["role"])] > 1:
            run.name = full_target(run.doc["target"])
    for run in runs:
        column = columns.setdefault(run.name, Column(run.name))
        role = run.doc["role"]
        if role in column.roles:
            other = next(r for r in column.runs if r.doc["role"] == role)
            raise DashboardError(f"{run.path} and {other.path} are both {role}-role runs named {run.name!r}; "
                                 f"name them apart with NAME={run.path}")
        column.runs.append(run)
        for check in run.doc["checks"]:
            column.cells[check["id"]] = (check, run)
            rows.setdefault(check["id"], _row(check))
    profile_order = {p: i for i, p in enumerate(PROFILES)}
    role_order = {r: i for i, r in enumerate(ROLES)}
    ordered = sorted(rows.values(), key=lambda r: (profile_order.get(r.profile, 99), role_order.get(r.role, 9),
                                                    LEVEL_ORDER.get(r.level, 9), r.id))
    # Grouped by role, then kind (a stable sort: the order given within a group).
    return Dashboard(columns=sorted(columns.values(), key=Column.group_key), rows=ordered)


def _row(check: dict) -> Row:
    """A check's row. Its requirement is this suite's own text for the id (a results file is a third party's:
    its text is shown as text, never rendered as Markdown, and only when this suite does not know the check)."""
    from ..core import roles
    from ..core.model import REGISTRY

    roles.load_all()
    shipped = REGISTRY.get(check["id"])
    return Row(check["id"], check["profile"], check["role"], check["level"],
               shipped.must if shipped else str(check.get("requirement") or ""), shipped=shipped is not None)


def cell_state(column: Column, row: Row) -> tuple[str, dict | None, Run | None]:
    """("pass"/"fail"/…, check, run), or ("absent", …) for a run of this role without it, ("other-role", …)."""
    if row.id in column.cells:
        check, run = column.cells[row.id]
        return check["outcome"], check, run
    if row.role in column.roles:
        return "absent", None, next(r for r in column.runs if r.doc["role"] == row.role)
    return "other-role", None, None


def _href(page: Path, out_dir: Path) -> str:
    return Path(os.path.relpath(page.resolve(), out_dir.resolve())).as_posix()


OUTCOME_TITLES = {"pass": "passed", "fail": "failed", "warn": "SHOULD not met", "info": "informational",
                  "skip": "skipped", "xfail": "expected failure", "stale": "baseline entry stale",
                  "absent": "not run", "other-role": "another role's check"}


def _column_header(column: Column, index: int, out_dir: Path) -> dict:
    """The name, version and date, then one link per run (its role) with when and with what it ran in its title."""
    links = []
    for run in column.runs:
        doc = run.doc
        about = (f"{doc['role']} run of {target_name(doc['target'])}, finished {doc['finishedAt']}, "
                 f"suite {doc['suite']['version']}, exit code {doc['exitCode']}"
                 + (f", unreachable: {doc['unavailable']}" if doc.get("unavailable") else ""))
        links.append({"label": doc["role"] + (" (unreachable)" if doc.get("unavailable") else ""), "title": about,
                      "href": _href(run.index_html, out_dir) if run.index_html else None})
    return {"name": column.name, "links": links, "version": column.version, "date": column.date, "col": index,
            "role": column.role, "kind": column.kind or "other"}


def column_groups(columns: list[Column]) -> list[dict]:
    """Runs of adjacent columns sharing a role and kind (build() made them adjacent): the header's top row."""
    groups: list[dict] = []
    for index, column in enumerate(columns):
        label = f"{column.role} · {KIND_LABELS[column.kind]}"
        if not groups or groups[-1]["label"] != label:
            groups.append({"label": label, "role": column.role, "kind": column.kind or "other", "cols": []})
        groups[-1]["cols"].append(index)
    return groups


def _cell(column: Column, index: int, row: Row, out_dir: Path) -> dict:
    state, check, run = cell_state(column, row)
    cell = {"state": state, "col": index, "href": None, "title": ""}
    if state == "other-role":
        cell["title"] = f"{column.name} ran no {row.role}-role checks"
        return cell
    if state == "absent" or check is None or run is None:  # cell_state gives both for a recorded check
        return cell
    if run.index_html:
        cell["href"] = f"{_href(run.index_html, out_dir)}#{row.id}"
    title = f"{column.name}: {OUTCOME_TITLES.get(state, state)}"
    if check.get("reason"):
        title += f" — {check['reason']}"
    if check.get("expectedFailure"):
        title += " (in the expected-failures baseline)"
    cell["title"] = title
    return cell


def context(dashboard: Dashboard, out_dir: Path, title: str) -> dict:
    """Everything the template shows (templates/dashboard.html.j2), computed here."""
    groups: list[dict] = []
    for row in dashboard.rows:
        if not groups or groups[-1]["profile"] != row.profile:  # one tbody per profile: a real row group
            groups.append({"profile": row.profile, "rows": []})
        cells = [_cell(column, index, row, out_dir) for index, column in enumerate(dashboard.columns)]
        groups[-1]["rows"].append({"row": row, "cells": cells,
                                   "outcomes": " ".join(sorted({c["state"] for c in cells}))})
    summary = [Counter(cell_state(column, row)[0] for row in dashboard.rows) for column in dashboard.columns]
    return {
        "title": title, "columns": [_column_header(c, i, out_dir) for i, c in enumerate(dashboard.columns)],
        "column_groups": column_groups(dashboard.columns),
        "toggles": [("role", "roles", [r for r in ROLES if any(r in c.roles for c in dashboard.columns)]),
                    ("kind", "kinds", list(dict.fromkeys((c.kind or "other") for c in dashboard.columns)))],
        "kind_labels": {**KIND_LABELS, "other": "other"},
        "runs": sum(len(c.runs) for c in dashboard.columns), "checks": len(dashboard.rows),
        "summary": summary, "groups": groups, "summary_outcomes": SUMMARY_OUTCOMES,
        "filters": [("profile", "profile", list(dict.fromkeys(row.profile for row in dashboard.rows))),
                    ("level", "level", [lv for lv in LEVELS if any(row.level == lv for row in dashboard.rows)]),
                    ("outcome", "outcome (any column)", [*SUMMARY_OUTCOMES, "absent"])],
    }


def render(dashboard: Dashboard, out_dir: Path, title: str = "MCP extension conformance: implementations") -> str:
    """The page, from templates/dashboard.html.j2 (autoescaped, as the run report's)."""
    return environment().get_template("dashboard.html.j2").render(context(dashboard, out_dir, title))


def write(specs: list[str], out_dir: str | os.PathLike, title: str | None = None) -> Path:
    """Load, merge and render; the only I/O besides `load`. Returns the page written."""
    if not specs:
        raise DashboardError("no results files given")
    runs = [load(spec) for spec in specs]
    dashboard = build(runs)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    page = out / "index.html"
    page.write_text(render(dashboard, out, *([title] if title else [])), encoding="utf-8")
    return page


def cmd_dashboard(args) -> int:
    import sys

    try:
        page = write(args.results, args.out, args.title)
    except DashboardError as exc:
        print(f"mcp-ext-conformance: {exc}", file=sys.stderr)
        return 2
    print(f"dashboard: {page}")
    return 0
