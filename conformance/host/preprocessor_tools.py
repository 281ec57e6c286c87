"""Host role, profile `preprocessor-tools` (the Preprocessor Tools RFC): what a host does with `"preprocessor": true`.

Scenario `preprocessor-tools/two-servers` (scenarios.yaml): a stdio server with the
preprocessor `scenario_memories` and the ordinary `scenario_echo`, an HTTP server
with the preprocessor `scenario_profile`; three turns. Each preprocessor call
returns a fresh token (`MEMO-<n>-<nonce>`), so the judges can follow every
output: into which model request it went, and that it went nowhere later. In
turn 2 the model asks for `scenario_memories` by name, with a query only the
model knows (`MODEL-CALL-<nonce>`): no call may carry it.
"""

from __future__ import annotations

from ..core.judging import match_name
from ..core.model import NotObserved, Violation, check
from .common import ScenarioPlan, wire_check
from .harness import HostRun
from .recording import HostRecording, request_text, result_text, tool_names

PROFILE = "preprocessor-tools"
SCENARIO = "preprocessor-tools/two-servers"
PREPROCESSORS = ("scenario_memories", "scenario_profile")
ORDINARY = "scenario_echo"
SCENARIOS = (SCENARIO,)


def _preprocessor_calls(run: HostRun, turn: int) -> list[dict]:
    """The host's own preprocessor runs; a call the model asked for is model-cannot-call-preprocessor's."""
    secret = f"MODEL-CALL-{run.nonce}"
    return [e for e in run.calls(turn) if (e.get("params") or {}).get("name") in PREPROCESSORS
            and secret not in str(e["params"].get("arguments"))]


def _model_requests(run: HostRun) -> list:
    if not any(r.valid for r in run.model):
        raise NotObserved("the host never sent the model a request")
    return [r for r in run.model if r.valid]


@check("preprocessor-tools/host/never-offered-to-model",
       does="runs three turns against two servers with preprocessor tools and reads `tools` of every model request",
       must="preprocessor tools are never among the tools offered to the model")
def never_offered(rec: HostRecording):
    run = rec.cite(SCENARIO)
    offered = {(r.turn, name) for r in _model_requests(run) for name in tool_names(r.body)
               if any(match_name([name], p) for p in PREPROCESSORS)}
    if offered:
        raise Violation("a preprocessor tool was offered to the model", expected="no scenario_memories or "
                        "scenario_profile in any request's tools",
                        actual=[f"turn {turn}: {name}" for turn, name in sorted(offered)])
    return f"{len(run.model)} model request(s), none offering a preprocessor"


@check("preprocessor-tools/host/model-cannot-call-preprocessor",
       does="has the model ask for scenario_memories by name in turn 2, with a query only the model knows",
       must="a preprocessor cannot be called by the model: the host does not run the call it asks for")
def model_cannot_call(rec: HostRecording):
    run = rec.cite(SCENARIO, turns_needed=2)
    asked = [r for r in run.model_in(2) if r.reply and r.reply.get("tool_calls")]
    if not asked:
        raise NotObserved("the host sent no model request in turn 2, so the model never asked for the tool")
    secret = f"MODEL-CALL-{run.nonce}"
    leaked = [e for e in run.calls() if secret in str((e.get("params") or {}).get("arguments"))]
    if leaked:
        raise Violation("the host ran the preprocessor call the model asked for", expected="no tools/call "
                        f"carrying {secret}", actual=[f"{e['server']}: {e['params']}" for e in leaked])
    return "the model's request for scenario_memories was not run"


@check("preprocessor-tools/host/ordinary-tools-offered",
       does="reads the tools of every model request and has the model call scenario_echo in turn 1",
       must="ordinary tools of a server with preprocessors are offered and callable as before")
def ordinary_offered(rec: HostRecording):
    run = rec.cite(SCENARIO, turns_needed=1)
    missing = [r.turn for r in _model_requests(run) if not match_name(tool_names(r.body), ORDINARY)]
    if missing:
        raise Violation("scenario_echo was not offered to the model", expected="scenario_echo in every request's "
                        "tools", actual=f"missing in the request(s) of turn(s) {sorted(set(missing))}")
    echo = f"ECHO-{run.nonce}"
    if not any(echo in str((e.get("params") or {}).get("arguments")) for e in run.calls(1)):
        raise Violation("the model's call of scenario_echo never reached the server",
                        expected=f"tools/call scenario_echo with text {echo} in turn 1",
                        actual=[e["params"] for e in run.calls(1)])


