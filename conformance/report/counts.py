"""One count per outcome, the only place outcomes are counted: results.json's summary, the console's closing
line, summary.md, index.html, the badges, junit.xml's suite properties and the Action's outputs all read it,
so they cannot disagree (pytest's own count would call a warning or an info "passed")."""

from __future__ import annotations

from typing import Any, Iterable

from ..core.model import OUTCOMES

# How the console and the badges say a count of each outcome (pytest's words where it has one).
WORDS = {"pass": "passed", "fail": "failed", "warn": "warned", "info": "info", "skip": "skipped",
         "xfail": "xfailed", "stale": "stale"}


def _outcome(item: Any) -> str:
    if isinstance(item, str):
        return item
    if isinstance(item, dict):
        return item["outcome"]
    return item.outcome


def outcome_counts(checks: Iterable[Any]) -> dict[str, int]:
    """{outcome: n} for every outcome, in OUTCOMES order, of verdicts (Result objects, results.json's check
    dicts, or outcome strings)."""
    counts = dict.fromkeys(OUTCOMES, 0)
    for item in checks:
        counts[_outcome(item)] += 1
    return counts


def by_profile(checks: Iterable[dict]) -> dict[str, dict[str, int]]:
    """outcome_counts per profile of results.json's checks."""
    groups: dict[str, list[dict]] = {}
    for check in checks:
        groups.setdefault(check["profile"], []).append(check)
    return {profile: outcome_counts(group) for profile, group in groups.items()}


def phrase(counts: dict[str, int]) -> str:
    """`15 passed, 1 warned, 3 skipped`: every outcome with a count, in OUTCOMES order."""
    return ", ".join(f"{counts[o]} {WORDS[o]}" for o in OUTCOMES if counts.get(o))


def nothing_tested(checks: Iterable[Any], claims: dict) -> bool:
    """Whether no check of a claimed profile was judged: nothing claimed, or every check of every claimed
    profile skipped (the unclaimed-profile refusal checks do not test an extension). Its own exit code."""
    for item in checks:
        profile = item["profile"] if isinstance(item, dict) else item.profile
        if (claims.get(profile) or {}).get("claimed") and _outcome(item) != "skip":
            return False
    return True
