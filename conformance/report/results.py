"""Reports: results.json (schemas/results.json), summary.md, and the terminal table.

Reports are pure functions of the results; report/files.py writes them.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import defaultdict

from .. import __version__
from ..core import provenance
from ..core.judging import grouped_near_misses
from ..core.model import OUTCOMES, PROFILES, Result
from .counts import by_profile as counts_by_profile
from .counts import outcome_counts, phrase
from .inert import md_code, md_text

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
                     finished: float, strict: bool, exit_code: int, unavailable: str | None = None,
                     peer: dict | None = None, baseline: dict | None = None, interrupted: bool = False,
                     suite_error: str | None = None) -> dict:
    profiles = {}
    for profile in PROFILES:
        claim = claims.get(profile)
        if claim is None:
            has_checks = any(r.profile == profile for r in results)
            own = profile in role_profiles(role)
            claim = {"claimed": False, "claimedBy": None,
                     "reason": ("not run: no target was reached (the reason is above)" if unavailable else None)
                     or (NOT_JUDGED if suite_error and has_checks else None) or ("not recorded" if has_checks else
                                               _why_not_recorded(role, profile) if own else
                                               f"no {role}-role checks")}
        profiles[profile] = claim
    doc = {
        "format": "mcp-ext-conformance/results", "formatVersion": 1,
        "suite": {"name": "mcp-ext-conformance", "version": __version__},
        "role": role, "target": target, "sdk": {"mcp": sdk_version()},
        "startedAt": _iso(started), "finishedAt": _iso(finished),
        "durationSeconds": round(finished - started, 3), "strict": strict, "profiles": profiles,
        "summary": {"total": len(results), **outcome_counts(results)},
        "exitCode": exit_code, "interrupted": interrupted,
        "judgedAgainst": provenance.judged_against(),
        "checks": [{**r.to_json(), "sources": provenance.check_sources(r.id)} for r in results],
    }
    if peer:
        doc["targetInfo"] = peer
    if unavailable:
        doc["unavailable"] = unavailable
    if suite_error:
        doc["suiteError"] = suite_error
    if baseline:
        doc["baseline"] = baseline
    return doc


# -- what a run left untested, and why: one reading for the console, summary.md and index.html -----------------

NOT_JUDGED = "not judged: the suite failed before judging (the error is above)"  # a profile's claim, then
SDK_SURVIVAL = "docs/ecosystem.md#sdk-survival"  # which SDK drops which field, and the way around it
ATTENTION = "! "  # the console's prefix for the lines a reader must not miss


def _why_not_recorded(role: str, profile: str) -> str:
    from ..core import roles

    return roles.ROLES[role].why_not_recorded(profile) if role in roles.ROLES else "not recorded in this run"


def role_profiles(role: str) -> tuple[str, ...]:
    """The profiles the role has checks for: the only ones its reports list."""
    from ..core import roles

    known = roles.ROLES.get(role)
    return known.profiles if known else PROFILES


def untested(role: str, claims: dict) -> dict:
    """What of the extensions a run did not test, and why, from the claims of the profiles it recorded.

    `nothing`: no recorded profile of the role was claimed (only the unclaimed-profile checks ran).
    `unclaimed`: per unclaimed profile, its reason, where the target put the profile's fields instead
    (`misplaced`: under `_meta` or `capabilities.experimental`, which no proposal defines) and how to claim it.
    """
    # A profile the suite's own error left unjudged is neither claimed nor unclaimed: nobody knows.
    recorded = {p: claims[p] for p in role_profiles(role) if p in claims and claims[p].get("reason") != NOT_JUDGED}
    unclaimed = {p: c for p, c in recorded.items() if not c.get("claimed")}
    return {"nothing": bool(recorded) and len(unclaimed) == len(recorded), "unclaimed": unclaimed,
            "misplaced": [p for p, c in unclaimed.items() if c.get("misplaced")]}


def claim_advice(profile: str, claim: dict) -> str:
    """How the profile would be claimed: what the target would show, or the option."""
    from ..core.spelling import flag

    how = claim.get("howToClaim")
    option = f"{flag('profile')} {profile}"
    return f"{how}, or run with {option}" if how else f"run with {option}"


def headline(role: str, gaps: dict, passed: int = 0) -> list[str]:
    """The warnings a report opens with, as plain sentences (empty when every recorded profile was claimed)."""
    out = []
    if gaps["nothing"]:
        n = len(gaps["unclaimed"])
        ran = (f" (the {passed} that passed only judge that an unclaimed profile's methods are refused)"
               if passed else "")
        drop = ("" if gaps["misplaced"] or role != "server" else
                f" A server that sets the fields and shows none of them here may be on an SDK that drops them: "
                f"{SDK_SURVIVAL}")
        out.append(f"Nothing of the MCP extensions was tested: the {role} claimed none of its {n} profile(s), so "
                   f"no check of a profile's behaviour ran{ran}. Below: why each was not claimed, and how to "
                   f"claim it.{drop}")
    if gaps["misplaced"]:
        found = {m for p in gaps["misplaced"] for m in gaps["unclaimed"][p]["misplaced"]}
        what = []
        if any("_meta[" in m for m in found):
            what.append("tool fields are only under the tool's _meta")
        if any(m.startswith("capabilities.experimental") for m in found):
            what.append("capabilities are only under capabilities.experimental")
        if what:
            out.append(f"Not tested: {', '.join(gaps['misplaced'])}: the {' and the '.join(what)}, which no "
                       f"proposal defines. How to put them where the proposals do, SDK by SDK: {SDK_SURVIVAL}")
        for profile in gaps["misplaced"]:  # a near miss (core/judging.py NEAR_MISSES), each kind named
            out += [f"Not tested: {profile}: {sentence}"
                    for sentence in grouped_near_misses(gaps["unclaimed"][profile]["misplaced"])]
    return out


def closing_line(role: str, claims: dict) -> str | None:
    """The console's last line when the run left the extensions untested, so pytest's counts do not end it."""
    gaps = untested(role, claims)
    if gaps["nothing"]:
        return f"{ATTENTION}Nothing of the MCP extensions was tested: no profile was claimed (why: above)."
    if gaps["misplaced"]:
        return (f"{ATTENTION}Not tested: {', '.join(gaps['misplaced'])}: fields where no proposal puts them "
                f"(above).")
    return None


# -- the per-proposal table: MUST and SHOULD pass rates per source, as SDK tiering reads them ---------------------

def proposal_rates(checks, unclaimed=()) -> list[dict]:
    """Per (profile, source) a run judged, in catalog order: MUST and SHOULD checks passed of those judged (a
    skipped check is not judged: `na`), from (check id, level, outcome) triples; an `unclaimed` profile is one
    row, `claimed` false, with no rate (its refusal checks stay in the details). A check counts under its
    primary source (core/provenance.primary_source): the proposal for most, the fixture contract or JSON-RPC
    for the checks whose strongest rows come from them."""
    groups: dict[tuple[str, str], dict] = {}
    for check_id, level, outcome in checks:
        profile = check_id.split("/")[0]
        source = provenance.primary_source(check_id) or "(no catalog row)"
        g = groups.setdefault((profile, source), {"profile": profile, "source": source, "MUST": [0, 0],
                                                  "SHOULD": [0, 0], "na": 0, "total": 0,
                                                  "claimed": profile not in unclaimed})
        g["total"] += 1
        if outcome == "skip":
            g["na"] += 1
        elif level in ("MUST", "SHOULD"):
            g[level][1] += 1
            g[level][0] += outcome == "pass"
    order = {p: i for i, p in enumerate(PROFILES)}
    names = {(p, n): i for i, (p, n) in enumerate(_catalog_sources())}
    # An unclaimed profile is not rated: its refusal checks pass or fail in the details, but a rate of them
    # ("MUST 1/1 100%") would read as conformance to a proposal nothing of which was tested.
    kept = [g for g in groups.values() if g["claimed"]]
    kept += [{"profile": p, "source": "", "claimed": False} for p in dict.fromkeys(
        profile for profile, _ in groups if profile in unclaimed)]
    return sorted(kept, key=lambda g: (order.get(g["profile"], 99),
                                                  names.get((g["profile"], g["source"]), 99), g["source"]))


def _catalog_sources():
    from ..core import catalog

    return list(catalog.sources())


def rate(passed_judged: list[int]) -> str:
    """`12/14 86%`, or `-` when no check of the level was judged."""
    passed, judged = passed_judged
    return f"{passed}/{judged} {100 * passed // judged}%" if judged else "-"


def proposal_lines(checks, unclaimed=()) -> list[str]:
    """The per-proposal table for the console, within 100 columns."""
    table = proposal_rates(checks, unclaimed)
    if not table:
        return []
    lines = ["Per proposal (MUST, SHOULD: checks passed of those judged; n/a: not applicable, skipped)"]
    for g in table:
        if not g["claimed"]:
            lines.append(f"  {g['profile']}: not claimed")
            continue
        label = f"{g['profile']}: {g['source']}"
        lines.append(f"  {label[:50]:<50} MUST {rate(g['MUST']):<12} SHOULD {rate(g['SHOULD']):<12} "
                     f"n/a {g['na']}".rstrip())
    return lines


def proposal_markdown(checks, unclaimed=()) -> list[str]:
    table = proposal_rates(checks, unclaimed)
    if not table:
        return []
    lines = ["## Per proposal", "", "MUST and SHOULD: checks passed of those judged; n/a: checks not applicable "
             "(skipped).", "", "| profile | source | MUST | SHOULD | n/a |", "|---|---|---|---|---|"]
    for g in table:
        if not g["claimed"]:
            lines.append(f"| {g['profile']} | not claimed | | | |")
            continue
        lines.append(f"| {g['profile']} | {g['source'].replace('|', '/')} | {rate(g['MUST'])} | {rate(g['SHOULD'])} "
                     f"| {g['na']} |")
    return lines


def _doc_triples(doc: dict):
    return [(c["id"], c["level"], c["outcome"]) for c in doc["checks"]]


def wrap(text: str, first: str, rest: str, width: int = 100) -> list[str]:
    """`text` wrapped within `width` columns, the first line after `first`, the others after `rest`."""
    import textwrap

    # An option and its value stay on one line: "--profile" alone at a line's end reads as a typo.
    lines = textwrap.wrap(re.sub(r"(--(?:mcp-)?profile) ", "\\1\u00a0", text), width=width, initial_indent=first,
                          subsequent_indent=rest, break_long_words=False, break_on_hyphens=False)
    return [line.replace("\u00a0", " ") for line in lines] or [first.rstrip()]


def summary_markdown(doc: dict) -> str:
    """A CI job summary: what was not tested first, per profile counts, then the failing checks."""
    target = doc["target"]
    where = target.get("command") or target.get("url") or target.get("image") or target.get("adapter") or "?"
    role = doc["role"]
    gaps = untested(role, {p: c for p, c in doc["profiles"].items() if any(x["profile"] == p for x in doc["checks"])})
    interrupted = doc.get("interrupted")
    title = (f"# ⛔ Interrupted: MCP extension conformance, {role} role" if interrupted
             else f"# ⛔ The suite failed: MCP extension conformance, {role} role" if doc.get("suiteError")
             else f"# ⚠️ Nothing of the MCP extensions was tested: {role} role" if gaps["nothing"]
             else f"# ⚠️ MCP extension conformance: {role} role, {len(gaps['misplaced'])} profile(s) not tested "
                  f"(fields misplaced)" if gaps["misplaced"]
             else f"# MCP extension conformance: {role} role")
    lines = [title, ""]
    counts = outcome_counts(doc["checks"])
    if interrupted:
        lines += [f"> ⛔ **{interrupted_sentence(len(doc['checks']))}**", ""]
    for sentence in () if interrupted else headline(role, gaps, counts["pass"]):
        lines += [f"> ⚠️ {_link_docs(sentence)}", ""]
    for sentence in (doc.get("baseline") or {}).get("warnings", ()):
        lines += [f"> ⚠️ {_md_escape(sentence)}", ""]
    identity = _identity(doc.get("targetInfo")) if speaks_for_itself(doc) and not (
        interrupted and not doc.get("targetInfo")) else ""  # cut short, the run may never have asked
    lines += [f"Target: {md_code(where)} ({target.get('kind')}){identity} · "
              f"{doc['durationSeconds']:.1f} s · exit code {doc['exitCode']}", ""]
    if doc.get("suiteError"):
        lines += [f"**Not judged: {_md_escape(doc['suiteError'])}.**", ""]
    if doc.get("unavailable"):
        lines += ["**No target reached: nothing was judged.**", "", *(f"> {_md_escape(line.strip())}  " for line in doc["unavailable"].splitlines()), ""]
    lines += [f"Checks: {phrase(counts) or 'none judged'}.", ""]
    lines += ["| profile | claimed | " + " | ".join(OUTCOMES) + " |", "|---|---|" + "---|" * len(OUTCOMES)]
    per_profile = counts_by_profile(doc["checks"])
    for profile in role_profiles(role):
        claim = doc["profiles"].get(profile) or {"claimed": False, "claimedBy": None, "reason": ""}
        c = per_profile.get(profile) or outcome_counts(())
        claimed = (f"yes ({claim['claimedBy']})" if claim["claimed"] else
                   "**no**" if profile in gaps["unclaimed"] else "not run")
        lines.append(f"| {profile} | {claimed} | " + " | ".join(str(c[o]) for o in OUTCOMES) + " |")
    proposals = proposal_markdown(_doc_triples(doc), gaps["unclaimed"])
    if proposals:
        lines += ["", *proposals]
    if gaps["unclaimed"]:
        lines += ["", "## Not claimed, so not tested", ""]
        for profile, claim in gaps["unclaimed"].items():
            lines.append(f"- **{profile}**: {_md_escape(claim.get('reason') or 'not claimed')}. "
                         f"To claim it: {_md_escape(claim_advice(profile, claim))}.")
        if gaps["misplaced"]:
            lines.append(f"- The fix for fields an SDK drops or moves: [SDK survival]({SDK_SURVIVAL}).")
    bad = [c for c in doc["checks"] if c["outcome"] in ("fail", "warn", "stale")]
    if interrupted:
        lines += ["", "Interrupted: the checks above are what was judged before Ctrl-C; the rest were not."]
    if bad:
        lines += ["", "## Not passing", ""]
        for check in bad:
            lines.append(f"- {ICONS[check['outcome']]} **`{check['id']}`** ({check['level']}): {check['requirement']}  ")
            lines.append(f"  {_md_escape(check.get('reason') or '')}")
    elif interrupted:
        pass
    elif doc.get("unavailable"):
        lines += ["", "No check ran: the run never reached its target (above)."]
    elif gaps["nothing"]:
        lines += ["", "No check failed, but no profile was claimed: the run says nothing of the extensions."]
    elif gaps["unclaimed"]:
        lines += ["", f"Every check that ran passed; {len(gaps['unclaimed'])} profile(s) were not claimed and not "
                      f"tested (above)."]
    else:
        lines += ["", "Every check that ran passed."]
    return "\n".join(lines) + "\n"


def interrupted_sentence(judged: int) -> str:
    """The banner of an interrupted run's summary.md and index.html."""
    return (f"Interrupted (Ctrl-C) before the run finished: {judged} check(s) judged, the rest not at all. "
            f"This is no verdict on the target; run it again to the end.")