@check("preprocessor-tools/host/runs-every-turn",
       does="counts the calls of each preprocessor tool in each of three turns",
       must="every preprocessor tool runs on every turn")
def runs_every_turn(rec: HostRecording):
    run = rec.cite(SCENARIO, turns_needed=1)
    answered = [t.index for t in run.turns if t.answer is not None]
    missing = [f"turn {turn}: {name}" for turn in answered for name in PREPROCESSORS
               if not any(e["params"].get("name") == name for e in _preprocessor_calls(run, turn))]
    if missing:
        raise Violation("a preprocessor did not run on a turn", expected="each of scenario_memories and "
                        f"scenario_profile called in turns {answered}", actual="not called: " + ", ".join(missing))
    if len(answered) < len(run.turns):
        raise NotObserved(f"only {len(answered)} of {len(run.turns)} turns were answered: {run.fatal}")
    return f"both preprocessors ran in each of {len(answered)} turns"


@check("preprocessor-tools/host/runs-before-model-and-tools",
       does="compares, per turn, when each preprocessor was called with the turn's first model request and "
            "ordinary tool calls (one monotonic clock)",
       must="preprocessors run before the turn's first model request and before any ordinary tool call")
def runs_before(rec: HostRecording):
    run = rec.cite(SCENARIO)
    late, judged = [], 0
    for turn in run.turns:
        calls = _preprocessor_calls(run, turn.index)
        if not calls:
            continue  # whether they run at all is runs-every-turn's business
        judged += 1
        first_model = next(iter(run.model_in(turn.index)), None)
        if first_model is None:
            raise NotObserved(f"no model request in turn {turn.index}")
        last_pre = max(e["t"] for e in calls)
        if last_pre > first_model.t:
            late.append(f"turn {turn.index}: a preprocessor ran {last_pre - first_model.t:.3f} s after the first "
                        "model request")
        ordinary = [e for e in run.calls(turn.index) if e not in calls and e["t"] < last_pre]
        late += [f"turn {turn.index}: {e['params'].get('name')} ran before a preprocessor" for e in ordinary]
    if not judged:
        raise NotObserved("no preprocessor ran in any turn")
    if late:
        raise Violation("a preprocessor ran late", expected="every preprocessor call of a turn before its first "
                        "model request and its ordinary tool calls", actual=late)


@check("preprocessor-tools/host/output-reaches-model",
       does="follows the token each preprocessor call returned into the model request that came next",
       must="the output of every preprocessor call reaches the model request of its turn")
def output_reaches_model(rec: HostRecording):
    run = rec.cite(SCENARIO)
    missing, followed = [], 0
    for turn in run.turns:
        requests = run.model_in(turn.index)
        for call in _preprocessor_calls(run, turn.index):
            token = result_text(call)
            after = [r for r in requests if r.t > call["t"]]
            if not token or not after:
                continue  # a call after the turn's last model request is runs-before-model-and-tools' business
            followed += 1
            if token not in request_text(after[0].body):
                missing.append(f"turn {turn.index}: {token} ({call['params'].get('name')})")
    if not followed:
        raise NotObserved("no preprocessor output was followed by a model request")
    if missing:
        raise Violation("a preprocessor's output is not in the model request that followed it",
                        expected="each token in the turn's next model request", actual=missing)
    return f"{followed} preprocessor output(s), each in the next model request"


@check("preprocessor-tools/host/output-not-persisted",
       does="looks for each turn's preprocessor tokens in what the host sends of its history in every later turn "
            "(the model's own earlier answers, which the host replays as they came, are not the host's doing)",
       must="preprocessor output is context for its turn only: it never reappears in later turns")
