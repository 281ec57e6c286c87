"""Host role, profile `interceptors` (SEP-2624): the host invokes interceptors around its tool calls.

Scenario `interceptors/tool-call`: server `guard` advertises the interceptors
extension and lists fourteen interceptors (scenarios.yaml); the config names it in
`interceptors`, so the host discovers them with `interceptors/list` and runs
those hooked on `tools/call` around every tool call it sends to server `work`.
Every invocation is recorded with its name, phase, payload, answer and time.
In each of eight turns the model calls `scenario_echo` once; the argument's
token decides which interceptor acts. The turn table, each turn's token and
what it makes act, is the scenario's script in scenarios.yaml (`acts`); the
judges find the turns they read by token (`common.turns_of`).

The audit-mode mutator `m-shadow` prefixes the text with SHADOW-<nonce> on
every turn: what it computes must never be applied. Whether the tool ran is
read from server `work`'s record; what the model saw, from its requests.

Scenario `interceptors/unconfigured`: server `plain` advertises the extension
and lists one validator that rejects everything, but the config names no
interceptor server. One turn: the model calls plain's `scenario_echo`; the host,
which uses no interceptors of that server, must treat it as the ordinary server
it also is (the SEP's "Clients that do not support interceptors MUST be able to
communicate with interceptor-enabled servers", for the part of a host that does
not use them).

Scenario `interceptors/overrides`, run only for a host that claims the feature
`interceptor-overrides` (`--claim interceptor-overrides`; otherwise its checks are
skipped as not claimed, never passed): each config entry names one of guard's
interceptors and may carry the SEP's `ChainEntry.overrides` (HARNESS.md §1), which
take precedence over what the interceptor declares (§Chain Execution, Capability
vs Policy). Four turns, one tool call each, the turn table in scenarios.yaml as above:
the overridden mutator order, narrowed and widened hooks (turn 1), an overridden
mode (2), an overridden failOpen both ways (3, 4).

In turn 1 m-raised also mutates the result: declared `{request: -10, response: -20}`,
overridden with `{request: 30}`, it runs on the result at 0 (`hint[phase] ?? 0`:
the override replaces the declared object), between r-low (-10) and r-high (10).
Every entry names one interceptor, and guard also lists v-unnamed, which no entry
names: it must never be invoked.

The reading of "MUST reject override hooks that reference events not present in
the interceptor's declared hooks": the override cannot be applied and the
declared hooks are not what the invoker asked for, so the host refuses the
whole entry: that interceptor is never invoked, for any event or phase, and the
rest of the configuration works as configured.

Scenario `interceptors/overrides-timeout`, run with the same claim: server
`slow`'s validators each stall the invocation whose payload holds its token
(scenario_server.py, `stallIf`): the answer would come 60 s later, far past the
turn timeout, unless the invocation carries `timeoutMs`, in which case the server
answers -32000 at that timeout. Every config entry overrides `timeoutMs` with 300
ms (ChainEntry.overrides: "If exceeded, the interceptor is cancelled and the
resolved failOpen determines whether the message proceeds or is blocked"); in
turn 1 the fail-open validator times out, in turn 2 the fail-closed one, in turn
3 the audit one (the turn table in scenarios.yaml).

The reading: given an override `timeoutMs`, the host must time the invocation
out (cancelling it itself, or passing `timeoutMs` on so that the server gives
up; both are fine) and then follow the resolved policy. A host that waits for
the stalled answer leaves the turn unanswered within the turn timeout (not
observed, with the harness's reason), or, under a turn timeout longer than the
stall, proceeds only after the late answer, which the proceeding checks name.
A host's own timeout policy without an override is not judged: the SEP sets no
default.

Two validators reject each rejected turn, on both sides, because the SEP's
"All validations MUST complete, then reject" can only be seen failing where a
second rejection is still to come: a host that stops at the first rejection
leaves one of the two uninvoked, whichever it runs first.
"""

from __future__ import annotations

import json

from ..core.model import NotApplicable, NotObserved, Violation, check
from .common import ScenarioPlan, turns_of, wire_check
from .harness import HostRun
from .recording import HostRecording

PROFILE = "interceptors"
SCENARIO = "interceptors/tool-call"
UNCONFIGURED = "interceptors/unconfigured"
OVERRIDES = "interceptors/overrides"
OVERRIDES_TIMEOUT = "interceptors/overrides-timeout"
SCENARIOS = (SCENARIO, UNCONFIGURED)
OVERRIDES_FEATURE = "interceptor-overrides"
OVERRIDE_PLAIN, OVERRIDE_BLOCK, OVERRIDE_OPENED, OVERRIDE_SHUT = turns_of(OVERRIDES, "PLAIN-", "BLOCK-", "OPENED-",
                                                                           "SHUT-")