def speaks_for_itself(doc: dict) -> bool:
    """Whether the target answers initialize with a serverInfo (a server or a gateway; not a host, which is
    a client, nor an adapter, which is called in-process)."""
    return bool(doc.get("targetInfo")) or (doc["role"] != "host" and doc["target"].get("kind") != "adapter")


def _identity(info: dict | None) -> str:
    """` · serverInfo name version`: what the target says it is (its own words, escaped)."""
    if not info:
        return " · the target sent no serverInfo"
    said = " ".join(info[k] for k in ("name", "version") if info.get(k))
    return f" · serverInfo {md_code(said)}"


def _link_docs(sentence: str) -> str:
    return sentence.replace(SDK_SURVIVAL, f"[SDK survival]({SDK_SURVIVAL})")


# Every text in summary.md but the suite's own sentences and catalog is inert: each punctuation character
# escaped, each control character shown (report/inert.py).
_md_escape = md_text


def terminal_table(results: list[Result], claims: dict, role: str = "server") -> list[str]:
    """The closing table, within 100 columns: first what the run did not test (nothing claimed, fields
    where no proposal puts them), then one line a profile (an unclaimed one with why and how to claim it),
    then each check that did not pass."""
    gaps = untested(role, claims)
    lines = [""]
    for sentence in headline(role, gaps, sum(r.outcome == "pass" for r in results)):
        lines += wrap(sentence, ATTENTION, ATTENTION)
    lines.append(f"MCP extension conformance, {role} role")
    by_profile: dict[str, list[Result]] = defaultdict(list)
    for result in results:
        by_profile[result.profile].append(result)
    for profile in role_profiles(role):
        if profile not in by_profile:
            continue
        c = outcome_counts(by_profile[profile])
        claim = claims.get(profile) or {}
        state = f"claimed ({claim.get('claimedBy')})" if claim.get("claimed") else "NOT CLAIMED"
        counts = "  ".join(f"{o} {c[o]}" for o in OUTCOMES if c[o])
        lines.append(f"  {profile:<24} {state:<24} {counts}")
        if profile in gaps["unclaimed"]:
            lines += wrap(f"why: {claim.get('reason') or 'not claimed'}", " " * 6, " " * 11)
            lines += wrap(f"claim: {claim_advice(profile, claim)}", " " * 6, " " * 13)
    for result in sorted(results, key=lambda r: r.id):
        if result.outcome in ("fail", "warn", "stale"):
            lines += wrap(f"{result.outcome.upper():<5} {result.id}: {result.reason}", "  ", " " * 8)
    lines += proposal_lines([(r.id, r.level, r.outcome) for r in results], gaps["unclaimed"])
    return lines


_wrap = wrap  # the name it had
