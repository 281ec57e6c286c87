"""SVG badges, made with anybadge: one for the role, one per claimed profile, and one per profile judged with
its MUST and SHOULD pass rates.

The value says what happened ("35/35 passed", "2 failed", "not claimed");
the colour follows the worst outcome: red for a failure or a stale baseline
entry, orange for warnings or expected failures, green when everything that
ran passed, grey when nothing ran.

The rates badge (`<role>-<profile>-rates.svg`, labelled with the profile's extension identifier) reads like
the per-proposal table (report/results.py): "MUST 14/14 · SHOULD 3/4"; red when a MUST check did not pass,
orange when a SHOULD check did not, green when every judged MUST and SHOULD check passed.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import anybadge

from ..core.provenance import EXTENSION_IDS


def summarise(outcomes: list[str]) -> tuple[str, str]:
    c = Counter(outcomes)
    ran = sum(c[o] for o in ("pass", "fail", "warn", "info", "xfail", "stale"))
    if c["fail"] or c["stale"]:
        bad = c["fail"] + c["stale"]
        return f"{bad} failed", "red"
    if c["warn"] or c["xfail"]:
        parts = [f"{c['warn']} warning{'s' * (c['warn'] != 1)}" if c["warn"] else "",
                 f"{c['xfail']} known" if c["xfail"] else ""]
        return ", ".join(p for p in parts if p), "orange"
    if ran:
        return f"{c['pass'] + c['info']}/{ran} passed", "green"
    return "nothing ran", "#6e7781"


def write_badges(directory: Path, doc: dict) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []

    def badge(name: str, label: str, value: str, colour: str) -> None:
        path = directory / f"{name}.svg"
        anybadge.Badge(label, value, default_color=colour).write_badge(str(path), overwrite=True)
        written.append(path)

    role = doc["role"]
    ran = [c["outcome"] for c in doc["checks"] if doc["profiles"].get(c["profile"], {}).get("claimed")
           or c["outcome"] != "skip"]
    value, colour = summarise(ran)
    if doc.get("unavailable"):
        value, colour = "unreachable", "red"
    badge(role, f"MCP ext {role}", value, colour)
    for profile, claim in doc["profiles"].items():
        outcomes = [c["outcome"] for c in doc["checks"] if c["profile"] == profile]
        if not claim["claimed"]:
            if not outcomes:
                continue
            value, colour = "not claimed", "#6e7781"
        else:
            value, colour = summarise(outcomes)
        badge(f"{role}-{profile}", profile, value, colour)
    for profile, (must, should) in level_rates(doc).items():
        if not doc["profiles"].get(profile, {}).get("claimed"):
            continue  # only the unclaimed-profile checks ran: no rate of the proposal's behaviour
        badge(f"{role}-{profile}-rates", EXTENSION_IDS.get(profile, profile), *rates_value(must, should))
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