# On the result m-raised runs at 0: its override {request: 30} names no response value (hint[phase] ?? 0); declared
# {request: -10, response: -20} it would run first.
RESPONSE_OVERRIDDEN_ORDER = ["r-low", "m-raised", "r-high"]
OPENED, SHUT, UNNAMED = "v-opened", "v-shut", "v-unnamed"
OVERRIDDEN_ORDER = ["m-lowered", "m-kept", "m-raised"]  # declared: m-raised (-10), m-kept (20), m-lowered (40)
DEMOTED, NARROWED, WIDENED, RESPONSE_SEEN = "v-demoted", "v-narrowed", "v-widened", "r-seen"
TIMEOUT_OPEN, TIMEOUT_CLOSED, TIMEOUT_AUDIT = turns_of(OVERRIDES_TIMEOUT, "SLOW-OPEN-", "SLOW-CLOSED-", "SLOW-AUDIT-")
SLOW_OPEN, SLOW_CLOSED, SLOW_AUDIT = "v-slow-open", "v-slow-closed", "v-slow-audit"
PLAIN, FORBID, WARN, AUDIT, CLOSED, OPEN, TAINTED, AUDIT_FAILS = turns_of(
    SCENARIO, "PLAIN-", "FORBIDDEN-", "WARN-", "AUDIT-REJECT-", "BOOM-CLOSED-", "BOOM-OPEN-", "TAINTED-", "AUDIT-BOOM-")
ORDER = ["m-early", "m-tie-a", "m-tie-b", "m-boom", "m-late"]  # active request mutators, as they must run
AUDIT_MUTATOR = "m-shadow"
REQUEST_VALIDATORS = ["v-forbid", "v-forbid-too", "v-warn", "v-audit", "v-open"]
REQUEST_ALL = sorted(ORDER + [AUDIT_MUTATOR] + REQUEST_VALIDATORS)
RESPONSE_VALIDATOR, RESPONSE_MUTATOR = "r-check", "r-tag"
RESPONSE_VALIDATORS = [RESPONSE_VALIDATOR, "r-scan"]


# -- readers -------------------------------------------------------------------------------------
def _invokes(run: HostRun, turn: int, phase: str | None = None) -> list[dict]:
    """The turn's interceptor/invoke requests (of one phase), in the order the server received them."""
    return [e for e in run.calls(turn, "interceptor/invoke") if phase is None or e["params"].get("phase") == phase]


def _named(events: list[dict], name: str) -> list[dict]:
    return [e for e in events if e["params"].get("name") == name]


def _failed(event: dict) -> bool:
    return "error" in event["response"]


def _result(event: dict) -> dict:
    result = event["response"].get("result")
    return result if isinstance(result, dict) else {}


def _tool_calls(run: HostRun, turn: int) -> list[dict]:
    return [e for e in run.calls(turn) if e["server"] == "work"]


def _arguments(payload) -> object:
    """The tool-call arguments inside a request-phase payload ({method, params: {name, arguments}}, or params)."""
    if isinstance(payload, dict):
        params = payload.get("params")
        if not isinstance(params, dict):
            params = payload
        return params.get("arguments")
    return None


def _canon(value) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _tool_messages(run: HostRun, turn: int) -> str:
    """Every tool message the model was given in the turn (not the model's own tool-call arguments)."""
    from .mock_llm import message_text

    return "\n".join(message_text(m.get("content")) for r in run.model_in(turn)
                     for m in r.body.get("messages") or () if isinstance(m, dict) and m.get("role") == "tool")


def _active_mutations(run: HostRun, turn: int) -> list[dict]:
    return [e for e in _invokes(run, turn, "request") if e["params"].get("name") in ORDER]


def _outcome(run: HostRun, turn: int, name: str, blocked_by: str) -> dict:
    """The invocation of `name` in the turn that did what the turn is about; NotObserved when there is none."""
    calls = _named(_invokes(run, turn), name)
    acted = [e for e in calls if (_failed(e) if blocked_by == "error" else _result(e).get("valid") is False)]
    if not acted:
        state = "was not invoked" if not calls else "was invoked but did not act"
        raise NotObserved(f"turn {turn}: {name} {state}{'; ' + run.fatal if run.fatal else ''}")
    return acted[0]


# -- checks --------------------------------------------------------------------------------------
@check("interceptors/host/hooked-interceptors-invoked",
       does="lists fourteen interceptors on server guard (one hooked on \"*\"); in turn 1 the model calls "
            "scenario_echo once; records interceptors/list and every interceptor/invoke",
       must="the host discovers the interceptors with interceptors/list and invokes every one hooked on tools/call "
            "or \"*\": request-phase ones (event tools/call, phase request) before the call is sent, response-phase "
            "ones (phase response) after its result came back")
def hooked_invoked(rec: HostRecording):
    run = rec.cite(SCENARIO, turns_needed=PLAIN)
    calls = _tool_calls(run, PLAIN)
    if not calls:
        raise NotObserved("turn 1: the tool call never reached server work")
    sent = calls[0]["t"]
    invokes = _invokes(run, PLAIN)
    listed = [e for e in run.calls(None, "interceptors/list") if e["server"] == "guard"]
    problems = []
    if not listed or (invokes and listed[0]["t"] > invokes[0]["t"]):
        problems.append("interceptors/list was not called on guard before the first invocation")
    for name in REQUEST_ALL + RESPONSE_VALIDATORS + [RESPONSE_MUTATOR]:
        phase = "response" if name.startswith("r-") else "request"
        mine = _named(invokes, name)
        if not mine:
            problems.append(f"{name} ({phase} phase) was not invoked")
            continue
        first = mine[0]
        if first["params"].get("event") != "tools/call" or first["params"].get("phase") != phase:
            problems.append(f"{name} invoked with event {first['params'].get('event')!r}, phase "
                            f"{first['params'].get('phase')!r}")
        elif (phase == "request") != (first["t"] < sent):
            problems.append(f"{name} ({phase} phase) invoked {'after' if phase == 'request' else 'before'} the call")
    if problems:
        raise Violation("the hooked interceptors were not all invoked around the tool call",
                        expected="interceptors/list, then each request-phase interceptor before the call and each "
                                 "response-phase one after it", actual=problems)
    return f"{len(invokes)} invocations around the tool call"


