"""Host judges on hand-made runs: what a check may conclude when part of a turn is missing."""

import anyio
import pytest

from conformance.host import augmentation, context_middleware
from conformance.host.harness import HostRun, Turn
from conformance.host.mock_llm import ModelRequest
from conformance.host.record import record_hosts
from conformance.host.recording import HostRecording
from conformance.model import NotObserved


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


def test_an_unclaimed_profile_names_its_own_reason():
    recs = anyio.run(lambda: record_hosts("true", ["preprocessor-tools", "augmentation"], claimed=["augmentation"]))
    assert recs["preprocessor-tools"].claim_reason == "not named with --profile"
    recs = anyio.run(lambda: record_hosts("true", ["augmentation"], claimed=set()))
    assert recs["augmentation"].claim_reason == "hosts claim augmentation only with --profile augmentation"
