"""The cross-implementation dashboard: many runs' results.json on one static page.

    mcp-ext-conformance dashboard RESULTS.json... [NAME=RESULTS.json]... --out DIR

Rows are checks (grouped by profile), columns are implementations, each cell
the verdict one run gave that check, linking to the check in that run's
index.html. Column names come from each run's target, or from NAME= before
the path. Runs given the same name are one implementation's column (say, its
server run and its host run from separate CI jobs); two runs of one role under
one name are an error, since a cell could then hold two verdicts.

A cell says why it is empty: "not run" when the run was of the check's role
but has no verdict for it (an older suite, or -k), "·" when the run was of
another role. The page is one file, readable without scripts (a real table
with row and column headers); a few lines of script add the role, profile,
level and outcome filters and recount the summary row for what is shown.

Loading is separate from rendering: `load` validates each file against
schemas/results.json and raises DashboardError with a readable message,
`build` merges the runs into a plain model, `render` turns it into HTML.
"""

from __future__ import annotations

import json
import os
import shlex
from collections import Counter
from dataclasses import dataclass, field
from html import escape
from pathlib import Path

from .html import COLOURS
from ..core.model import LEVELS, PROFILES

ROLES = ("server", "host", "gateway")
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


@dataclass
class Row:
    id: str
    profile: str
    role: str
    level: str
    requirement: str


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
    """Merge runs into columns (by name, in the order first given) and rows (every check any run has)."""
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
            rows.setdefault(check["id"], Row(check["id"], check["profile"], check["role"], check["level"],
                                             check["requirement"]))
    profile_order = {p: i for i, p in enumerate(PROFILES)}
    role_order = {r: i for i, r in enumerate(ROLES)}
    ordered = sorted(rows.values(), key=lambda r: (profile_order.get(r.profile, 99), role_order.get(r.role, 9),
                                                    LEVEL_ORDER.get(r.level, 9), r.id))
    return Dashboard(columns=list(columns.values()), rows=ordered)


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