@check("interceptors/host/response-mutations-applied",
       does="in turn 1, compares the tool message the model got with the payload response-phase mutator r-tag "
            "returned",
       must="the result of the response-phase chain is what the host uses: the model sees the mutated tool result")
def response_applied(rec: HostRecording):
    run = rec.cite(SCENARIO, turns_needed=PLAIN)
    mutated = [e for e in _named(_invokes(run, PLAIN, "response"), RESPONSE_MUTATOR) if not _failed(e)]
    if not mutated:
        raise NotObserved(f"turn 1: {RESPONSE_MUTATOR} was never invoked on the result")
    content = _result(mutated[-1]).get("payload")
    blocks = content.get("content") if isinstance(content, dict) else None
    texts = [t for t in (b.get("text") for b in blocks or () if isinstance(b, dict)) if isinstance(t, str)]
    if not texts:
        raise NotObserved(f"turn 1: {RESPONSE_MUTATOR} returned no text content to follow")
    seen = _tool_messages(run, PLAIN)
    if not seen:
        raise NotObserved("turn 1: the model was given no tool message")
    missing = [t for t in texts if t not in seen]
    if missing:
        raise Violation("the model did not get the response-phase mutator's output", expected=missing,
                        actual=seen)


@check("interceptors/host/mutated-request-sent",
       does="in turn 1, compares the arguments server work received with the payload of the last active "
            "request-phase mutator",
       must="what goes out is the mutation chain's output: the tool receives the last mutator's payload")
def mutated_sent(rec: HostRecording):
    run = rec.cite(SCENARIO, turns_needed=PLAIN)
    mutations = [e for e in _active_mutations(run, PLAIN) if not _failed(e)]
    calls = _tool_calls(run, PLAIN)
    if not mutations or not calls:
        raise NotObserved("turn 1: " + ("no request-phase mutator answered" if not mutations
                                        else "the tool call never reached server work"))
    expected = _arguments(_result(mutations[-1]).get("payload"))
    got = calls[0]["params"].get("arguments")
    if _canon(got) != _canon(expected):
        raise Violation("the tool did not receive the mutated request", expected=expected, actual=got)


@check("interceptors/host/mutations-chained",
       does="in turn 1, compares the payload each active request-phase mutator received with the payload the "
            "one before it returned",
       must="mutations run sequentially, each given the previous one's output")
def mutations_chained(rec: HostRecording):
    run = rec.cite(SCENARIO, turns_needed=PLAIN)
    mutations = _active_mutations(run, PLAIN)
    if len(mutations) < 2:
        raise NotObserved("turn 1: fewer than two active mutators were invoked")
    problems = []
    for before, after in zip(mutations, mutations[1:]):
        if _failed(before):
            break
        if _canon(after["params"].get("payload")) != _canon(_result(before).get("payload")):
            problems.append(f"{after['params'].get('name')} got {_arguments(after['params'].get('payload'))!r}, "
                            f"{before['params'].get('name')} returned "
                            f"{_arguments(_result(before).get('payload'))!r}")
    if problems:
        raise Violation("a mutator was not given the previous mutator's output", expected="each payload = the "
                        "previous mutator's result payload", actual=problems)


@check("interceptors/host/priority-order",
       does="lists mutators with priorityHint {request: 100, response: -1000}, {response: -50}, -5, none and 50 "
            "(m-tie-a without a hint ties at 0 with m-tie-b, whose object gives no request value; listed after it) "
            "and records the order of their request-phase invocations in turn 1",
       must="mutations run by priorityHint ascending, a {request, response} object giving the phase's own value, 0 "
            "when none is given (for the phase), equal priorities alphabetically by name")
def priority_order(rec: HostRecording):
    run = rec.cite(SCENARIO, turns_needed=PLAIN)
    names = [e["params"].get("name") for e in _active_mutations(run, PLAIN)]
    if len(names) < 2:
        raise NotObserved("turn 1: fewer than two active mutators were invoked")
    expected = [n for n in ORDER if n in names]
    if names != expected:
        raise Violation("the mutators did not run in priority order", expected=expected, actual=names)
    return " < ".join(names)


@check("interceptors/host/audit-mutation-not-applied",
       does="lists m-shadow, an audit-mode mutator that prefixes the text with SHADOW-<nonce>, and looks for that "
            "token in every tool call and model request",
       must="an audit-mode mutator's output is never applied (shadow mutation): it reaches neither the tool nor "
            "the model")
def audit_mutation(rec: HostRecording):
    run = rec.cite(SCENARIO, turns_needed=PLAIN)
    token = f"SHADOW-{run.nonce}"
    calls = [e for e in run.calls() if e["server"] == "work"]
    if not calls:
        raise NotObserved("no tool call reached server work")
    leaked = [f"tool call in turn {e['turn']}" for e in calls if token in _canon(e["params"])]
    leaked += [f"model request in turn {r.turn}" for r in run.model if r.valid and token in _canon(r.body)]
    if leaked:
        raise Violation("the audit-mode mutator's output was applied", expected=f"no {token} anywhere",
                        actual=leaked)
    shadowed = len(_named(run.calls(None, "interceptor/invoke"), AUDIT_MUTATOR))
    return f"{shadowed} shadow invocation(s), none applied"


