"""Host judges on hand-made runs: what a check may conclude when part of a turn is missing."""

import anyio
import pytest

from conformance.core.model import NotObserved, Violation
from conformance.core.spelling import flag
from conformance.host import augmentation, context_middleware, interceptors
from conformance.host.harness import HostRun, Turn
from conformance.host.mock_llm import ModelRequest
from conformance.host.record import record_hosts
from conformance.host.recording import HostRecording
from conformance.targets import TargetSpec


def _recording(profile: str, run: HostRun) -> HostRecording:
    return HostRecording(profile, {"kind": "stdio", "command": "none"}, runs={run.scenario: run})


def _call(t: float, turn: int, method: str, name: str, text: str = "x") -> dict:
    return {"t": t, "turn": turn, "server": "s", "method": method, "params": {"name": name},
            "response": {"result": {"content": [{"type": "text", "text": text}]}}}


def test_request_middleware_timing_is_not_passed_without_a_model_request():
    run = HostRun(context_middleware.REDACT, "n", "none", turns=[Turn(1, "hi", 0.0, 1.0, "ok", {})],
                  events=[_call(0.1, 1, "middleware/invoke", "scenario_redact")])
    with pytest.raises(NotObserved):
        context_middleware.request_every_turn(_recording("context-middleware", run))


def test_a_late_augmentation_is_judged_by_the_hint_it_left_out():
    nonce = "n1"
    body = {"messages": [{"role": "user", "content": f"PREPENDED-{nonce} REPLACED-{nonce} APPENDED-{nonce}"}]}
    run = HostRun(augmentation.SCENARIO, nonce, "none", turns=[Turn(1, "hi", 0.0, 1.0, "ok", {})],
                  model=[ModelRequest(0.2, 1, body, True)],
                  events=[_call(0.5, 1, "augmentation/augment", "scenario_replace")])
    rec = _recording("augmentation", run)
    for judge in (augmentation.replace_applied, augmentation.prepend_applied, augmentation.append_applied):
        judge(rec)  # the text carries every hint: no hint check fails for a timing reason


TRUE = TargetSpec("stdio", command="true")  # a host that answers nothing


def test_an_unclaimed_profile_names_its_own_reason():
    recs = anyio.run(lambda: record_hosts(TRUE, ["preprocessor-tools", "augmentation"], claimed=["augmentation"]))
    assert recs["preprocessor-tools"].claim_reason == f"not named with {flag('profile')}"  # the form in use: here the plugin
    recs = anyio.run(lambda: record_hosts(TRUE, ["augmentation"], claimed=set()))
    assert recs["augmentation"].claim_reason == f"hosts claim augmentation only with {flag('profile')} augmentation"


def _invoke(t: float, turn: int, name: str, phase: str, result: dict | None = None, error: bool = False) -> dict:
    response = {"error": {"code": -32603, "message": "failed"}} if error else {"result": result or {"valid": True}}
    return {"t": t, "turn": turn, "server": "guard", "method": "interceptor/invoke",
            "params": {"name": name, "event": "tools/call", "phase": phase, "payload": {}}, "response": response}


def _interceptor_run(events: list[dict], answered: int = 7, fatal: str | None = None) -> HostRecording:
    turns = [Turn(i, f"t{i}", float(i), float(i) + 0.9, "{}", {} if i <= answered else None) for i in range(1, 8)]
    run = HostRun(interceptors.SCENARIO, "n", "none", turns=turns, events=events, fatal=fatal)
    return _recording("interceptors", run)


def test_a_rejection_that_never_happened_is_not_observed_not_passed():
    rec = _interceptor_run([_invoke(2.1, 2, "v-forbid", "request")])  # invoked, but it let the call through
    with pytest.raises(NotObserved):
        interceptors.rejection_blocks(rec)
    with pytest.raises(NotObserved):  # and never invoked at all
        interceptors.rejection_blocks(_interceptor_run([]))


def test_a_blocked_call_is_judged_only_once_the_interceptor_acted():
    failed = _invoke(5.1, 5, "m-boom", "request", error=True)
    sent = {"t": 5.2, "turn": 5, "server": "work", "method": "tools/call", "params": {"name": "scenario_echo"},
            "response": {"result": {"content": []}}}
    assert "stopped" in interceptors.fail_closed(_interceptor_run([failed]))
    with pytest.raises(Violation):
        interceptors.fail_closed(_interceptor_run([failed, sent]))
    with pytest.raises(NotObserved):  # the host died before turn 5
        interceptors.fail_closed(_interceptor_run([], answered=3, fatal="the host exited"))


