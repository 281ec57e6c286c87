"""Server role, profile `execution-requirements` (SEP-2487).

Servers enforce every declared requirement at call time and fail the call when
any is unmet; strings are opaque and match exactly. Whether a gated body ran
is observed through the fixture counter `conformance_side_effects`, read before
and after: the counter must move for the satisfied call (otherwise the suite
cannot see anything, and says so) and must not move for any unmet call.

Fixtures (docs/fixture-contract.md): `conformance:satisfied` is the one satisfied string;
gated tools _ok, _unmet, _mixed, _case; `conformance_side_effects`. Contract version 2 adds
`conformance:café` (NFC) as satisfied and its near misses: _unicode_ok, _nfd, _confusable, _space.
"""

from __future__ import annotations

import re

from ..client.fixtures import GATED, SATISFIED, UNMET
from ..client.recording import Recording
from ..client.session import ConnectionPlan, Session
from ..core.judging import error_text, failed, short, text_of
from ..core.model import NotObserved, Violation, check
from .common import judge_shapes, require_result, shape_violations, wire_check

PROFILE = "execution-requirements"
# Fixture contract version 2: a satisfied non-ASCII string (the control) and near misses of satisfied strings.
UNICODE_OK = "conformance_gated_unicode_ok"
NEAR_MISSES = {
    "conformance_gated_nfd": "the NFD form of conformance:café",
    "conformance_gated_confusable": "conformance:satisfied with a Cyrillic а (U+0430)",
    "conformance_gated_space": "conformance:satisfied with a trailing space",
}
GATED_V2 = {UNICODE_OK: ["conformance:caf\u00e9"], "conformance_gated_nfd": ["conformance:cafe\u0301"],
            "conformance_gated_confusable": ["conformance:s\u0430tisfied"],
            "conformance_gated_space": ["conformance:satisfied "]}
COUNTER = "conformance_side_effects"
# A namespace is a non-empty prefix before a separator, as in "capability:rocket.launch".
NAMESPACED = re.compile(r"^[^\s:/]+[:/]\S")


def requirements_of(tool: dict | None):
    if tool is None:
        return None
    execution = tool.get("execution")
    return execution.get("requirements") if isinstance(execution, dict) else None


HOW_TO_CLAIM = "declare execution.requirements on a tool in tools/list (the fixtures conformance_gated_*)"


def claimer(rec: Recording) -> str | None:
    gated = [t.get("name") for t in rec.tools or () if isinstance(t, dict) and requirements_of(t) is not None]
    return f"tools declare execution.requirements: {', '.join(map(str, gated[:5]))}" if gated else None


async def driver(session: Session, rec: Recording) -> None:
    present = {name for name in (*GATED, *GATED_V2, COUNTER) if rec.tool(name)}

    def call(label: str, name: str):
        return [lambda: session.call_tool(label, name, {})] if name in present else []

    # Ordered: each counter read sees exactly the calls before it; the unmet calls among themselves are not.
    await session.in_stages(call("counter before", COUNTER),
                            call("call conformance_gated_ok", "conformance_gated_ok"),
                            call("counter after satisfied", COUNTER),
                            [make for name in UNMET for make in call(f"call {name}", name)],
                            call("counter after unmet", COUNTER),
                            # After the counter reads, which the satisfied control would move.
                            [make for name in GATED_V2 for make in call(f"call {name}", name)])


def counter(rec: Recording, label: str) -> int:
    result = require_result(rec, label)
    match = re.search(r"-?\d+", text_of(result))
    if result.get("isError") is True or not match:
        raise NotObserved(f"{COUNTER} did not return a count ({short(result)})")
    return int(match.group())



def judge_unmet_fails(rec: Recording, name: str) -> str:
    ex = rec.cite(f"call {name}")
    if ex.failure:
        raise Violation(f"{name}: {ex.failure}", expected="the call fails promptly", actual=ex.failure)
    if not failed(ex):
        raise Violation(f"{name} (requires {GATED[name]}) succeeded although a requirement is unmet",
                        expected="a JSON-RPC error or a result with isError: true", actual=ex.response)
    return f"{name} failed as required"


