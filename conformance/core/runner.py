"""From a recording to a verdict: the framework-agnostic core under the pytest layer.

`evaluate` applies the rules every check shares (claims, fixtures, levels,
"not observed" is a failure) around the check's own judge, and returns a
`Result`. Nothing here does I/O; the pytest plugin and the suite's own tests
call it with recordings.
"""

from __future__ import annotations

import time

from . import catalog
from .model import (
    Check,
    NotApplicable,
    NotObserved,
    Result,
    Violation,
    describe,
    fixture_need,
    once,
    outcome_for_level,
    target_kind,
)

WRONG_TARGET = {
    "live": "judged on a live implementation; this run replays the interceptors working group's fixtures",
    "wg-fixtures": "judged on the interceptors working group's fixtures replayed through an adapter "
                   "(server --adapter MODULE:FACTORY --wg-fixtures DIR)",
}


def claim_of(rec) -> dict:
    """The profile's claim as results.json shows it; an unclaimed one also says where the target put the
    profile's fields instead (`misplaced`) and how the profile is claimed (`howToClaim`), when known."""
    claim = {"claimed": rec.claimed, "claimedBy": rec.claimed_by, "reason": rec.claim_reason}
    if not rec.claimed:
        if getattr(rec, "misplaced", None):
            claim["misplaced"] = list(rec.misplaced)
        if getattr(rec, "how_to_claim", ""):
            claim["howToClaim"] = rec.how_to_claim
    return claim


def evaluate(check: Check, rec) -> Result:
    from .spelling import flag  # the flag as the form in use spells it (--profile, --mcp-profile)

    started = time.perf_counter()
    rows = catalog.rows_for(check.id)
    level = catalog.level_of(check.id)
    result = Result(check.id, level, "pass", [r.id for r in rows], check.must, check.does, claim=claim_of(rec))

    def finish(outcome: str, reason: str | None = None, **kw) -> Result:
        if outcome in ("fail", "warn") and rec.claimed and hasattr(rec, "explain"):
            reason = rec.explain(reason)  # the server's SDK, where it is the cause (server/sdk.py)
        result.outcome, result.reason = outcome, once(reason) if reason else reason
        for key, value in kw.items():
            setattr(result, key, value)
        result.exchanges = [rec.exchanges[label].to_report() for label in rec.cited if label in rec.exchanges]
        result.duration = time.perf_counter() - started
        result.judged_at = time.time()
        return result

    rec.cited.clear()  # the evidence of this verdict is what this judge cites
    if check.target != target_kind(rec):  # a live check on a fixture replay, or the other way round
        return finish("skip", WRONG_TARGET[check.target])
    if rec.unavailable:
        return finish("fail", rec.unavailable)
    if rec.init_failed:  # whether claimed or not is unknowable: fail, never skip, what could not be observed
        return finish("fail", f"not observed: {rec.fatal}")
    if check.when == "claimed" and not rec.claimed:
        return finish("skip", f"profile not claimed: {rec.claim_reason} (claim it with {flag('profile')} {check.profile})")
    if check.when == "unclaimed" and rec.claimed:
        return finish("skip", "the profile is claimed; capability-advertised judges its advertisement")
    missing = [fixture_need(need) for need in check.needs if not rec.has_fixture(fixture_need(need)[0])]
    if missing:
        # A list read only in part (a page cap, a cursor loop) is the first cause of a fixture not found.
        why = "".join(f" ({cause})" for cause in (rec.fatal, *getattr(rec, "list_problems", ())) if cause)
        names = ", ".join(name.replace(":", " ") for name, _ in missing)
        # A fixture newer than the contract version the run requires is reported, never a failure: a server
        # written to an older contract keeps its verdicts until the run asks for the newer one.
        contract = getattr(rec, "fixture_contract", 1)
        newer = min(version for _, version in missing)
        if newer > contract:
            return finish("skip", f"fixture of contract version {newer} not exposed: {names}{why} "
                                  f"({flag('fixture-contract')} {newer} requires it)")
        if rec.by_option:
            return finish(outcome_for_level(level), f"fixture missing: {names}{why}; the profile is claimed "
                                                    f"with {flag('profile')}, so its fixtures are required")
        return finish("skip", f"fixture not exposed: {names}{why}", untestable=True)
    try:
        note = check.judge(rec)
    except NotApplicable as exc:
        return finish("skip", str(exc))
    except NotObserved as exc:
        # What could not be observed is a failure at the check's level; an information-level check that
        # cannot report anything fails too, rather than passing silently (docs/check-model.md, "not observed").
        outcome = outcome_for_level(level) if level in ("MUST", "SHOULD") else "fail"
        reason, cause = _caused(check, exc, rec)
        return finish(outcome, reason, expected=exc.expected, actual=exc.actual, follows_from=cause)
    except Violation as exc:
        reason, cause = _caused(check, exc, rec)
        return finish(outcome_for_level(exc.level or level), reason, expected=exc.expected, actual=exc.actual,
                      follows_from=cause)
    except Exception as exc:  # a bug in the suite, never the target's fault
        return finish("fail", f"internal error in the suite's judge: {describe(exc)}")
    return finish("pass" if level in ("MUST", "SHOULD") else "info", note)


_ASKING: set[str] = set()  # checks being judged for a first cause: a cycle of `following` stops there


def _caused(check: Check, exc: Violation, rec) -> tuple[str, str | None]:
    """(reason, first cause): a failure that follows from another check's failure (model.following) names that
    check, the first of a chain of them, so a reader starts where the fault is."""
    _ASKING.add(check.id)
    try:
        cause = first_cause(exc.follows, rec)
    finally:
        _ASKING.discard(check.id)
    return (f"follows from {cause}: {exc.reason}", cause) if cause else (exc.reason, None)


def first_cause(check_ids, rec) -> str | None:
    """The first of `check_ids` that fails on `rec` (or the check its failure follows from in turn), or None."""
    from .model import REGISTRY

    cited = list(rec.cited)  # judging another check cites its evidence; this verdict keeps its own
    try:
        for cid in check_ids:
            prior = REGISTRY.get(cid)
            if prior is None or cid in _ASKING:
                continue
            result = evaluate(prior, rec)
            if result.outcome in ("fail", "warn"):
                return result.follows_from or cid
        return None
    finally:
        rec.cited[:] = cited


def evaluate_all(role: str, recordings: dict) -> dict[str, Result]:
    """Every check of `role` whose profile was recorded on a target of the check's kind, by check id."""
    from .model import REGISTRY

    return {cid: evaluate(check, recordings[check.profile]) for cid, check in sorted(REGISTRY.items())
            if check.role == role and check.profile in recordings
            and check.target == target_kind(recordings[check.profile])}