STYLE = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#1f2328;background:#f6f8fa}
header{background:#fff;border-bottom:1px solid #d0d7de;padding:16px 24px}
h1{font-size:20px;margin:0 0 4px}
.meta{color:#59636e}
main{padding:16px 24px}
form{display:flex;flex-wrap:wrap;gap:16px;align-items:end;margin:0 0 12px}
label{display:flex;flex-direction:column;font-size:12px;color:#59636e;gap:2px}
select{font:inherit;padding:2px 4px}
.scroll{overflow:auto;max-height:85vh;border:1px solid #d0d7de;border-radius:6px;background:#fff}
table{border-collapse:separate;border-spacing:0;width:100%}
th,td{padding:4px 10px;border-bottom:1px solid #d8dee4;text-align:left;vertical-align:top}
thead th{position:sticky;top:0;background:#f6f8fa;z-index:2;border-bottom:1px solid #d0d7de;font-weight:600}
thead tr.summary th, thead tr.summary td{top:auto;position:static;background:#fff;font-weight:400}
th[scope=row]{font-weight:400;min-width:300px;max-width:520px}
th.col{min-width:110px;max-width:200px;overflow-wrap:anywhere}
th[scope=row] code{font-weight:600}
.req{display:block;color:#59636e;font-size:12px}
tbody tr.group th{background:#eef1f4;font-size:13px;font-weight:600;position:static}
td.cell{text-align:center;white-space:nowrap}
.level{font-size:11px;color:#59636e;border:1px solid #d0d7de;border-radius:8px;padding:0 6px;margin-left:6px}
.v{display:inline-block;min-width:52px;text-align:center;color:#fff;border-radius:10px;padding:0 8px;
   font-size:12px;font-weight:600;text-transform:uppercase;text-decoration:none}
a.v:hover,a.v:focus{outline:2px solid #0969da;outline-offset:1px}
.absent{color:#9a6700;font-size:12px;font-style:italic;white-space:nowrap}
.na{color:#8c959f}
.col small{display:block;font-weight:400;color:#59636e;font-size:11px;max-width:220px;overflow-wrap:anywhere}
.counts .v{min-width:0;margin:1px}
.legend{color:#59636e;font-size:12px;margin:8px 0 0}
"""

SCRIPT = """
(function(){
  var form=document.getElementById('filters'); form.hidden=false;
  var rows=[].slice.call(document.querySelectorAll('tbody tr.check'));
  var groups=[].slice.call(document.querySelectorAll('tbody tr.group'));
  function apply(){
    var want={}; [].forEach.call(form.elements,function(e){ if(e.name) want[e.name]=e.value; });
    rows.forEach(function(tr){
      var ok=['role','profile','level'].every(function(k){return !want[k]||tr.dataset[k]===want[k];});
      if(ok&&want.outcome){ ok=tr.dataset.outcomes.split(' ').indexOf(want.outcome)>=0; }
      tr.hidden=!ok;
    });
    groups.forEach(function(g){
      g.hidden=!rows.some(function(tr){return !tr.hidden&&tr.dataset.profile===g.dataset.profile;});
    });
    document.querySelectorAll('tr.summary td').forEach(function(td){
      var col=td.dataset.col, n={};
      rows.forEach(function(tr){ if(tr.hidden) return;
        var c=tr.querySelector('td[data-col="'+col+'"]'); var o=c&&c.dataset.outcome;
        if(o) n[o]=(n[o]||0)+1; });
      td.querySelectorAll('[data-count]').forEach(function(s){
        var k=s.dataset.count; s.querySelector('b').textContent=n[k]||0; s.hidden=!n[k]; });
    });
  }
  form.addEventListener('change',apply); apply();
})();
"""

OUTCOME_TITLES = {"pass": "passed", "fail": "failed", "warn": "SHOULD not met", "info": "informational",
                  "skip": "skipped", "xfail": "expected failure", "stale": "baseline entry stale",
                  "absent": "not run", "other-role": "another role's check"}


def _verdict(outcome: str, href: str | None, title: str) -> str:
    style = f"background:{COLOURS.get(outcome, '#6e7781')}"
    if href:
        return f'<a class=v style="{style}" href="{escape(href)}" title="{escape(title)}">{escape(outcome)}</a>'
    return f'<span class=v style="{style}" title="{escape(title)}">{escape(outcome)}</span>'


def _column_header(column: Column, out_dir: Path) -> str:
    """The name, then one link per run (its role) with when and with what it ran in the link's title."""
    links = []
    for run in column.runs:
        doc = run.doc
        about = (f"{doc['role']} run of {target_name(doc['target'])}, finished {doc['finishedAt']}, "
                 f"suite {doc['suite']['version']}, exit code {doc['exitCode']}"
                 + (f", unreachable: {doc['unavailable']}" if doc.get("unavailable") else ""))
        label = escape(doc["role"]) + (" (unreachable)" if doc.get("unavailable") else "")
        if run.index_html:
            links.append(f'<a href="{escape(_href(run.index_html, out_dir))}" title="{escape(about)}">{label}</a>')
        else:
            links.append(f'<span title="{escape(about)}">{label}</span>')
    when = max(run.doc["finishedAt"] for run in column.runs)[:10]
    return (f'<th scope=col class=col>{escape(column.name)}<small>{" · ".join(links)}</small>'
            f'<small>{escape(when)}</small></th>')


def _cell(column: Column, index: int, row: Row, out_dir: Path) -> tuple[str, str]:
    state, check, run = cell_state(column, row)
    col = f'data-col="{index}"'
    if state == "other-role":
        return (f'<td class="cell na" {col} title="{escape(column.name)} ran no {escape(row.role)}-role checks">'
                f'<span aria-label="no {escape(row.role)} run">·</span></td>', state)
    if state == "absent":
        return (f'<td class="cell absent" {col} data-outcome=absent>not run</td>', state)
    href = None
    if run.index_html:
        href = f"{_href(run.index_html, out_dir)}#{row.id}"
    title = f"{column.name}: {OUTCOME_TITLES.get(state, state)}"
    if check.get("reason"):
        title += f" — {check['reason']}"
    if check.get("expectedFailure"):
        title += " (in the expected-failures baseline)"
    return f'<td class=cell {col} data-outcome="{escape(state)}">{_verdict(state, href, title)}</td>', state


def _summary(dashboard: Dashboard) -> str:
    cells = []
    for index, column in enumerate(dashboard.columns):
        counts = Counter(cell_state(column, row)[0] for row in dashboard.rows)
        spans = "".join(
            f'<span data-count="{o}"{"" if counts[o] else " hidden"}>'
            f'<span class=v style="background:{COLOURS.get(o, "#6e7781")}">{escape(o)} <b>{counts[o]}</b></span></span>'
            for o in SUMMARY_OUTCOMES)
        spans += (f'<span data-count=absent{"" if counts["absent"] else " hidden"} class=absent> '
                  f'not run <b>{counts["absent"]}</b></span>')
        cells.append(f'<td class=counts data-col="{index}">{spans}</td>')
    return f'<tr class=summary><th scope=row>summary (checks shown)</th>{"".join(cells)}</tr>'


def _select(name: str, label: str, values) -> str:
    options = "".join(f"<option>{escape(v)}</option>" for v in values)
    return f'<label>{label}<select name={name}><option value="">all</option>{options}</select></label>'


def render(dashboard: Dashboard, out_dir: Path, title: str = "MCP extension conformance: implementations") -> str:
    present_roles = [r for r in ROLES if any(row.role == r for row in dashboard.rows)]
    present_profiles = list(dict.fromkeys(row.profile for row in dashboard.rows))
    present_levels = [level for level in LEVELS if any(row.level == level for row in dashboard.rows)]
    head = "".join(_column_header(c, out_dir) for c in dashboard.columns)
    body = []
    current = None
    for row in dashboard.rows:
        if row.profile != current:  # one tbody per profile, so its header row heads a real row group
            if current is not None:
                body.append("</tbody>")
            current = row.profile
            body.append(f'<tbody><tr class=group data-profile="{escape(row.profile)}">'
                        f'<th scope=rowgroup colspan={len(dashboard.columns) + 1} id="p-{escape(row.profile)}">'
                        f'{escape(row.profile)}</th></tr>')
        cells, outcomes = [], set()
        for index, column in enumerate(dashboard.columns):
            html, state = _cell(column, index, row, out_dir)
            cells.append(html)
            outcomes.add(state)
        body.append(f'<tr class=check data-role="{escape(row.role)}" data-profile="{escape(row.profile)}" '
                    f'data-level="{escape(row.level)}" data-outcomes="{escape(" ".join(sorted(outcomes)))}">'
                    f'<th scope=row><code>{escape(row.id)}</code> <span class=level>{escape(row.level)}</span>'
                    f'<span class=req>{escape(row.requirement)}</span></th>{"".join(cells)}</tr>')
    filters = (f'<form id=filters hidden aria-label="filter the checks">'
               f'{_select("role", "role", present_roles)}{_select("profile", "profile", present_profiles)}'
               f'{_select("level", "level", present_levels)}'
               f'{_select("outcome", "outcome (any column)", [o for o in (*SUMMARY_OUTCOMES, "absent")])}'
               f'</form>')
    runs = sum(len(c.runs) for c in dashboard.columns)
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        "<meta name=viewport content='width=device-width,initial-scale=1'>"
        f"<title>{escape(title)}</title><style>{STYLE}</style></head><body>"
        f"<header><h1>{escape(title)}</h1><div class=meta>{len(dashboard.columns)} implementation(s), "
        f"{runs} run(s), {len(dashboard.rows)} checks. Each verdict links to that check in its run's report."
        f"</div></header><main>{filters}"
        f'<div class=scroll><table><caption class=legend style="caption-side:bottom;text-align:left;padding:8px">'
        "<em>not run</em>: the run was of this role but has no verdict for the check (a profile it was not "
        "asked to run, another suite version, or a -k selection). <span class=na>·</span>: no run of this "
        "check's role for that implementation."
        f"</caption><thead><tr><th scope=col>check</th>{head}</tr>{_summary(dashboard)}</thead>"
        f"{''.join(body)}{'</tbody>' if body else ''}</table></div></main>"
        f"<script>{SCRIPT}</script></body></html>"
    )


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
