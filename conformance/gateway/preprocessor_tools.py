"""Gateway role, profile `preprocessor-tools`: the preprocessor flag and tool calls pass through."""

from __future__ import annotations

from ..core.judging import failed, short, text_of
from ..core.model import Violation, check
from ..server.recording import Recording
from ..server.session import Plan, Session
from .common import claimer, fixture_tool, listed_name, wire_check

PROFILE = "preprocessor-tools"
QUERY = "gateway transparency probe: ümlauts \u2713"
ECHO_TEXT = "Echo through the gateway, mixed Case \u2713"

async def preprocessor_driver(session: Session, rec: Recording) -> None:
    tools = rec.tools or ()
    await session.call_tool("call conformance_memories", listed_name(tools, "conformance_memories"), {"query": QUERY})
    await session.call_tool("call conformance_echo", listed_name(tools, "conformance_echo"), {"text": ECHO_TEXT})


@check("preprocessor-tools/gateway/flag-passes-through",
       does="lists tools through the gateway and reads conformance_memories (preprocessor: true upstream) "
            "and conformance_echo (no flag)",
       must="the gateway passes a tool's \"preprocessor\": true through unchanged, and adds it to no other tool")
def flag_passes_through(rec: Recording):
    memories, echo = fixture_tool(rec, "conformance_memories"), fixture_tool(rec, "conformance_echo")
    if memories.get("preprocessor") is not True:
        raise Violation(f"{memories['name']} arrives without \"preprocessor\": true",
                        expected={"preprocessor": True}, actual=short(memories))
    if "preprocessor" in echo:
        raise Violation(f"{echo['name']} arrives with a preprocessor field its upstream never sent",
                        expected="no preprocessor field", actual=short(echo))
    return f"{memories['name']} keeps preprocessor: true"


@check("preprocessor-tools/gateway/tool-calls-pass-through",
       does="calls conformance_memories (with a query) and conformance_echo through the gateway",
       must="calls to a preprocessor tool and an ordinary tool reach the upstream and their results come back")
def tool_calls_pass_through(rec: Recording):
    fixture_tool(rec, "conformance_memories")
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
    return "both calls came back with the upstream's text"


wire_check("preprocessor-tools/gateway/wire-messages-valid")
PLAN = Plan(claimer, preprocessor_driver)
