"""Server role, profile `preprocessor-tools` (the Preprocessor Tools RFC).

What a server can show of this profile is small: the `preprocessor` flag on a
Tool (a JSON boolean), and that a flagged tool is an ordinary, callable tool
otherwise; how hosts treat it is the host role's business. The server claims
the profile when any tool carries the field.

Fixtures (docs/fixture-contract.md): `conformance_memories` (flagged, `{query}` -> text that
contains the query) and `conformance_echo` (unflagged, `{text}` -> that text).

Three requests of the base protocol that the suite's other requests never make are made here once, judged, so a
server that mishandles them shows: a `ping`, a `tools/list` whose id is a string (the suite's ids are numbers
otherwise), and a call of `conformance_echo` carrying `_meta.progressToken`.
"""

from __future__ import annotations

import uuid

from ..client.recording import Recording
from ..client.session import MODERN_VERSION, ConnectionPlan, Session
from ..core.judging import canonical_sorted, short, string_flag, text_of
from ..core.model import NotApplicable, NotObserved, Violation, check, following
from .common import judge_shapes, require_result, shape_violations, wire_check

PROFILE = "preprocessor-tools"
MEMORIES, ECHO = "conformance_memories", "conformance_echo"
PING_LABEL, STRING_ID_LABEL, PROGRESS_LABEL = "ping", "tools/list with a string id", "call conformance_echo with a progressToken"


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
        stamp = uuid.uuid4().hex[:8]
        calls.append(session.call_tool("call conformance_echo", ECHO, {"text": f"echo-{stamp}"}))
        # The same call with a progress token: its answer must be the plain call's.
        calls.append(session.send(PROGRESS_LABEL, "tools/call", {"name": ECHO, "arguments": {"text": f"echo-{stamp}"},
                                                                 "_meta": {"progressToken": f"mcpx-progress-{stamp}"}}))
    if session.conn.mode != MODERN_VERSION:  # the 2026-07-28 revision removed ping
        calls.append(session.send(PING_LABEL, "ping"))
    calls.append(session.send(STRING_ID_LABEL, "tools/list", {}, request_id=f"mcpx-{uuid.uuid4().hex[:8]}"))
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


@check("preprocessor-tools/server/ping-answered",
       does="sends a ping request",
       must="the receiver of a ping responds promptly with an empty result")
def ping_answered(rec: Recording):
    init = rec.exchanges.get("initialize")
    if init is not None and init.method == "server/discover":
        raise NotApplicable(f"the connection speaks {MODERN_VERSION}, which has no ping")
    result = require_result(rec, PING_LABEL)
    # An empty result; `_meta`, which every MCP result may carry, is no content.
    if not isinstance(result, dict) or set(result) - {"_meta"}:
        raise Violation("ping was not answered with an empty result", expected={}, actual=short(result))
    return "ping answered {}"


@check("preprocessor-tools/server/string-request-id-answered",
       does="sends tools/list with a string request id (the suite's other requests have number ids)",
       must="a request id may be a string or an integer: the response carries the id exactly as sent")
def string_request_id_answered(rec: Recording):
    ex = rec.cite(STRING_ID_LABEL)
    sent = ex.request.get("id")
    if ex.has_error:
        raise Violation(f"a request with the string id {sent!r} was refused", expected="the tools/list result",
                        actual=short(ex.response))
    if not ex.has_result:
        stray = [e.message.get("id") for e in rec.wire if e.direction == "in" and isinstance(e.message, dict)
                 and "method" not in e.message and e.message.get("id") != sent and e.problem]
        raise Violation(f"no response carried the string id {sent!r}: {ex.outcome_text()}",
                        expected=f"a response with id {sent!r}",
                        actual=f"responses to ids the suite never sent: {stray[:3]}" if stray else ex.outcome_text())
    if not isinstance(ex.result, dict) or not isinstance(ex.result.get("tools"), list):
        raise Violation("the answer to tools/list with a string id is not a tools list",
                        expected="{tools: [...]}", actual=short(ex.result))
    return f"answered with id {sent!r}"


@check("preprocessor-tools/server/progress-token-call-answered",
       does="calls conformance_echo with `_meta.progressToken` in the request",
       must="a request carrying a progress token is served as without it; progress notifications are optional, and "
            "any sent name that token, with a progress that increases",
       needs=(f"tool:{ECHO}",))
def progress_token_call_answered(rec: Recording):
    ex = rec.cite(PROGRESS_LABEL)
    result = require_result(rec, PROGRESS_LABEL)
    token = ex.request["params"]["_meta"]["progressToken"]
    plain = rec.exchanges.get("call conformance_echo")
    want = plain.result if plain is not None and plain.has_result and isinstance(plain.result, dict) else None
    if result.get("isError") is True or want is not None and canonical_sorted(result) != canonical_sorted(want):
        raise Violation("the call carrying a progressToken was not served as the same call without it",
                        expected=short(want) if want is not None else "a result", actual=short(result))
    notes = [e.message["params"] for e in rec.wire if e.direction == "in" and isinstance(e.message, dict)
             and e.message.get("method") == "notifications/progress" and isinstance(e.message.get("params"), dict)
             and e.message["params"].get("progressToken") == token]
    values = [n.get("progress") for n in notes]
    if any(not isinstance(v, (int, float)) or isinstance(v, bool) for v in values) or \
            any(b <= a for a, b in zip(values, values[1:])):
        raise Violation(f"the progress notifications for {token!r} do not increase", expected="numbers, increasing",
                        actual=values)
    return f"served; {len(notes)} progress notification(s)" + (" (none is a choice the receiver may make)"
                                                               if not notes else "")


wire_check("preprocessor-tools/server/wire-messages-valid")
PLAN = ConnectionPlan(claimer, driver)