def _not_blocked(rec: HostRecording, turn: int, name: str, acts: str, what: str):
    run = rec.cite(SCENARIO, turns_needed=turn)
    if _tool_calls(run, turn):
        return f"turn {turn}: the tool was called"
    _outcome(run, turn, name, acts)
    raise Violation(f"turn {turn}: {what} blocked the tool call", expected="scenario_echo called in the turn",
                    actual="server work received no tools/call")


def _blocked(rec: HostRecording, turn: int, name: str, acts: str, what: str):
    run = rec.cite(SCENARIO, turns_needed=turn)
    _outcome(run, turn, name, acts)
    late = _tool_calls(run, turn)
    if late:
        raise Violation(f"turn {turn}: the tool was called although {what}",
                        expected="no tools/call to server work in the turn", actual=late[0]["params"])
    return f"turn {turn}: the call was stopped; the host printed {run.turns[turn - 1].line}"


@check("interceptors/host/validator-rejection-blocks",
       does="in turn 2 the argument carries FORBIDDEN-<nonce>; request-phase validator v-forbid answers valid: "
            "false, severity error",
       must="a validation with severity error blocks the request: the tool is never called")
def rejection_blocks(rec: HostRecording):
    return _blocked(rec, FORBID, "v-forbid", "invalid", "v-forbid rejected the request")


@check("interceptors/host/all-validations-complete",
       does="in turn 2 two request-phase validators (v-forbid, v-forbid-too) reject the call with severity error, "
            "and in turn 7 two response-phase validators (r-check, r-scan) reject the result; records which "
            "validators were invoked in those turns",
       must="all validations complete before the verdict: every validator hooked on the event and phase is "
            "invoked, also after another one has already rejected")
def all_validations_complete(rec: HostRecording):
    run = rec.cite(SCENARIO, turns_needed=TAINTED)
    problems, rejected = [], 0
    # v-audit (hooked on "*") is left to hooked-interceptors-invoked, which judges wildcard hooks.
    request = [n for n in REQUEST_VALIDATORS if n != "v-audit"]
    for turn, phase, names, rejecting in ((FORBID, "request", request, ["v-forbid", "v-forbid-too"]),
                                          (TAINTED, "response", RESPONSE_VALIDATORS, RESPONSE_VALIDATORS)):
        invoked = {e["params"].get("name") for e in _invokes(run, turn, phase)}
        acted = [n for n in rejecting if any(_result(e).get("valid") is False for e in _named(_invokes(run, turn), n))]
        if not acted:
            raise NotObserved(f"turn {turn}: none of {', '.join(rejecting)} rejected; the {phase} chain did not run"
                              f"{'; ' + run.fatal if run.fatal else ''}")
        rejected += len(acted)
        problems += [f"turn {turn}: {n} ({phase} phase) was not invoked after {acted[0]} rejected"
                     for n in names if n not in invoked]
    if problems:
        raise Violation("the host stopped validating at the first rejection", expected="every hooked validator "
                        "invoked, then the rejection", actual=problems)
    return f"every validator ran in both rejected turns ({rejected} rejections)"


@check("interceptors/host/warn-does-not-block",
       does="in turn 3 validator v-warn answers valid: false with severity warn",
       must="validations with severity warn or info do not block: the tool is called")
def warn_not_blocking(rec: HostRecording):
    return _not_blocked(rec, WARN, "v-warn", "invalid", "a severity-warn validation")


@check("interceptors/host/audit-validator-never-blocks",
       does="in turn 4 the audit-mode validator v-audit answers valid: false, severity error",
       must="interceptors in audit mode never block: the tool is called")
def audit_not_blocking(rec: HostRecording):
    return _not_blocked(rec, AUDIT, "v-audit", "invalid", "an audit-mode validator")


@check("interceptors/host/audit-failure-never-blocks",
       does="in turn 8 the audit-mode mutator m-shadow, which declares no failOpen, answers with a JSON-RPC error",
       must="audit never blocks: the message proceeds when an audit-mode interceptor fails, whatever its failOpen "
            "(failOpen only decides whether the failure counts as an error or a warning)")
def audit_failure(rec: HostRecording):
    return _not_blocked(rec, AUDIT_FAILS, AUDIT_MUTATOR, "error", "a failing audit-mode interceptor")


@check("interceptors/host/validate-after-mutate-sending",
       does="in turn 1 records when each request-phase validator was invoked and with what payload (v-warn declares "
            "priorityHint -1000, lower than every mutator's)",
       must="sending: mutate, then validate; every validator runs after the last mutator and is given the "
            "mutated payload; a validator's priorityHint is ignored")
def validate_after_mutate(rec: HostRecording):
    run = rec.cite(SCENARIO, turns_needed=PLAIN)
    mutations = [e for e in _active_mutations(run, PLAIN) if not _failed(e)]
    validators = [e for e in _invokes(run, PLAIN, "request") if e["params"].get("name") in REQUEST_VALIDATORS]
    if not mutations or not validators:
        raise NotObserved("turn 1: " + ("no active mutator answered" if not mutations else "no validator ran"))
    last, final = mutations[-1], _result(mutations[-1]).get("payload")
    problems = [f"{v['params'].get('name')} ran before {last['params'].get('name')}" for v in validators
                if v["t"] < last["t"]]
    problems += [f"{v['params'].get('name')} got {_arguments(v['params'].get('payload'))!r}" for v in validators
                 if v["t"] > last["t"] and _canon(v["params"].get("payload")) != _canon(final)]
    if problems:
        raise Violation("validation did not follow mutation on the sending side",
                        expected=f"validators after the mutators, given {_arguments(final)!r}", actual=problems)