def test_host_interceptor_messages_are_validated_against_the_schema():
    from conformance.host.common import message_problems

    good = {"jsonrpc": "2.0", "id": 1, "method": "interceptor/invoke",
            "params": {"name": "m", "event": "tools/call", "phase": "request", "payload": {}}}
    assert message_problems(good) == []
    assert message_problems({**good, "params": {"name": "m", "phase": "sideways", "event": "tools/call",
                                                "payload": {}}})
    assert message_problems({"jsonrpc": "2.0", "id": 2, "method": "interceptors/list", "params": {}}) == []


def _timeout_run(events: list[dict], answered: int = 3, fatal: str | None = None,
                 features=frozenset({interceptors.OVERRIDES_FEATURE})) -> HostRecording:
    turns = [Turn(i, f"t{i}", i * 100.0, i * 100.0 + 90, "{}", {} if i <= answered else None) for i in range(1, 4)]
    run = HostRun(interceptors.OVERRIDES_TIMEOUT, "n", "none", turns=turns, events=events, fatal=fatal)
    rec = _recording("interceptors", run)
    rec.features = frozenset(features)
    return rec


def _stalled(t: float, turn: int, name: str, timeout_ms: int | None = 300) -> dict:
    event = _invoke(t, turn, name, "request", error=timeout_ms is not None)
    event["params"].update({"timeoutMs": timeout_ms} if timeout_ms is not None else {})
    return {**event, "server": "slow", "delay": 0.3 if timeout_ms else 60.0, "stall": 60.0}


def _echo(t: float, turn: int) -> dict:
    return {"t": t, "turn": turn, "server": "work", "method": "tools/call", "params": {"name": "scenario_echo"},
            "response": {"result": {"content": []}}}


def test_a_timeout_judged_only_for_a_claimed_feature():
    from conformance.core.model import NotApplicable

    with pytest.raises(NotApplicable):
        interceptors.override_timeout_open(_timeout_run([], features=()))


def test_a_fail_open_timeout_must_proceed_without_waiting_for_the_stall():
    stalled = _stalled(100.1, 1, interceptors.SLOW_OPEN, timeout_ms=None)  # the host cancelled it itself
    assert "cancelled it itself" in interceptors.override_timeout_open(_timeout_run([stalled, _echo(100.5, 1)]))
    with pytest.raises(Violation, match="waited"):  # a turn timeout longer than the stall: the late answer let it go
        interceptors.override_timeout_open(_timeout_run([stalled, _echo(160.2, 1)]))
    with pytest.raises(Violation, match="blocked"):
        interceptors.override_timeout_open(_timeout_run([stalled]))
    with pytest.raises(NotObserved):  # the token never stalled it
        interceptors.override_timeout_open(_timeout_run([_echo(100.5, 1)]))


def test_a_host_waiting_past_the_turn_timeout_is_told_which_stall_it_waited_for():
    rec = _timeout_run([_stalled(100.1, 1, interceptors.SLOW_OPEN, timeout_ms=None)], answered=0,
                       fatal="the host printed nothing for turn 1 within 20 s")
    for judge in (interceptors.override_timeout_open, interceptors.override_timeout_closed,
                  interceptors.override_timeout_audit):
        with pytest.raises(NotObserved, match="within 20 s; in that turn v-slow-open stalled .*waited"):
            judge(rec)


def test_a_fail_closed_timeout_blocks_and_an_audit_one_never_does():
    closed = _stalled(200.1, 2, interceptors.SLOW_CLOSED)
    assert "stopped" in interceptors.override_timeout_closed(_timeout_run([closed]))
    with pytest.raises(Violation):
        interceptors.override_timeout_closed(_timeout_run([closed, _echo(200.5, 2)]))
    audit = _stalled(300.1, 3, interceptors.SLOW_AUDIT)
    assert "called" in interceptors.override_timeout_audit(_timeout_run([audit, _echo(300.5, 3)]))
    with pytest.raises(Violation):
        interceptors.override_timeout_audit(_timeout_run([audit]))
