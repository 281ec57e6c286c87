"""SVG badges, made with anybadge: one for the role, one per claimed profile, and one per profile judged with
its MUST and SHOULD pass rates.

The value says what happened ("35 passed", "33 passed, 2 info", "2 failed", "not claimed", "interrupted"),
each number the count of one outcome (report/counts.py, the same as every report's);
the colour follows the worst outcome: red for a failure or a stale baseline
entry, orange for warnings or expected failures, green when everything that
ran passed, grey when nothing ran or the run was interrupted.

The rates badge (`<role>-<profile>-rates.svg`, labelled with the profile's extension identifier) reads like
the per-proposal table (report/results.py): "MUST 14/14 · SHOULD 3/4"; red when a MUST check did not pass,
orange when a SHOULD check did not, green when every judged MUST and SHOULD check passed.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from pathlib import Path

from ..core.provenance import EXTENSION_IDS
from .counts import outcome_counts, phrase

GREY = "#6e7781"


def summarise(outcomes: list[str]) -> tuple[str, str]:
    """The badge's value and colour: the counts it names are report/counts.py's, in its words."""
    c = outcome_counts(outcomes)
    if c["fail"] or c["stale"]:
        return phrase({"fail": c["fail"], "stale": c["stale"]}), "red"
    if c["warn"] or c["xfail"]:
        return phrase({"warn": c["warn"], "xfail": c["xfail"]}), "orange"
    if c["pass"] or c["info"]:
        return phrase({"pass": c["pass"], "info": c["info"]}), "green"
    return "nothing ran", GREY


@functools.cache
def _memo():
    """Badges drawn before (core/memo.py): anybadge is imported only for a label, value and colour not seen yet."""
    from ..core.memo import Memo, library_stamp

    return Memo("badges", library_stamp("anybadge"))


def _draw(key: str) -> str:
    """anybadge's SVG, its one element id (a counter of badges drawn in the process, `anybadge_N`) named after the
    badge instead: the same badge is the same file in every run, and two different ones never share an id."""
    import anybadge

    label, value, colour = json.loads(key)
    drawn = anybadge.Badge(label, value, default_color=colour).badge_svg_text
    return re.sub(r"\banybadge_\d+\b", "anybadge_" + hashlib.sha256(key.encode()).hexdigest()[:12], drawn)


def svg(label: str, value: str, colour: str) -> str:
    """The SVG of one badge, as anybadge draws it."""
    return _memo().get(json.dumps([label, value, colour]), _draw)


def write_badges(directory: Path, doc: dict) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []

    def badge(name: str, label: str, value: str, colour: str) -> None:
        path = directory / f"{name}.svg"
        path.write_text(svg(label, value, colour), encoding="utf-8")
        written.append(path)

    role = doc["role"]
    ran = [c["outcome"] for c in doc["checks"] if doc["profiles"].get(c["profile"], {}).get("claimed")
           or c["outcome"] != "skip"]
    value, colour = summarise(ran)
    if doc.get("unavailable"):
        value, colour = "unreachable", "red"
    interrupted = bool(doc.get("interrupted"))
    if interrupted:  # cut short: no badge may read as a result, let alone a green one
        value, colour = "interrupted", GREY
    badge(role, f"MCP ext {role}", value, colour)
    for profile, claim in doc["profiles"].items():
        outcomes = [c["outcome"] for c in doc["checks"] if c["profile"] == profile]
        if interrupted:
            if outcomes:
                badge(f"{role}-{profile}", profile, "interrupted", GREY)
            continue
        if not claim["claimed"]:
            if not outcomes:
                continue
            value, colour = "not claimed", "#6e7781"
        else:
            value, colour = summarise(outcomes)
        badge(f"{role}-{profile}", profile, value, colour)
    for profile, (must, should) in level_rates(doc).items():
        if interrupted or not doc["profiles"].get(profile, {}).get("claimed"):
            continue  # only the unclaimed-profile checks ran: no rate of the proposal's behaviour
        badge(f"{role}-{profile}-rates", EXTENSION_IDS.get(profile, profile), *rates_value(must, should))
    _memo().save()
    return written


def level_rates(doc: dict) -> dict[str, tuple[list[int], list[int]]]:
    """Per profile with a judged MUST or SHOULD check: [passed, judged] of each level."""
    out: dict[str, tuple[list[int], list[int]]] = {}
    for check in doc["checks"]:
        if check["outcome"] == "skip" or check["level"] not in ("MUST", "SHOULD"):
            continue
        must, should = out.setdefault(check["profile"], ([0, 0], [0, 0]))
        counts = must if check["level"] == "MUST" else should
        counts[1] += 1
        counts[0] += check["outcome"] == "pass"
    return out


def rates_value(must: list[int], should: list[int]) -> tuple[str, str]:
    parts = [f"{name} {p}/{j}" for name, (p, j) in (("MUST", must), ("SHOULD", should)) if j]
    colour = "red" if must[0] < must[1] else "orange" if should[0] < should[1] else "green"
    return " · ".join(parts), colour