@check("interceptors/host/validate-before-mutate-receiving",
       does="in turn 1 records when response-phase validators r-check and r-scan and mutator r-tag ran on the tool "
            "result",
       must="receiving: validate, then mutate; the response mutator runs only after every response validator")
def validate_before_mutate(rec: HostRecording):
    run = rec.cite(SCENARIO, turns_needed=PLAIN)
    events = _invokes(run, PLAIN, "response")
    check_t = {name: [e["t"] for e in _named(events, name)] for name in RESPONSE_VALIDATORS}
    tag_t = [e["t"] for e in _named(events, RESPONSE_MUTATOR)]
    if not all(check_t.values()) or not tag_t:
        raise NotObserved("turn 1: the response-phase validators and mutator did not all run")
    early = [name for name, times in check_t.items() if min(tag_t) < min(times)]
    if early:
        raise Violation(f"the response mutator ran before the response validator(s) {', '.join(early)}",
                        expected=[*RESPONSE_VALIDATORS, RESPONSE_MUTATOR],
                        actual=[e["params"].get("name") for e in events])


@check("interceptors/host/response-rejection-withholds-result",
       does="in turn 7 the tool result carries TAINTED-<nonce>; response-phase validator r-check rejects it "
            "(severity error)",
       must="a rejected result goes no further: no response mutator runs on it after the rejection and the model "
            "never sees it")
def response_rejection(rec: HostRecording):
    run = rec.cite(SCENARIO, turns_needed=TAINTED)
    rejected = _outcome(run, TAINTED, RESPONSE_VALIDATOR, "invalid")
    problems = [f"{e['params'].get('name')} ran after the rejection" for e in _invokes(run, TAINTED, "response")
                if e["t"] > rejected["t"] and e["params"].get("name") == RESPONSE_MUTATOR]
    token = f"TAINTED-{run.nonce}"
    if token in _tool_messages(run, TAINTED):
        problems.append(f"the model was given the rejected result ({token})")
    if problems:
        raise Violation("the rejected result went on", expected="no mutation after the rejection, no "
                        f"{token} in any tool message", actual=problems)


@check("interceptors/host/fail-closed-by-default",
       does="in turn 5 mutator m-boom, which declares no failOpen, answers with a JSON-RPC error",
       must="failOpen defaults to false: when the interceptor fails, the request is blocked (neither the original "
            "nor a partly mutated request is sent)")
def fail_closed(rec: HostRecording):
    return _blocked(rec, CLOSED, "m-boom", "error", "m-boom (fail-closed) failed")


@check("interceptors/host/mutation-failure-halts-chain",
       does="in turn 5 mutator m-boom (priority 50) fails; records every invocation after its failure",
       must="a mutation error halts the chain: no later mutator and no validator runs on that request")
def failure_halts(rec: HostRecording):
    run = rec.cite(SCENARIO, turns_needed=CLOSED)
    failed = _outcome(run, CLOSED, "m-boom", "error")
    later = [e["params"].get("name") for e in _invokes(run, CLOSED, "request") if e["t"] > failed["t"]]
    if later:
        raise Violation("the chain went on after a mutation failed", expected="nothing after m-boom", actual=later)


@check("interceptors/host/fail-open-proceeds",
       does="in turn 6 validator v-open, which declares failOpen: true, answers with a JSON-RPC error",
       must="when a failOpen: true interceptor fails, the request proceeds: the tool is called")
def fail_open(rec: HostRecording):
    return _not_blocked(rec, OPEN, "v-open", "error", "a failing failOpen: true interceptor")


@check("interceptors/host/unconfigured-server-usable",
       does="connects the host to server plain, which advertises the interceptors extension and lists a validator "
            "that rejects every payload, without naming it in the config's interceptors; the model calls plain's "
            "scenario_echo with COMPAT-<nonce>",
       must="an interceptor-enabled server the application does not use interceptors of is an ordinary server: "
            "its tool is called and its result reaches the model, and none of its interceptors is invoked")
def unconfigured_usable(rec: HostRecording):
    run = rec.cite(UNCONFIGURED, turns_needed=1)
    token = f"COMPAT-{run.nonce}"
    calls = [e for e in run.calls(1, "tools/call") if e["server"] == "plain"]
    invoked = [e["params"].get("name") for e in run.calls(None, "interceptor/invoke")]
    problems = []
    if invoked:
        problems.append(f"interceptors the config does not name were invoked: {sorted(set(map(str, invoked)))}")
    if not calls:
        problems.append("scenario_echo was never called on server plain")
    elif token not in _tool_messages(run, 1):
        problems.append(f"the model was not given the tool's result ({token})")
    if problems:
        raise Violation("the host did not use the interceptor-enabled server as an ordinary one",
                        expected=f"scenario_echo called, {token} in a tool message, no interceptor/invoke",
                        actual=problems)
    return f"scenario_echo called on plain; the model got {token}"