def _gated_tools(rec: Recording) -> list[dict]:
    rec.cite("tools/list")
    if rec.tools is None:
        raise NotObserved("tools/list returned no result")
    return [t for t in rec.tools if isinstance(t, dict) and "execution" in t]


@check("execution-requirements/server/requirements-are-strings",
       does="validates every tool carrying `execution` against schemas/tool-execution.json",
       must="execution is an object and execution.requirements, where present, an array of strings")
def requirements_are_strings(rec: Recording):
    tools = _gated_tools(rec)
    if not tools:
        raise NotObserved("no tool carries the execution field")
    problems = [p for t in tools for p in shape_violations("tool-execution", t, f"tool {t.get('name')!r}")]
    judge_shapes(problems, "execution: {requirements?: string[]}")
    return f"{len(tools)} tool(s) with execution, all well-formed"


@check("execution-requirements/server/requirements-namespaced",
       does="reads every requirement string of every tool",
       must="requirement strings SHOULD be namespaced, like capability:rocket.launch")
def requirements_namespaced(rec: Recording):
    strings = [s for t in _gated_tools(rec) if isinstance(requirements_of(t), list)
               for s in requirements_of(t) if isinstance(s, str)]
    if not strings:
        raise NotObserved("no tool declares a requirement string")
    bare = sorted({s for s in strings if not NAMESPACED.match(s)})
    if bare:
        raise Violation(f"{len(bare)} requirement string(s) without a namespace", expected="namespace:name",
                        actual=bare[:10])
    return f"{len(set(strings))} distinct string(s), all namespaced"


@check("execution-requirements/server/fixture-requirements-declared-exactly",
       does="compares the fixture tools' execution.requirements with the fixture contract, string for string",
       must="requirement strings are opaque: declared exactly as written, never rewritten or normalised",
       needs=tuple(f"tool:{name}" for name in GATED))
def fixture_requirements_declared_exactly(rec: Recording):
    # A set of strings (SEP-2487 "declares a set"): order is free, each string exact. Version 2's fixtures
    # are compared where the server exposes them: their strings are the ones a normalising server rewrites.
    contract = {**GATED, **{name: want for name, want in GATED_V2.items() if rec.tool(name)}}
    wrong = {name: requirements_of(rec.tool(name)) for name, want in contract.items()
             if not isinstance(requirements_of(rec.tool(name)), list)
             or sorted(map(str, requirements_of(rec.tool(name)))) != sorted(want)}
    if wrong:
        raise Violation("fixture requirement lists differ from the contract",
                        expected={n: contract[n] for n in wrong}, actual=wrong)


@check("execution-requirements/server/satisfied-requirement-allows-call",
       does="calls conformance_gated_ok, whose only requirement (conformance:satisfied) the server satisfies",
       must="a call whose requirements are all satisfied runs and succeeds",
       needs=("tool:conformance_gated_ok",))
def satisfied_requirement_allows_call(rec: Recording):
    ex = rec.cite("call conformance_gated_ok")
    if ex.failure:
        raise Violation(f"conformance_gated_ok: {ex.failure}", expected="a successful result", actual=ex.failure)
    if failed(ex):
        raise Violation("the satisfied call failed", expected="a result without isError", actual=ex.response)


@check("execution-requirements/server/unmet-requirement-fails-call",
       does="calls conformance_gated_unmet, which requires conformance:unsatisfied",
       must="if any requirement is not satisfied, the server fails the call",
       needs=("tool:conformance_gated_unmet",))
def unmet_requirement_fails_call(rec: Recording):
    return judge_unmet_fails(rec, "conformance_gated_unmet")


@check("execution-requirements/server/unmet-requirement-body-not-run",
       does="reads conformance_side_effects before and after the satisfied call, and after the three unmet calls",
       must="requirements are enforced before execution: no gated body runs when a requirement is unmet",
       needs=(f"tool:{COUNTER}", "tool:conformance_gated_ok", *(f"tool:{n}" for n in UNMET)))
