"""Server role, profile `preprocessor-tools` (the Preprocessor Tools RFC).

What a server can show of this profile is small: the `preprocessor` flag on a
Tool (a JSON boolean), and that a flagged tool is an ordinary, callable tool
otherwise; how hosts treat it is the host role's business. The server claims
the profile when any tool carries the field.

Fixtures (docs/fixture-contract.md): `conformance_memories` (flagged, `{query}` -> text that
contains the query) and `conformance_echo` (unflagged, `{text}` -> that text).
"""

from __future__ import annotations

import uuid

from ..core.judging import string_flag
from ..core.model import NotObserved, Violation, check, following
from .common import judge_shapes, require_result, shape_violations, short, text_of, wire_check
from .recording import Recording
from .session import Plan, Session

PROFILE = "preprocessor-tools"
MEMORIES, ECHO = "conformance_memories", "conformance_echo"


HOW_TO_CLAIM = "carry \"preprocessor\": true on a tool in tools/list (the fixture conformance_memories)"


def claimer(rec: Recording) -> str | None:
    flagged = [t.get("name") for t in rec.tools or () if isinstance(t, dict) and "preprocessor" in t]
    return f"tools carry the preprocessor field: {', '.join(map(str, flagged[:5]))}" if flagged else None


async def driver(session: Session, rec: Recording) -> None:
    calls = []
    if rec.tool(MEMORIES):
        calls.append(session.call_tool("call conformance_memories", MEMORIES,
                                       {"query": f"probe-{uuid.uuid4().hex[:8]}"}))
    if rec.tool(ECHO):
        calls.append(session.call_tool("call conformance_echo", ECHO, {"text": f"echo-{uuid.uuid4().hex[:8]}"}))
    await session.together(*calls)


def _tools(rec: Recording) -> list[dict]:
    rec.cite("tools/list")
    if rec.tools is None:
        raise NotObserved("tools/list returned no result")
    return [t for t in rec.tools if isinstance(t, dict)]


@check("preprocessor-tools/server/flag-is-boolean",
       does="lists every tool and validates each one carrying `preprocessor` against schemas/tool-preprocessor.json",
       must="where a tool carries `preprocessor`, it is the JSON boolean true or false")
def flag_is_boolean(rec: Recording):
    tools = [t for t in _tools(rec) if "preprocessor" in t]
    if not tools:
        raise NotObserved("no tool carries the preprocessor field")
    problems = [p for t in tools for p in shape_violations("tool-preprocessor", t, f"tool {t.get('name')!r}")]
    near = [miss for t in tools if (miss := string_flag(t))]
    if near:  # the near miss a string "true" is, named before the schema's words
        raise Violation(f"near miss: {'; '.join(near[:3])}{'; …' if len(near) > 3 else ''}",
                        expected="preprocessor: true | false", actual=problems[:5])
    judge_shapes(problems, "preprocessor: true | false")
    return f"{len(tools)} flagged tool(s), all boolean"


@check("preprocessor-tools/server/fixture-flagged",
       does="looks up the fixture tool conformance_memories in tools/list",
       must="the preprocessor fixture is listed with \"preprocessor\": true",
       needs=(f"tool:{MEMORIES}",))
def fixture_flagged(rec: Recording):
    tool = rec.fixture(MEMORIES)
    if tool.get("preprocessor") is not True:
        # A string "true" is flag-is-boolean's failure first: this one follows from it.
        with following(*(["preprocessor-tools/server/flag-is-boolean"] if string_flag(tool) else [])):
            raise Violation("conformance_memories is not flagged as a preprocessor", expected={"preprocessor": True},
                            actual={"preprocessor": tool.get("preprocessor", "(absent)")})


@check("preprocessor-tools/server/preprocessor-tool-callable",
       does="calls conformance_memories with a fresh query through tools/call",
       must="a preprocessor tool is an executable tool: the call succeeds and returns text containing the query",
       needs=(f"tool:{MEMORIES}",))
def preprocessor_tool_callable(rec: Recording):
    ex = rec.cite("call conformance_memories")
    result = require_result(rec, "call conformance_memories")
    query = ex.request["params"]["arguments"]["query"]
    if result.get("isError") is True:
        raise Violation("the preprocessor tool reported an error", expected="isError absent or false",
                        actual=short(result))
    if query not in text_of(result):
        raise Violation("the result text does not contain the query", expected=f"text containing {query!r}",
                        actual=short(result))


@check("preprocessor-tools/server/ordinary-tool-unaffected",
       does="looks up conformance_echo in tools/list and calls it",
       must="an ordinary tool beside preprocessors is listed without the flag (or false) and works as before",
       needs=(f"tool:{ECHO}",))
def ordinary_tool_unaffected(rec: Recording):
    tool = rec.fixture(ECHO)
    if tool.get("preprocessor", False) is not False:
        raise Violation("the ordinary fixture tool is flagged", expected="preprocessor absent or false",
                        actual={"preprocessor": tool.get("preprocessor")})
    ex = rec.cite("call conformance_echo")
    result = require_result(rec, "call conformance_echo")
    text = ex.request["params"]["arguments"]["text"]
    if result.get("isError") is True or text_of(result) != text:
        raise Violation("conformance_echo did not echo its input", expected=f"one text block {text!r}",
                        actual=short(result))


wire_check("preprocessor-tools/server/wire-messages-valid")
PLAN = Plan(claimer, driver)