# -- invoker overrides (claimed with --claim interceptor-overrides) ------------------------------------------
def _overrides(rec: HostRecording, turns_needed: int, scenario: str = OVERRIDES) -> HostRun:
    """An overrides scenario's run; NotApplicable (skip) when the host does not claim the feature."""
    if OVERRIDES_FEATURE not in rec.features:
        raise NotApplicable(f"not claimed: the host does not claim {OVERRIDES_FEATURE} (claim it with --claim "
                            f"{OVERRIDES_FEATURE})")
    return rec.cite(scenario, turns_needed=turns_needed)


@check("interceptors/host/override-priority-precedence",
       does="lists mutators m-raised (priorityHint -10), m-kept (20) and m-lowered (40); the config overrides "
            "m-raised with priorityHint {request: 30} and m-lowered with -30; records the order of their "
            "request-phase invocations in turn 1 of interceptors/overrides",
       must="an override's priorityHint (a number, or a per-phase object) takes precedence over the declared one: "
            "the mutators run m-lowered, m-kept, m-raised, the reverse of the declared order")
def override_priority(rec: HostRecording):
    run = _overrides(rec, OVERRIDE_PLAIN)
    names = [e["params"].get("name") for e in _invokes(run, OVERRIDE_PLAIN, "request")
             if e["params"].get("name") in OVERRIDDEN_ORDER]
    if len(set(names)) < len(OVERRIDDEN_ORDER):
        missing = [n for n in OVERRIDDEN_ORDER if n not in names]
        raise NotObserved(f"turn 1: {', '.join(missing)} not invoked{'; ' + run.fatal if run.fatal else ''}")
    if names != OVERRIDDEN_ORDER:
        declared = " < ".join(reversed(OVERRIDDEN_ORDER))
        reason = ("the declared priorities were used, not the overrides" if names == OVERRIDDEN_ORDER[::-1]
                  else "the mutators did not run in the overridden priority order")
        raise Violation(reason, expected=OVERRIDDEN_ORDER, actual=f"{names} (declared order: {declared})")
    return " < ".join(names) + " (declared: the reverse)"


@check("interceptors/host/override-audit-mode",
       does="in turn 2 of interceptors/overrides validator v-demoted, declared mode active, answers valid: false "
            "with severity error; the config overrides its mode with audit",
       must="an override's mode takes precedence over the declared one: v-demoted runs in audit mode, so its "
            "rejection does not block and the tool is called")
def override_audit(rec: HostRecording):
    run = _overrides(rec, OVERRIDE_BLOCK)
    _outcome(run, OVERRIDE_BLOCK, DEMOTED, "invalid")  # audit still invokes it (log-only): a dropped one shows nothing
    if _tool_calls(run, OVERRIDE_BLOCK):
        return "turn 2: v-demoted rejected in audit mode; the tool was called"
    raise Violation("turn 2: v-demoted's rejection blocked the call although its override sets mode audit",
                    expected="scenario_echo called in the turn", actual="server work received no tools/call")


@check("interceptors/host/override-narrowed-hooks",
       does="lists v-narrowed hooked on tools/call in the request and the response phase; the config narrows its "
            "hooks to the request phase; records in turn 1 of interceptors/overrides whether it is invoked in "
            "each phase (r-seen, hooked on the response phase, shows the response chain ran)",
       must="narrowed override hooks take precedence over the declared ones: the interceptor is invoked only for "
            "the events and phases of the narrowed set (here on the request, never on the result)")
def override_narrowed(rec: HostRecording):
    run = _overrides(rec, OVERRIDE_PLAIN)
    request = _named(_invokes(run, OVERRIDE_PLAIN, "request"), NARROWED)
    seen = _named(_invokes(run, OVERRIDE_PLAIN, "response"), RESPONSE_SEEN)
    if not request or not seen:
        what = (f"{NARROWED} was not invoked on the request (its narrowed hook)" if not request
                else f"{RESPONSE_SEEN} was not invoked on the result: the response chain did not run")
        raise NotObserved(f"turn 1: {what}{'; ' + run.fatal if run.fatal else ''}")
    late = [f"turn {e['turn']}" for e in _named(run.calls(None, "interceptor/invoke"), NARROWED)
            if e["params"].get("phase") == "response"]
    if late:
        raise Violation(f"{NARROWED} was invoked on the result although its override narrows its hooks to the "
                        "request phase", expected="request phase only", actual=f"response phase in {', '.join(late)}")
    return f"{NARROWED} on the request only; {RESPONSE_SEEN} ran on the result"


@check("interceptors/host/override-widening-rejected",
       does="lists v-widened hooked on tools/call in the request phase; the config's override for it adds the "
            "response phase, which it does not declare; records every invocation of interceptors/overrides",
       must="override hooks that reference events or phases the interceptor does not declare are rejected: the "
            "host refuses that entry (HARNESS.md §1), so v-widened is never invoked, and goes on with the rest of "
            "its configuration")
def override_widening(rec: HostRecording):
    run = _overrides(rec, OVERRIDE_PLAIN)
    others = [e for e in _invokes(run, OVERRIDE_PLAIN) if e["params"].get("name") != WIDENED]
    if not others:
        raise NotObserved("turn 1: no other interceptor was invoked, so a refused entry cannot be told from a host "
                          f"that uses no interceptor{'; ' + run.fatal if run.fatal else ''}")
    used = _named(run.calls(None, "interceptor/invoke"), WIDENED)
    if used:
        phases = sorted({str(e["params"].get("phase")) for e in used})
        widened = "response" in phases
        raise Violation("the widening override was applied" if widened else
                        f"{WIDENED} was used although its override widens its hooks: the entry must be refused",
                        expected=f"no interceptor/invoke of {WIDENED}",
                        actual=[f"turn {e['turn']}, phase {e['params'].get('phase')}" for e in used])
    return f"{WIDENED} refused; {len(others)} other invocation(s) in turn 1"


