"""Gateway role, profile `preprocessor-tools`: the preprocessor flag and tool calls pass through."""

from __future__ import annotations

from ..client.recording import Recording
from ..client.session import ConnectionPlan, Session
from ..core.judging import failed, short, text_of
from ..core.model import NotObserved, Violation, check
from .common import (
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

PROFILE = "preprocessor-tools"
QUERY = "gateway transparency probe: ümlauts \u2713"
ECHO_TEXT = "Echo through the gateway, mixed Case \u2713"

async def driver(session: Session, rec: Recording) -> None:
    tools = rec.tools or ()
    await session.call_tool("call conformance_memories", listed_name(tools, "conformance_memories"), {"query": QUERY})
    await session.call_tool("call conformance_echo", listed_name(tools, "conformance_echo"), {"text": ECHO_TEXT})


@check("preprocessor-tools/gateway/flag-passes-through",
       does="lists tools through the gateway and reads conformance_memories (preprocessor: true upstream) "
            "and conformance_echo (no flag)",
       must="the gateway passes a tool's \"preprocessor\": true through unchanged, and adds it to no other tool")
def flag_passes_through(rec: TransparencyRecording):
    memories, echo = fixture_tool(rec, "conformance_memories"), fixture_tool(rec, "conformance_echo")
    received(rec, "tools/list")
    for tool in (memories, echo):
        require_mark(rec, f"{tool['name']}'s description", tool.get("description"))
    if memories.get("preprocessor") is not True:
        raise Violation(f"{memories['name']} arrives without \"preprocessor\": true",
                        expected={"preprocessor": True}, actual=short(memories))
    if "preprocessor" in echo:
        raise Violation(f"{echo['name']} arrives with a preprocessor field its upstream never sent",
                        expected="no preprocessor field", actual=short(echo))
    return f"{memories['name']} keeps preprocessor: true, as this run's upstream listed it"


@check("preprocessor-tools/gateway/tool-calls-pass-through",
       does="calls conformance_memories (with a query) and conformance_echo through the gateway",
       must="calls to a preprocessor tool and an ordinary tool reach the upstream and their results come back")
def tool_calls_pass_through(rec: TransparencyRecording):
    fixture_tool(rec, "conformance_memories")
    rec.cite("call conformance_memories")  # both sides are cited, whichever fails first
    rec.cite("call conformance_echo")
    received(rec, "tools/call", "conformance_memories", {"arguments": {"query": QUERY}})
    received(rec, "tools/call", "conformance_echo", {"arguments": {"text": ECHO_TEXT}})
    for label, want in (("call conformance_memories", QUERY), ("call conformance_echo", ECHO_TEXT)):
        ex = rec.cite(label)
        if ex.failure:
            raise Violation(f"{label}: {ex.failure}", expected="a result", actual=ex.failure)
        if failed(ex):
            raise Violation(f"{label} failed through the gateway", expected=f"a result containing {want!r}",
                            actual=ex.response)
        if want not in text_of(ex.result):
            raise Violation(f"{label}: the upstream's text did not come back", expected=want,
                            actual=short(ex.result))
    require_mark(rec, "conformance_memories's result text", text_of(rec.cite("call conformance_memories").result))
    return "both calls reached the upstream and came back with its text"


@check("preprocessor-tools/gateway/optional-fields-arrive-unchanged",
       does="lists conformance_memories (with title) and conformance_echo, and calls both, through the gateway: "
            "the upstream sends _meta and an unknown key on each tool and each result",
       must="every optional and unknown field of the listed tools and the tools/call results arrives unchanged")
def optional_fields_arrive_unchanged(rec: TransparencyRecording):
    problems = []
    for name in ("conformance_memories", "conformance_echo"):
        tool = fixture_tool(rec, name)
        received(rec, "tools/list")
        want = {**extras(rec), **({"title": f"Conformance memories [{run_mark(rec)}]"}
                                  if name == "conformance_memories" else {})}
        problems += optional_fields(want, tool, f"tools/list {name}")
        ex = rec.cite(f"call {name}")
        received(rec, "tools/call", name)
        if ex.failure or not ex.has_result:
            raise NotObserved(f"call {name} through the gateway: {ex.outcome_text()}")
        problems += optional_fields(extras(rec), ex.result, f"tools/call {name}")
    if problems:
        dropped(problems)
    return "title, _meta and the unknown key of both tools and both results came through"


wire_check("preprocessor-tools/gateway/wire-messages-valid")
PLAN = ConnectionPlan(claimer, driver)
