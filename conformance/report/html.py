"""index.html: one self-contained page a person opens to see what passed, what failed and why.

Per check: the requirement, the sources its catalog rows cite (linked), the
verdict and its reason, expected against actual, and the exchanges the check
judged (request and response as sent), folded away until opened. No scripts, no external assets: the page works
from a CI artifact or an email attachment. Built with the standard library's
html.escape rather than a template engine: one page, a few loops.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from html import escape

COLOURS = {"pass": "#1a7f37", "fail": "#cf222e", "warn": "#9a6700", "info": "#0969da", "skip": "#6e7781",
           "xfail": "#8250df", "stale": "#bc4c00"}

STYLE = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#1f2328;background:#f6f8fa}
header{background:#fff;border-bottom:1px solid #d0d7de;padding:20px 32px}
h1{font-size:20px;margin:0 0 6px}
.meta{color:#59636e}
main{padding:20px 32px;max-width:1200px}
table{border-collapse:collapse;background:#fff;border:1px solid #d0d7de;border-radius:6px;margin-bottom:24px;width:100%}
th,td{padding:6px 12px;border-bottom:1px solid #d0d7de;text-align:left;vertical-align:top}
th{background:#f6f8fa;font-weight:600}
td.n{text-align:right;font-variant-numeric:tabular-nums}
.pill{display:inline-block;min-width:44px;text-align:center;color:#fff;border-radius:10px;padding:0 8px;
      font-size:12px;font-weight:600;text-transform:uppercase}
section.profile{margin-bottom:28px}
h2{font-size:16px;margin:24px 0 8px}
details.check{background:#fff;border:1px solid #d0d7de;border-radius:6px;margin:6px 0;padding:8px 12px}
details.check>summary{cursor:pointer;list-style:none;display:flex;gap:10px;align-items:baseline}
details.check>summary::-webkit-details-marker{display:none}
code,pre{font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
pre{background:#f6f8fa;border:1px solid #d0d7de;border-radius:6px;padding:8px;overflow:auto;max-height:320px;
    white-space:pre-wrap;word-break:break-word}
.id{font-weight:600}
.reason{color:#59636e;margin-left:auto;max-width:55%;text-align:right;overflow:hidden;text-overflow:ellipsis;
        white-space:nowrap}
dl{display:grid;grid-template-columns:140px 1fr;gap:4px 12px;margin:10px 0}
dt{color:#59636e}
dd{margin:0}
"""


def pill(outcome: str) -> str:
    return f'<span class="pill" style="background:{COLOURS.get(outcome, "#6e7781")}">{escape(outcome)}</span>'


def _json(value) -> str:
    return escape(json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True))


def render(doc: dict) -> str:
    target = doc["target"]
    where = target.get("command") or target.get("url") or target.get("image") or target.get("adapter") or "?"
    counts = Counter(c["outcome"] for c in doc["checks"])
    summary = " ".join(f"{pill(o)} {counts[o]}" for o in COLOURS if counts[o])
    parts = [f"<!doctype html><html lang=en><head><meta charset=utf-8>"
             f"<meta name=viewport content='width=device-width,initial-scale=1'>"
             f"<title>MCP extension conformance: {escape(doc['role'])}</title><style>{STYLE}</style></head><body>",
             f"<header><h1>MCP extension conformance · {escape(doc['role'])} role</h1>"
             f"<div class=meta>Target <code>{escape(where)}</code> ({escape(target.get('kind', '?'))}) · "
             f"mcp SDK {escape(str(doc['sdk'].get('mcp')))} · {escape(doc['finishedAt'])} · "
             f"{doc['durationSeconds']} s · exit code {doc['exitCode']}{' · strict' if doc['strict'] else ''}</div>"
             f"<div style='margin-top:8px'>{summary}</div></header><main>"]
    if doc.get("unavailable"):
        parts.append(f"<p><strong>Target unreachable:</strong> {escape(doc['unavailable'])}</p>")
    by_profile: dict[str, list[dict]] = defaultdict(list)
    for check in doc["checks"]:
        by_profile[check["profile"]].append(check)
    parts.append("<table><tr><th>profile</th><th>claimed</th>" +
                 "".join(f"<th>{o}</th>" for o in ("pass", "fail", "warn", "info", "skip")) + "</tr>")
    for profile, claim in doc["profiles"].items():
        if profile not in by_profile and not claim["claimed"]:
            continue  # a profile this role has no checks for
        c = Counter(x["outcome"] for x in by_profile.get(profile, ()))
        claimed = f"yes ({escape(str(claim['claimedBy']))})" if claim["claimed"] else f"no — {escape(claim['reason'])}"
        parts.append(f"<tr><td><a href='#{escape(profile)}'>{escape(profile)}</a></td><td>{claimed}</td>" +
                     "".join(f"<td class=n>{c[o]}</td>" for o in ("pass", "fail", "warn", "info", "skip")) + "</tr>")
    parts.append("</table>")
    order = {"fail": 0, "stale": 1, "warn": 2, "xfail": 3, "info": 4, "pass": 5, "skip": 6}
    worst = {p: min(order.get(c["outcome"], 9) for c in cs) for p, cs in by_profile.items()}
    for profile, checks in sorted(by_profile.items(), key=lambda item: (worst[item[0]], item[0])):
        parts.append(f"<section class=profile id='{escape(profile)}'><h2>{escape(profile)}</h2>")
        for check in sorted(checks, key=lambda c: (order.get(c["outcome"], 9), c["id"])):
            parts.append(_check(check))
        parts.append("</section>")
    parts.append("</main></body></html>")
    return "".join(parts)


def _sources(row_ids) -> str:
    """Where the rows come from: each cited source by name and section, linked to its public URL."""
    from ..core import catalog

    cited = {}
    for rid in row_ids:
        row = catalog.load().get(rid)
        if row is None:  # a report written by another version of the catalog
            continue
        src, _ = catalog.cite(row)
        href = src.url if src and src.url else None
        cited.setdefault(row.source, href)
    return " · ".join(f"<a href='{escape(href)}'>{escape(text)}</a>" if href else escape(text)
                      for text, href in cited.items()) or "—"


def _check(check: dict) -> str:
    open_attr = " open" if check["outcome"] in ("fail", "stale") else ""
    rows = [("requirement", escape(check["requirement"])), ("the suite", escape(check["description"])),
            ("level", f"{escape(check['level'])} · rows {escape(', '.join(check['rows']) or '—')}"),
            ("sources", _sources(check["rows"])),
            ("verdict", f"{pill(check['outcome'])} {escape(check.get('reason') or '')}")]
    if "expected" in check:
        rows.append(("expected", f"<pre>{_json(check['expected'])}</pre>"))
    if "actual" in check:
        rows.append(("actual", f"<pre>{_json(check['actual'])}</pre>"))
    body = "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in rows)
    exchanges = "".join(
        f"<details><summary>exchange <code>{escape(ex['label'])}</code>"
        f"{' · ' + escape(ex['failure']) if ex.get('failure') else ''}</summary>"
        f"<pre>→ {_json(ex['request'])}</pre><pre>← {_json(ex['response'])}</pre></details>"
        for ex in check.get("exchanges", ()))
    return (f"<details class=check{open_attr}><summary id='{escape(check['id'])}'>{pill(check['outcome'])}<span class=id>{escape(check['id'])}"
            f"</span><span class=reason>{escape(check.get('reason') or '')}</span></summary>"
            f"<dl>{body}</dl>{exchanges}</details>")