@check("interceptors/host/override-priority-other-phase",
       does="lists m-raised with priorityHint {request: -10, response: -20}, hooked on both phases, and response "
            "mutators r-low (-10) and r-high (10); the config overrides m-raised with {request: 30}; records the order "
            "of their response-phase invocations in turn 1 of interceptors/overrides",
       must="an override's priorityHint replaces the declared one: an object override that names one phase leaves "
            "the other at hint[phase] ?? 0, so on the result m-raised runs at 0 (r-low, m-raised, r-high), not at "
            "its declared -20")
def override_priority_other_phase(rec: HostRecording):
    run = _overrides(rec, OVERRIDE_PLAIN)
    names = [e["params"].get("name") for e in _invokes(run, OVERRIDE_PLAIN, "response")
             if e["params"].get("name") in RESPONSE_OVERRIDDEN_ORDER]
    if len(set(names)) < len(RESPONSE_OVERRIDDEN_ORDER):
        missing = [n for n in RESPONSE_OVERRIDDEN_ORDER if n not in names]
        raise NotObserved(f"turn 1: {', '.join(missing)} not invoked on the result"
                          f"{'; ' + run.fatal if run.fatal else ''}")
    if names != RESPONSE_OVERRIDDEN_ORDER:
        reason = ("m-raised ran at its declared response priority (-20): the override was merged into the declared "
                  "object instead of replacing it" if names == ["m-raised", "r-low", "r-high"]
                  else "the response mutators did not run in the resolved priority order")
        raise Violation(reason, expected=RESPONSE_OVERRIDDEN_ORDER, actual=names)
    return " < ".join(names) + " (m-raised at 0 on the result)"


@check("interceptors/host/override-fail-open",
       does="in turn 3 of interceptors/overrides validator v-opened, which declares no failOpen, fails (a JSON-RPC "
            "error) and the config overrides its failOpen with true; in turn 4 v-shut, which declares failOpen: true, "
            "fails and the config overrides its failOpen with false",
       must="an override's failOpen takes precedence over the declared one: turn 3's call proceeds, turn 4's is "
            "blocked")
def override_fail_open(rec: HostRecording):
    run = _overrides(rec, OVERRIDE_SHUT)
    _outcome(run, OVERRIDE_OPENED, OPENED, "error")
    _outcome(run, OVERRIDE_SHUT, SHUT, "error")
    problems = []
    if not _tool_calls(run, OVERRIDE_OPENED):
        problems.append(f"turn {OVERRIDE_OPENED}: {OPENED} failed and the call was blocked, although its override sets "
                        "failOpen: true")
    late = _tool_calls(run, OVERRIDE_SHUT)
    if late:
        problems.append(f"turn {OVERRIDE_SHUT}: {SHUT} failed and the call proceeded, although its override sets "
                        "failOpen: false")
    if problems:
        raise Violation("; ".join(problems) + " (the declared failOpen was used)",
                        expected={f"turn {OVERRIDE_OPENED}": "scenario_echo called",
                                  f"turn {OVERRIDE_SHUT}": "no tools/call to server work"},
                        actual=problems)
    return f"turn {OVERRIDE_OPENED} proceeded, turn {OVERRIDE_SHUT} was blocked: the overridden failOpen decided"


@check("interceptors/host/named-entry-only",
       does="the config of interceptors/overrides names guard's interceptors one entry each, all but v-unnamed, "
            "which guard lists too (a validator of tools/call requests); records every invocation",
       must="a configuration entry that names one interceptor of a server means that interceptor only: v-unnamed, "
            "which no entry names, is never invoked")
def named_entry_only(rec: HostRecording):
    run = _overrides(rec, OVERRIDE_PLAIN)
    others = [e for e in _invokes(run, OVERRIDE_PLAIN) if e["params"].get("name") != UNNAMED]
    if not others:
        raise NotObserved("turn 1: no named interceptor was invoked, so leaving v-unnamed out shows nothing"
                          f"{'; ' + run.fatal if run.fatal else ''}")
    used = _named(run.calls(None, "interceptor/invoke"), UNNAMED)
    if used:
        raise Violation(f"{UNNAMED}, which no configuration entry names, was invoked: a named entry was taken for its "
                        "whole server", expected=f"no interceptor/invoke of {UNNAMED}",
                        actual=[f"turn {e['turn']}, phase {e['params'].get('phase')}" for e in used])
    return f"{UNNAMED} never invoked; {len(others)} invocation(s) of named interceptors in turn 1"


def _stalled(run: HostRun, turn: int, name: str) -> dict:
    """The turn's stalled invocation of `name` (recorded on arrival, with `stall`); NotObserved when there is none."""
    stalled = [e for e in _named(_invokes(run, turn), name) if "stall" in e]
    if not stalled:
        invoked = _named(_invokes(run, turn), name)
        state = "was not invoked" if not invoked else "was invoked but did not stall (its token was not in the payload)"
        raise NotObserved(f"turn {turn}: {name} {state}{'; ' + run.fatal if run.fatal else ''}")
    return stalled[0]