def unmet_requirement_body_not_run(rec: Recording):
    before, after_ok, after_unmet = (counter(rec, "counter before"), counter(rec, "counter after satisfied"),
                                     counter(rec, "counter after unmet"))
    if after_ok != before + 1:
        raise NotObserved(f"the side-effect counter went {before} -> {after_ok} over the satisfied call "
                          "(expected +1), so it cannot show whether unmet bodies ran")
    if after_unmet != after_ok:
        raise Violation(f"gated bodies ran {after_unmet - after_ok} time(s) during the unmet calls",
                        expected=f"counter stays {after_ok}", actual=f"counter {after_unmet}")
    return "counter moved for the satisfied call only"


@check("execution-requirements/server/all-requirements-enforced",
       does="calls conformance_gated_mixed, which requires conformance:satisfied and conformance:unsatisfied",
       must="every declared requirement must hold, not any one of them",
       needs=("tool:conformance_gated_mixed",))
def all_requirements_enforced(rec: Recording):
    return judge_unmet_fails(rec, "conformance_gated_mixed")


@check("execution-requirements/server/requirement-matching-exact",
       does="calls conformance_gated_case, which requires Conformance:Satisfied (a different string)",
       must="requirement strings match exactly: a case variant of a satisfied string is unsatisfied",
       needs=("tool:conformance_gated_case",))
def requirement_matching_exact(rec: Recording):
    return judge_unmet_fails(rec, "conformance_gated_case")


@check("execution-requirements/server/near-miss-requirements-unmet",
       does="calls conformance_gated_unicode_ok (requires conformance:café, satisfied) and the near misses "
            "conformance_gated_nfd, _confusable and _space (its NFD form, a Cyrillic а, a trailing space)",
       must="requirement strings match exactly: no normalisation, folding of look-alike characters or trimming, "
            "so each near miss of a satisfied string is unsatisfied",
       needs=(f"tool:{UNICODE_OK}@2", *(f"tool:{name}@2" for name in NEAR_MISSES)))
def near_miss_requirements_unmet(rec: Recording):
    control = rec.cite(f"call {UNICODE_OK}")
    if control.failure or failed(control):
        raise NotObserved(f"{UNICODE_OK}, whose requirement the server satisfies, failed too "
                          f"({control.failure or error_text(control)}), so a refused near miss shows nothing")
    for name, what in NEAR_MISSES.items():
        ex = rec.cite(f"call {name}")
        if ex.failure:
            raise Violation(f"{name} ({what}): {ex.failure}", expected="a failed call", actual=ex.failure)
        if not failed(ex):
            raise Violation(f"{name} ran: {what} was treated as satisfied", expected="a failed call (unmet)",
                            actual=short(ex.response))
    return "the non-ASCII control ran; NFD, confusable and whitespace near misses all failed"


@check("execution-requirements/server/unmet-error-names-requirement",
       does="reads the error of each unmet call",
       must="the error SHOULD name the unmet requirement(s)",
       needs=tuple(f"tool:{n}" for n in UNMET))
def unmet_error_names_requirement(rec: Recording):
    silent, read = {}, 0
    for name in UNMET:
        ex = rec.cite(f"call {name}")
        if not failed(ex):
            continue  # unmet-requirement-fails-call and its siblings judge that
        read += 1
        unmet = [s for s in GATED[name] if s != SATISFIED]
        if not all(s in error_text(ex) for s in unmet):
            silent[name] = error_text(ex)[:200]
    if not read:
        raise NotObserved("no unmet call failed, so there is no error to read")
    if silent:
        raise Violation("errors do not name the unmet requirement",
                        expected={n: [s for s in GATED[n] if s != SATISFIED] for n in silent}, actual=silent)
    return f"{read} error(s) name what is unmet"


wire_check("execution-requirements/server/wire-messages-valid")
PLAN = ConnectionPlan(claimer, driver)
