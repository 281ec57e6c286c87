"""Host role, profile `context-middleware` (the Context Middleware SEP): the application runs middleware around the model.

Scenarios:
- `context-middleware/redact-restore`: request-phase `scenario_redact` replaces
  emails, SSNs and card numbers with handles (the server remembers them),
  response-phase `scenario_restore` puts them back; the mock model repeats what
  it was sent, so the host's printed answer shows whether restoration ran.
- `context-middleware/priority-chain`: `scenario_tag` configured five times
  (priorities 70, 20, none, 20, 5), each appending its tag: the recorded
  invocations show the order and what each received.
- `context-middleware/failing`: the only request-phase middleware fails: a
  JSON-RPC error in turn 1, a result whose content is a string in turn 2, one
  whose metadata is a string in turn 3; in none of them may the user's message
  reach the model (a malformed result is a failure, not something to repair).
- `context-middleware/tool-filter`: `scenario_tool_filter` answers the context
  unchanged with the SEP's tool-filtering metadata (its example 6,
  `suggestedToolSet` and `relevantTools`) naming two of its server's three tools;
  the harness's reading (HARNESS.md §3): the model is offered only those.
Every middleware result carries `metadata.secret = META-<nonce>`: it must never
reach the model.
"""

from __future__ import annotations

from ..core.judging import match_name
from ..core.model import NotObserved, Violation, check
from .common import ScenarioPlan, wire_check
from .harness import HostRun
from .recording import HostRecording, last_user_message, offer_problems, request_text, result_text, tool_names

PROFILE = "context-middleware"
REDACT = "context-middleware/redact-restore"
CHAIN = "context-middleware/priority-chain"
FAILING = "context-middleware/failing"
TOOL_FILTER = "context-middleware/tool-filter"
SCENARIOS = (REDACT, CHAIN, FAILING, TOOL_FILTER)
SUGGESTED, LEFT_OUT = ("scenario_keep", "scenario_also"), ("scenario_drop",)
ORDER = ["early", "tie-first", "tie-second", "default", "late"]
PRIORITY = {"early": 5, "tie-first": 20, "tie-second": 20, "default": 50, "late": 70}


def _invokes(run: HostRun, turn: int | None, name: str | None = None) -> list[dict]:
    return [e for e in run.calls(turn, "middleware/invoke") if name is None or e["params"].get("name") == name]


def _pii(run: HostRun) -> list[str]:
    """The PII values the user typed in the redact-restore turns."""
    import re

    from .scenario_server import PII_PATTERNS

    return [m.group(0) for t in run.turns for _, p in PII_PATTERNS for m in re.finditer(p, t.user)]


@check("context-middleware/host/request-middleware-runs-every-turn",
       does="configures scenario_redact as request-phase middleware and records its invocations over two turns",
       must="request-phase middleware runs on every turn, before the turn's first model request")
def request_every_turn(rec: HostRecording):
    run = rec.cite(REDACT)
    problems = []
    for turn in run.turns:
        calls = _invokes(run, turn.index, "scenario_redact")
        first = next(iter(run.model_in(turn.index)), None)
        if not calls:
            problems.append(f"turn {turn.index}: not invoked")
        elif first is None:  # "before the model request" cannot be judged without one
            raise NotObserved(f"turn {turn.index}: the host sent the model no request")
        elif calls[0]["t"] > first.t:
            problems.append(f"turn {turn.index}: invoked after the model request")
    if problems:
        raise Violation("request-phase middleware did not run before the model on every turn",
                        expected="scenario_redact invoked in each turn before the model request", actual=problems)


@check("context-middleware/host/model-sees-middleware-output",
       does="compares each turn's model request with what scenario_redact returned in that turn",
       must="the model receives the request-phase middleware's output, and no PII the middleware removed")
def model_sees_output(rec: HostRecording):
    run = rec.cite(REDACT)
    leaked = [v for r in run.model if r.valid for v in _pii(run) if v in request_text(r.body)]
    if leaked:
        raise Violation("PII the middleware redacts reached the model", expected="no email, SSN or card number "
                        "in any model request", actual=sorted(set(leaked)))
    missing = []
    for turn in run.turns:
        calls = _invokes(run, turn.index, "scenario_redact")
        requests = run.model_in(turn.index)
        if not calls or not requests:
            raise NotObserved(f"turn {turn.index}: {'no invocation' if not calls else 'no model request'}")
        output = result_text(calls[-1])
        if output not in request_text(requests[0].body):
            missing.append(f"turn {turn.index}: {output!r}")
    if missing:
        raise Violation("the model request does not carry the middleware's output",
                        expected="the redacted text in the turn's model request", actual=missing)


@check("context-middleware/host/response-middleware-applied",
       does="configures scenario_restore as response-phase middleware; the model repeats the redacted message",
       must="response-phase middleware runs on the model's answer before the user sees it (restoration gives "
            "back the originals)")