def output_not_persisted(rec: HostRecording):
    run = rec.cite(SCENARIO, turns_needed=2)
    kept = []
    for turn in run.turns:
        tokens = [result_text(c) for c in _preprocessor_calls(run, turn.index)]
        for later in run.turns[turn.index:]:
            for req in run.model_in(later.index):
                text = _host_text(run, req)
                kept += [f"{tok} (turn {turn.index}) in turn {later.index}" for tok in tokens if tok and tok in text]
    if not any(run.model_in(t.index) for t in run.turns[1:]):
        raise NotObserved("no model request after the first turn")
    if kept:
        raise Violation("preprocessor output persisted into later turns", expected="no earlier turn's token",
                        actual=sorted(set(kept)))


def _host_text(run: HostRun, req) -> str:
    """What a model request shows the model, less the assistant messages that are the mock model's own earlier
    answers replayed as history: a token the model reflected is not one the host kept."""
    answered = {_answer_text(r.reply) for r in run.model if r is not req and r.reply and r.t < req.t}
    body = req.body if isinstance(req.body, dict) else {}
    messages = [m for m in body.get("messages") or () if not (
        isinstance(m, dict) and m.get("role") == "assistant" and not m.get("tool_calls")
        and _answer_text(m) in answered)]
    return request_text({**body, "messages": messages})


def _answer_text(message: dict) -> str:
    from .mock_llm import message_text

    return message_text(message.get("content")).strip()


def _injected_order(run: HostRun, turn: int, calls: list[dict]) -> list[str] | None:
    """The order of the preprocessors' results in the turn's first model request (where each one's token first
    shows), or None when not both are there to order."""
    requests = run.model_in(turn)
    if not requests:
        return None
    text = request_text(requests[0].body)
    at: dict[str, int] = {}
    for call in calls:
        token, name = result_text(call), call["params"]["name"]
        if token and token in text and name not in at:
            at[name] = text.index(token)
    return sorted(at, key=at.__getitem__) if sorted(at) == sorted(PREPROCESSORS) else None


@check("preprocessor-tools/host/all-run-in-stable-order",
       does="compares, turn by turn, the order of the two servers' preprocessor results in the model request (the "
            "order their calls arrived in where the results are not both there)",
       must="several preprocessors all run, and their results reach the model in the same order every turn")
def stable_order(rec: HostRecording):
    # The RFC leaves the order among preprocessors open (a host may run them at once, so their calls arrive in
    # any order); what "deterministic execution" fixes is what the model gets: the results in one order.
    run = rec.cite(SCENARIO)
    orders, sources = {}, set()
    for turn in run.turns:
        calls = _preprocessor_calls(run, turn.index)
        seen: list[str] = []
        for e in calls:
            if e["params"]["name"] not in seen:
                seen.append(e["params"]["name"])
        injected = _injected_order(run, turn.index, calls)
        sources.add("results in the model request" if injected else "calls")
        orders[turn.index] = injected or seen
    complete = {turn: o for turn, o in orders.items() if sorted(o) == sorted(PREPROCESSORS)}
    if len(complete) < 2:
        raise NotObserved(f"both preprocessors ran together in {len(complete)} turn(s); the order needs two",
                          actual=orders)
    orders = complete
    if len({tuple(o) for o in orders.values()}) > 1:
        raise Violation("the preprocessors' results came in a different order on different turns",
                        expected="one order for every turn", actual=orders, level="SHOULD")
    return f"order {' then '.join(next(iter(orders.values())))} on every turn (by {' and '.join(sorted(sources))})"


@check("preprocessor-tools/host/preprocessor-input",
       does="reports the arguments each preprocessor received (the RFC's example takes the user input as query)",
       must="what a preprocessor receives is the host's choice; the suite reports it")
def preprocessor_input(rec: HostRecording):
    run = rec.cite(SCENARIO, turns_needed=1)
    calls = _preprocessor_calls(run, 1)
    if not calls:
        raise NotObserved("no preprocessor ran in turn 1")
    user = run.turns[0].user
    shown = [f"{c['params']['name']} <- {c['params'].get('arguments')}" for c in calls]
    carries = all(user in str(c["params"].get("arguments")) for c in calls)
    return ("turn 1 arguments carry the user message: " if carries else "turn 1 arguments: ") + "; ".join(shown)

wire_check("preprocessor-tools/host/wire-messages-valid", SCENARIOS)
PLAN = ScenarioPlan(SCENARIOS)
