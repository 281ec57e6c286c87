"""Gateway role, profile `execution-requirements`: requirement lists and unmet-requirement errors pass through."""

from __future__ import annotations

from ..client.fixtures import GATED, SATISFIED, UNMET
from ..client.recording import Recording
from ..client.session import ConnectionPlan, Session
from ..core.judging import error_text, failed, short, text_of
from ..core.model import NotObserved, Violation, check
from .common import (
    UNKNOWN_KEY,
    claimer,
    dropped,
    extras,
    fixture_tool,
    listed_name,
    optional_fields,
    received,
    require_mark,
    run_mark,
    wire_check,
)
from .recording import TransparencyRecording

PROFILE = "execution-requirements"

async def driver(session: Session, rec: Recording) -> None:
    for name in GATED:
        await session.call_tool(f"call {name}", listed_name(rec.tools, name), {})


@check("execution-requirements/gateway/requirements-pass-through",
       does="lists tools through the gateway and reads execution.requirements of the four gated fixtures",
       must="the gateway passes Tool.execution.requirements through unchanged: every string exact, in order")
def requirements_pass_through(rec: TransparencyRecording):
    wrong = {}
    for name, want in GATED.items():
        tool = fixture_tool(rec, name)
        received(rec, "tools/list")
        require_mark(rec, f"{tool['name']}'s description", tool.get("description"))
        execution = tool.get("execution")
        got = execution.get("requirements") if isinstance(execution, dict) else None
        if got != want:
            wrong[tool["name"]] = got if execution is not None else "(no execution field)"
    if wrong:
        raise Violation(f"{len(wrong)} gated tool(s) arrive with different requirements",
                        expected={n: GATED[n] for n in GATED}, actual=wrong)
    return "all four requirement lists arrive as the upstream declared them"


@check("execution-requirements/gateway/satisfied-call-passes",
       does="calls conformance_gated_ok, whose requirement the upstream satisfies, through the gateway",
       must="a gated call whose requirements are satisfied goes through and succeeds")
def satisfied_call_passes(rec: TransparencyRecording):
    fixture_tool(rec, "conformance_gated_ok")
    ex = rec.cite("call conformance_gated_ok")
    received(rec, "tools/call", "conformance_gated_ok")
    if ex.failure:
        raise Violation(f"conformance_gated_ok: {ex.failure}", expected="a successful result", actual=ex.failure)
    if failed(ex):
        raise Violation("the satisfied call failed through the gateway", expected="a result without isError",
                        actual=ex.response)
    require_mark(rec, "conformance_gated_ok's result text", text_of(ex.result))
    return "the satisfied call reached the upstream and its result came back"


@check("execution-requirements/gateway/unmet-error-passes-through",
       does="calls the three gated fixtures with an unmet requirement through the gateway and reads the errors",
       must="an unmet-requirement failure comes back as a failure naming each unmet requirement string exactly")
def unmet_error_passes_through(rec: TransparencyRecording):
    wrong = {}
    for name in UNMET:
        fixture_tool(rec, name)
        ex = rec.cite(f"call {name}")
        received(rec, "tools/call", name)
        unmet = [s for s in GATED[name] if s != SATISFIED]
        if ex.failure:
            raise Violation(f"{name}: {ex.failure}", expected=f"a failure naming {unmet}", actual=ex.failure)
        if not failed(ex):
            wrong[name] = f"succeeded: {short(ex.response, 150)}"
        elif not all(s in error_text(ex) for s in unmet):
            wrong[name] = error_text(ex)[:200]
        elif run_mark(rec) not in error_text(ex):
            wrong[name] = f"{error_text(ex)[:200]} (without this run's upstream mark {run_mark(rec)}: not the upstream's error)"
    if wrong:
        raise Violation("unmet-requirement errors do not come back naming the requirement exactly",
                        expected={n: [s for s in GATED[n] if s != SATISFIED] for n in wrong}, actual=wrong)
    return "each unmet call failed, naming its unmet requirement(s)"


@check("execution-requirements/gateway/optional-fields-arrive-unchanged",
       does="lists the gated fixtures and calls them through the gateway: the upstream sends execution.taskSupport, "
            "an unknown key in execution, _meta and an unknown key on each tool and each result",
       must="every optional and unknown field of the gated tools (execution included) and their tools/call results "
            "arrives unchanged")
def optional_fields_arrive_unchanged(rec: TransparencyRecording):
    problems = []
    for name in GATED:
        tool = fixture_tool(rec, name)
        received(rec, "tools/list")
        want = {**extras(rec), "execution": {"taskSupport": "forbidden", UNKNOWN_KEY: {"run": run_mark(rec)}}}
        problems += optional_fields(want, tool, f"tools/list {name}")
        ex = rec.cite(f"call {name}")
        received(rec, "tools/call", name)
        if ex.failure or not ex.has_result:
            raise NotObserved(f"call {name} through the gateway: {ex.outcome_text()}")
        problems += optional_fields(extras(rec), ex.result, f"tools/call {name}")
    if problems:
        dropped(problems)
    return f"taskSupport, _meta and the unknown keys of {len(GATED)} gated tools and their results came through"


wire_check("execution-requirements/gateway/wire-messages-valid")
PLAN = ConnectionPlan(claimer, driver)