def response_applied(rec: HostRecording):
    run = rec.cite(REDACT)
    problems = []
    for turn in run.turns:
        calls = _invokes(run, turn.index, "scenario_restore")
        last_model = max((r.t for r in run.model_in(turn.index)), default=None)
        printed = (turn.answer or {}).get("content") or ""
        if not calls:
            problems.append(f"turn {turn.index}: scenario_restore not invoked")
            continue
        if last_model is not None and calls[-1]["t"] < last_model:
            problems.append(f"turn {turn.index}: invoked before the model answered")
        lost = [v for v in _pii(run) if v in turn.user and v not in printed]
        if lost:
            problems.append(f"turn {turn.index}: printed answer lacks {lost}: {printed!r}")
    if problems:
        raise Violation("the answer the user saw was not restored", expected="the user's own values back in the "
                        "printed answer", actual=problems)


@check("context-middleware/host/metadata-not-forwarded",
       does="looks for the middleware metadata token META-<nonce> in every model request",
       must="middleware metadata stays with the application and never reaches the model")
def metadata_not_forwarded(rec: HostRecording):
    seen = 0
    leaks = []
    for sid in (REDACT, CHAIN):
        run = rec.cite(sid, turns_needed=1)
        seen += len(run.calls(None, "middleware/invoke"))
        secret = f"META-{run.nonce}"
        leaks += [f"{sid} turn {r.turn}" for r in run.model if r.valid and secret in request_text(r.body)]
    if not seen:
        raise NotObserved("no middleware was invoked, so no metadata existed")
    if leaks:
        raise Violation("middleware metadata reached the model", expected="no META-<nonce> in model requests",
                        actual=leaks)


@check("context-middleware/host/middleware-not-offered-as-tools",
       does="reads the tools of every model request in the middleware scenarios",
       must="middleware is never offered to the model as a tool")
def not_tools(rec: HostRecording):
    offered, requests = [], 0
    for sid in SCENARIOS:
        run = rec.cite(sid, turns_needed=0)
        for r in run.model:
            if r.valid:
                requests += 1
                offered += [f"{sid}: {n}" for n in tool_names(r.body)
                            if any(match_name([n], m) for m in ("scenario_redact", "scenario_restore", "scenario_tag",
                                                           "scenario_fail"))]
    if not requests:
        raise NotObserved("the host sent the model no request")
    if offered:
        raise Violation("middleware was offered as a tool", expected="no middleware name in tools",
                        actual=sorted(set(offered)))


def _chain_tags(run: HostRun, turn: int) -> list[str]:
    return [str((e["params"].get("arguments") or {}).get("tag")) for e in _invokes(run, turn, "scenario_tag")]


@check("context-middleware/host/priority-order",
       does="configures scenario_tag five times with priorities 70, 20, (none), 20, 5 and records the order of "
            "the invocations",
       must="request-phase middleware runs in ascending priority, 50 when none is given")
def priority_order(rec: HostRecording):
    run = rec.cite(CHAIN, turns_needed=1)
    problems = {}
    ran = [t for t in run.turns if _chain_tags(run, t.index)]
    if not ran:
        raise NotObserved("scenario_tag was never invoked")
    for turn in ran:
        tags = _chain_tags(run, turn.index)
        if sorted(tags) != sorted(ORDER):
            problems[f"turn {turn.index}"] = tags
            continue
        levels = [PRIORITY[t] for t in tags]
        if levels != sorted(levels):
            problems[f"turn {turn.index}"] = tags
    if problems:
        raise Violation("the middleware did not run in priority order", expected=ORDER, actual=problems)


@check("context-middleware/host/equal-priority-definition-order",
       does="configures two scenario_tag entries with priority 20 (tie-first listed before tie-second)",
       must="middleware with equal priority runs in the order the configuration lists it")
def equal_priority(rec: HostRecording):
    run = rec.cite(CHAIN, turns_needed=1)
    wrong, judged = {}, 0
    for turn in run.turns:
        tags = [t for t in _chain_tags(run, turn.index) if t.startswith("tie-")]
        if len(tags) != 2:
            continue
        judged += 1
        if tags != ["tie-first", "tie-second"]:
            wrong[f"turn {turn.index}"] = tags
    if not judged:
        raise NotObserved("the two tied middleware never both ran in one turn")
    if wrong:
        raise Violation("tied middleware ran out of definition order", expected=["tie-first", "tie-second"],
                        actual=wrong)


@check("context-middleware/host/chained-input",
       does="compares the context each scenario_tag invocation received with the previous invocation's output",
       must="each middleware is given the previous one's output")