def _timed_out_how(event: dict) -> str:
    """How the stalled invocation ended, as far as the server saw: the timeout it was given, or none."""
    given = event["params"].get("timeoutMs")
    return (f"timeoutMs {given} passed on in the invocation" if given is not None
            else "no timeoutMs in the invocation: the host cancelled it itself")


def _proceeded_in_time(run: HostRun, turn: int, name: str, what: str):
    stalled = _stalled(run, turn, name)
    calls = _tool_calls(run, turn)
    if not calls:
        raise Violation(f"turn {turn}: the call was blocked although {what} timed out",
                        expected="scenario_echo called in the turn", actual="server work received no tools/call")
    due = stalled["t"] + stalled["stall"]
    if calls[0]["t"] >= due:
        raise Violation(f"turn {turn}: the host waited for {name}'s late answer ({stalled['stall']:g} s) instead of "
                        "timing the invocation out at the override's timeoutMs",
                        expected="the call within the timeout", actual=f"the call {calls[0]['t'] - stalled['t']:.1f} s "
                        "after the invocation")
    return f"turn {turn}: {name} timed out ({_timed_out_how(stalled)}); the tool was called"


def _overrides_timeout(rec: HostRecording, turns_needed: int) -> HostRun:
    """The timeout scenario's run, as _overrides; a turn left unanswered says which interceptor the host waited on."""
    try:
        return _overrides(rec, turns_needed, OVERRIDES_TIMEOUT)
    except NotObserved as exc:
        run = rec.runs.get(OVERRIDES_TIMEOUT)
        waiting = run and run.answered() < len(run.turns) and [
            e for e in _invokes(run, run.answered() + 1) if "stall" in e]
        if not waiting:
            raise
        stalled = waiting[0]
        given = stalled["params"].get("timeoutMs")
        how = ("no timeoutMs in the invocation" if given is None
               else f"timeoutMs {given} in the invocation, answered -32000 at it")
        raise NotObserved(f"{exc}; in that turn {stalled['params'].get('name')} stalled ({how}): the host waited for "
                          "it instead of timing it out at the override's timeoutMs") from None


@check("interceptors/host/override-timeout-fail-open-proceeds",
       does="in turn 1 of interceptors/overrides-timeout validator v-slow-open, which declares failOpen: true, stalls "
            "(its answer would come 60 s later, or -32000 at timeoutMs when the invocation carries one); the config "
            "overrides its timeoutMs with 300",
       must="given an override timeoutMs, the interceptor is cancelled when it is exceeded and the resolved failOpen "
            "decides: a timed-out failOpen: true interceptor lets the message proceed (the tool is called, without "
            "waiting for the stalled answer)")
def override_timeout_open(rec: HostRecording):
    run = _overrides_timeout(rec, TIMEOUT_OPEN)
    return _proceeded_in_time(run, TIMEOUT_OPEN, SLOW_OPEN, f"{SLOW_OPEN} (failOpen: true)")


@check("interceptors/host/override-timeout-fail-closed-blocks",
       does="in turn 2 of interceptors/overrides-timeout validator v-slow-closed, which declares no failOpen, stalls "
            "as v-slow-open does in turn 1; the config overrides its timeoutMs with 300",
       must="a timed-out interceptor whose resolved failOpen is false blocks the message: the tool is not called, "
            "and the turn is still answered")
def override_timeout_closed(rec: HostRecording):
    run = _overrides_timeout(rec, TIMEOUT_CLOSED)
    stalled = _stalled(run, TIMEOUT_CLOSED, SLOW_CLOSED)
    late = _tool_calls(run, TIMEOUT_CLOSED)
    if late:
        waited = late[0]["t"] >= stalled["t"] + stalled["stall"]
        raise Violation(f"turn {TIMEOUT_CLOSED}: the tool was called although {SLOW_CLOSED} (failOpen not given: "
                        "false) timed out" + (", after the host waited for its late answer" if waited else ""),
                        expected="no tools/call to server work in the turn", actual=late[0]["params"])
    return (f"turn {TIMEOUT_CLOSED}: {SLOW_CLOSED} timed out ({_timed_out_how(stalled)}); the call was stopped; the "
            f"host printed {run.turns[TIMEOUT_CLOSED - 1].line}")


@check("interceptors/host/override-timeout-audit-never-blocks",
       does="in turn 3 of interceptors/overrides-timeout the audit-mode validator v-slow-audit, which declares no "
            "failOpen, stalls as v-slow-open does in turn 1; the config overrides its timeoutMs with 300",
       must="an audit-mode interceptor that times out never blocks the main flow, whatever its failOpen: the tool "
            "is called, without waiting for the stalled answer")
def override_timeout_audit(rec: HostRecording):
    run = _overrides_timeout(rec, TIMEOUT_AUDIT)
    return _proceeded_in_time(run, TIMEOUT_AUDIT, SLOW_AUDIT, f"the audit-mode {SLOW_AUDIT}")


wire_check("interceptors/host/wire-messages-valid", SCENARIOS, optional=(OVERRIDES, OVERRIDES_TIMEOUT))
PLAN = ScenarioPlan(SCENARIOS, features={OVERRIDES_FEATURE: (OVERRIDES, OVERRIDES_TIMEOUT)})
