"""Host role, profile `execution-requirements` (SEP-2487): the client rules.

Scenario `execution-requirements/known-and-unknown`: the application knows
`scenario:known-true` (satisfied) and `scenario:known-false`, `scenario:café`
(NFC), `scenario:auth` (known unsatisfiable). The server lists tools whose
requirements are unknown, satisfied, known unsatisfiable, mixed, and near
misses of the known unsatisfiable strings (case, NFD, a Cyrillic `а`, a
trailing space): exact matching makes every near miss an unknown string, so
those tools must be offered as if the field were absent. Only
`er_known_false` may be left out, and whether it was is reported, not judged.
In the turn, the model calls `er_exact_error`, whose unmet requirement
`X-Vendor:Ünïcode Mixed-Case` comes back in the error text: it must reach the
model byte for byte.
"""

from __future__ import annotations

from ..core.judging import match_name
from ..core.model import NotObserved, Violation, check
from .common import ScenarioPlan, wire_check
from .recording import HostRecording, tool_names

PROFILE = "execution-requirements"
SCENARIO = "execution-requirements/known-and-unknown"
SCENARIOS = (SCENARIO,)
NEAR_MISSES = {
    "er_case_variant": "Scenario:Known-False (case)",
    "er_nfd_variant": "scenario:cafe + U+0301 (NFD of a known NFC string)",
    "er_confusable_variant": "scenario:\u0430uth (Cyrillic a)",
    "er_whitespace_variant": "'scenario:known-false ' (trailing space)",
}
EXACT = "X-Vendor:Ünïcode Mixed-Case"


def _offered(rec: HostRecording) -> list[str]:
    run = rec.cite(SCENARIO, turns_needed=0)
    first = next((r for r in run.model if r.valid), None)
    if first is None:
        raise NotObserved(f"the host never sent the model a request{'; ' + run.fatal if run.fatal else ''}")
    return tool_names(first.body)


def _must_offer(rec: HostRecording, tools: dict[str, str], why: str) -> str:
    names = _offered(rec)
    missing = [f"{tool} ({what})" for tool, what in tools.items() if not match_name(names, tool)]
    if missing:
        raise Violation(f"a tool was left out although {why}", expected=sorted(tools), actual={
            "notOffered": missing, "offered": names})
    return f"offered: {', '.join(sorted(tools))}"


@check("execution-requirements/host/unknown-requirement-offered",
       does="lists er_unknown (requirements [\"x-vendor:never-heard-of-it\"], unknown to the application) and "
            "reads the tools of the first model request",
       must="a tool with an unknown requirement is offered as if execution.requirements were absent")
def unknown_offered(rec: HostRecording):
    return _must_offer(rec, {"er_unknown": "unknown string"}, "its requirement is unknown")


@check("execution-requirements/host/partly-unknown-offered",
       does="lists er_false_and_unknown (one known unsatisfiable string, one unknown)",
       must="when any requirement is unknown, the host behaves as if execution.requirements were absent")
def partly_unknown_offered(rec: HostRecording):
    return _must_offer(rec, {"er_false_and_unknown": "known false + unknown"}, "one of its requirements is unknown")


@check("execution-requirements/host/satisfiable-offered",
       does="lists er_known_true, whose only requirement the application knows to be satisfied",
       must="when all requirements may be satisfied, the host behaves as if execution.requirements were absent")
def satisfiable_offered(rec: HostRecording):
    return _must_offer(rec, {"er_known_true": "known true"}, "its requirement is satisfied")


@check("execution-requirements/host/no-inferred-equivalence",
       does="lists tools whose requirement differs from a known unsatisfiable string only by case, Unicode "
            "normalization, a confusable character or whitespace",
       must="requirement strings match exactly: a near miss of a known string is unknown, so the tool is offered")
def no_inferred_equivalence(rec: HostRecording):
    return _must_offer(rec, NEAR_MISSES, "its requirement is not a known string (exact matching)")


@check("execution-requirements/host/requirement-strings-not-rewritten",
       does=f"has the model call er_exact_error, whose unmet requirement {EXACT!r} comes back in the error text, "
            "and reads the tool message of the next model request",
       must="requirement strings reach the model exactly as the server wrote them")
def not_rewritten(rec: HostRecording):
    run = rec.cite(SCENARIO, turns_needed=0)
    calls = [e for e in run.calls(1) if match_name([str((e.get("params") or {}).get("name"))], "er_exact_error")]
    if not calls:
        raise NotObserved("the host never called er_exact_error (was it offered?)")
    later = [r for r in run.model_in(1) if r.t > calls[0]["t"]]
    if not later:
        raise NotObserved("the host sent the model no request after the tool call")
    tool_messages = [m for m in later[0].body.get("messages", []) if isinstance(m, dict) and m.get("role") == "tool"]
    texts = [c if isinstance(c, str) else str(c) for c in (m.get("content") for m in tool_messages)]
    if not any(EXACT in t for t in texts):
        raise Violation("the requirement string in the tool error did not reach the model unchanged",
                        expected=f"a tool message containing {EXACT!r}", actual=texts or "no tool message")


@check("execution-requirements/host/known-unsatisfiable-filtered",
       does="lists er_known_false, whose only requirement the application knows to be unsatisfiable",
       must="a host may leave such a tool out; the suite reports whether it did")
def known_unsatisfiable(rec: HostRecording):
    names = _offered(rec)
    return "er_known_false was filtered out" if not match_name(names, "er_known_false") else \
        "er_known_false was offered (filtering is optional)"

wire_check("execution-requirements/host/wire-messages-valid", SCENARIOS)
PLAN = ScenarioPlan(SCENARIOS)