def chained_input(rec: HostRecording):
    run = rec.cite(CHAIN, turns_needed=1)
    problems, judged = [], 0
    for turn in run.turns:
        calls = _invokes(run, turn.index, "scenario_tag")
        if not calls:
            continue
        judged += 1
        expected_in = turn.user
        for call in calls:
            got = "\n".join(b.get("text", "") for b in call["params"].get("context") or () if isinstance(b, dict))
            if got != expected_in:
                problems.append(f"turn {turn.index}, tag {call['params'].get('arguments', {}).get('tag')}: got "
                                f"{got!r}, expected {expected_in!r}")
            expected_in = result_text(call)
    if not judged:
        raise NotObserved("scenario_tag was never invoked")
    if problems:
        raise Violation("middleware was not chained", expected="each invocation's context = the previous output",
                        actual=problems)


@check("context-middleware/host/failing-middleware-blocks-turn",
       does="configures one request-phase middleware that answers with a JSON-RPC error; the user message "
            "carries RAW-<nonce>",
       must="when request-phase middleware fails, unprocessed context does not reach the model")
def failing_blocks(rec: HostRecording):
    run = rec.cite(FAILING, turns_needed=0)
    if not _invokes(run, 1, "scenario_fail"):
        raise NotObserved(f"the failing middleware was never invoked{'; ' + run.fatal if run.fatal else ''}")
    raw = f"RAW-{run.nonce}"
    leaked = [r.turn for r in run.model if r.valid and raw in request_text(r.body)]
    if leaked:
        raise Violation("the unprocessed message reached the model after the middleware failed",
                        expected=f"no model request containing {raw}", actual=f"{len(leaked)} request(s)")
    if run.turns and run.turns[0].answer is None:
        raise NotObserved(f"the host did not answer the turn: {run.fatal}")
    return f"nothing reached the model; the host printed {run.turns[0].line}"

def _malformed_blocks(rec: HostRecording, turn: int, token: str, what: str):
    run = rec.cite(FAILING, turns_needed=turn)
    if not _invokes(run, turn, "scenario_fail"):
        raise NotObserved(f"turn {turn}: the middleware was never invoked{'; ' + run.fatal if run.fatal else ''}")
    marker = f"{token}-{run.nonce}"
    leaked = [r for r in run.model_in(turn) if r.valid and marker in request_text(r.body)]
    if leaked:
        raise Violation(f"turn {turn}: the user's message reached the model although the middleware's result was "
                        f"malformed ({what})", expected=f"no model request containing {marker}: the turn goes no "
                        "further, as for a failing middleware", actual=f"{len(leaked)} request(s)")
    return f"turn {turn}: nothing reached the model; the host printed {run.turns[turn - 1].line}"


@check("context-middleware/host/malformed-content-blocks-turn",
       does="in turn 2 the only request-phase middleware answers a result whose content is a string holding the "
            "user's message (MALFORMED-CONTENT-<nonce>), not an array of content blocks",
       must="a middleware result is validated against the schema before it is used: a malformed one counts as a "
            "failure, and the user's message does not reach the model")
def malformed_content(rec: HostRecording):
    return _malformed_blocks(rec, 2, "MALFORMED-CONTENT", "content is a string")


@check("context-middleware/host/malformed-metadata-blocks-turn",
       does="in turn 3 the only request-phase middleware answers valid content (the user's message, "
            "MALFORMED-META-<nonce>) with metadata that is a string, not an object",
       must="middleware metadata is validated against its schema (a free-form object): a result with malformed "
            "metadata counts as a failure, and the user's message does not reach the model")
def malformed_metadata(rec: HostRecording):
    return _malformed_blocks(rec, 3, "MALFORMED-META", "metadata is a string")


@check("context-middleware/host/suggested-tool-set-applied",
       does="runs scenario_tool_filter on the user message; its result keeps the context and names scenario_keep and "
            "scenario_also in metadata.suggestedToolSet (the SEP's tool-filtering example), not scenario_drop; reads the "
            "tools of the turn's model requests",
       must="tool filtering before the model sees the tools (the harness's reading of the SEP's example): the model "
            "is offered only the suggested tools, and the user message is unchanged")
def suggested_tool_set(rec: HostRecording):
    run = rec.cite(TOOL_FILTER, turns_needed=0)
    if not _invokes(run, 1, "scenario_tool_filter"):
        raise NotObserved(f"the host never invoked scenario_tool_filter{'; ' + run.fatal if run.fatal else ''}")
    requests = [r for r in run.model_in(1) if r.valid]
    if not requests:
        raise NotObserved("the host sent the model no request")
    problems = []
    for r in requests:
        problems += offer_problems(r.body, SUGGESTED, LEFT_OUT)
        if f"FILTER-{run.nonce}" not in last_user_message(r.body):
            problems.append("the user message did not reach the model unchanged")
    if problems:
        raise Violation("the suggested tool set was not applied", expected={"offered": list(SUGGESTED),
                        "not offered": list(LEFT_OUT), "user message": "unchanged"}, actual=sorted(set(problems)))
    return f"{', '.join(SUGGESTED)} offered, {', '.join(LEFT_OUT)} left out"


wire_check("context-middleware/host/wire-messages-valid", SCENARIOS)
PLAN = ScenarioPlan(SCENARIOS)
