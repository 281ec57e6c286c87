"""Reports: results.json (schemas/results.json), summary.md, and the terminal table.

Reports are pure functions of the results; `write_all` is the only I/O.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from collections import Counter, defaultdict
from pathlib import Path

from .. import __version__
from ..core.model import OUTCOMES, PROFILES, Result

ICONS = {"pass": "✅", "fail": "❌", "warn": "⚠️", "info": "ℹ️", "skip": "⏭️", "xfail": "🟡", "stale": "🔁"}


def _iso(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts, dt.timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def sdk_version() -> str | None:
    try:
        from importlib.metadata import version

        return version("mcp")
    except Exception:
        return None


def results_document(*, role: str, target: dict, results: list[Result], claims: dict, started: float,
                     finished: float, strict: bool, exit_code: int, unavailable: str | None = None) -> dict:
    counts = Counter(r.outcome for r in results)
    profiles = {}
    for profile in PROFILES:
        claim = claims.get(profile)
        if claim is None:
            has_checks = any(r.profile == profile for r in results)
            claim = {"claimed": False, "claimedBy": None,
                     "reason": unavailable or ("not recorded" if has_checks else f"no {role}-role checks ran")}
        profiles[profile] = claim
    doc = {
        "format": "mcp-ext-conformance/results", "formatVersion": 1,
        "suite": {"name": "mcp-ext-conformance", "version": __version__},
        "role": role, "target": target, "sdk": {"mcp": sdk_version()},
        "startedAt": _iso(started), "finishedAt": _iso(finished),
        "durationSeconds": round(finished - started, 3), "strict": strict, "profiles": profiles,
        "summary": {"total": len(results), **{o: counts.get(o, 0) for o in OUTCOMES}},
        "exitCode": exit_code,
        "checks": [r.to_json() for r in results],
    }
    if unavailable:
        doc["unavailable"] = unavailable
    return doc


def summary_markdown(doc: dict) -> str:
    """A CI job summary: per profile counts, then the failing checks with their requirement."""
    target = doc["target"]
    where = target.get("command") or target.get("url") or target.get("image") or target.get("adapter") or "?"
    lines = [f"# MCP extension conformance: {doc['role']} role", "",
             f"Target: `{where}` ({target.get('kind')}) · mcp SDK {doc['sdk']['mcp']} · "
             f"{doc['durationSeconds']} s · exit code {doc['exitCode']}", ""]
    if doc.get("unavailable"):
        lines += [f"**Target unreachable:** {doc['unavailable']}", ""]
    lines += ["| profile | claimed | pass | fail | warn | info | skip |", "|---|---|---|---|---|---|---|"]
    by_profile: dict[str, Counter] = defaultdict(Counter)
    for check in doc["checks"]:
        by_profile[check["profile"]][check["outcome"]] += 1
    for profile, claim in doc["profiles"].items():
        c = by_profile.get(profile, Counter())
        claimed = f"yes ({claim['claimedBy']})" if claim["claimed"] else "no"
        lines.append(f"| {profile} | {claimed} | {c['pass']} | {c['fail']} | {c['warn']} | {c['info']} | {c['skip']} |")
    bad = [c for c in doc["checks"] if c["outcome"] in ("fail", "warn", "stale")]
    if bad:
        lines += ["", "## Not passing", ""]
        for check in bad:
            lines.append(f"- {ICONS[check['outcome']]} **`{check['id']}`** ({check['level']}): {check['requirement']}  ")
            lines.append(f"  {_md_escape(check.get('reason') or '')}")
    else:
        lines += ["", "Every check that ran passed."]
    return "\n".join(lines) + "\n"


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def write_all(directory: str | os.PathLike, doc: dict) -> Path:
    path = Path(directory)
    path.mkdir(parents=True, exist_ok=True)
    (path / "results.json").write_text(json.dumps(doc, indent=2, ensure_ascii=False, default=str) + "\n",
                                       encoding="utf-8")
    (path / "summary.md").write_text(summary_markdown(doc), encoding="utf-8")
    from .badges import write_badges
    from .html import render

    (path / "index.html").write_text(render(doc), encoding="utf-8")
    write_badges(path / "badges", doc)
    return path


def terminal_table(results: list[Result], claims: dict) -> list[str]:
    """The closing table: one line a profile, then each check that did not pass."""
    lines = ["", "MCP extension conformance"]
    by_profile: dict[str, list[Result]] = defaultdict(list)
    for result in results:
        by_profile[result.profile].append(result)
    for profile in PROFILES:
        if profile not in by_profile:
            continue
        c = Counter(r.outcome for r in by_profile[profile])
        claim = claims.get(profile) or {}
        state = f"claimed ({claim.get('claimedBy')})" if claim.get("claimed") else "not claimed"
        counts = "  ".join(f"{o} {c[o]}" for o in OUTCOMES if c[o])
        lines.append(f"  {profile:<24} {state:<24} {counts}")
    for result in sorted(results, key=lambda r: r.id):
        if result.outcome in ("fail", "warn", "stale"):
            lines.append(f"  {result.outcome.upper():<5} {result.id}: {result.reason}")
    return lines
