"""Reference interceptors (SEP-2624): override narrowing, the invoker's chain, and the working group's fixture
replay (the server role's `--adapter MODULE:FACTORY --wg-fixtures DIR` target, conformance/server/wg_fixtures.py).

The replay tests use the suite's own fixtures in the WG format (tests/data/interceptor-fixtures, written
for these tests by generate.py there); each broken adapter of tests/servers/broken_wg_adapters.py breaks one
chain rule and must fail exactly one replay check, naming exactly the fixtures that pin that rule.
"""

import time
from pathlib import Path

import pytest

from conformance.core.roles import SERVER
from reference_servers.interceptor_chain import ChainEntry, WgSession, run_chain, wg_adapter
from reference_servers.interceptors import InterceptorDef, InterceptorError, InterceptorRegistry, build, narrow_hooks

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "interceptor-fixtures"
DECLARED = [{"events": ["tools/call", "llm/completion"], "phase": "request"},
            {"events": ["tools/call"], "phase": "response"}]


def test_narrowing_to_a_subset_is_accepted():
    narrowed = [{"events": ["tools/call"], "phase": "request"}]
    assert narrow_hooks(DECLARED, narrowed) == narrowed


@pytest.mark.parametrize("override", [
    [{"events": ["prompts/get"], "phase": "request"}],  # an event never declared
    [{"events": ["llm/completion"], "phase": "response"}],  # declared, but for the other phase only
    [{"events": ["*"], "phase": "request"}],  # the wildcard widens a list of events
])
def test_widening_is_rejected(override):
    with pytest.raises(ValueError, match="widen"):
        narrow_hooks(DECLARED, override)


def test_a_declared_wildcard_admits_any_narrowing():
    assert narrow_hooks([{"events": ["*"], "phase": "request"}], [{"events": ["custom/x"], "phase": "request"}])


def upper_entry(overrides=None):
    registry = InterceptorRegistry()
    item = InterceptorDef("up", "mutation", DECLARED, lambda p, e, ph, c: {"modified": True, "payload": p.upper()})
    registry.add(item)
    return ChainEntry(item, registry, overrides)


def test_chain_override_narrows_hooks():
    narrowed = upper_entry({"hooks": [{"events": ["tools/call"], "phase": "request"}]})
    assert run_chain([narrowed], "llm/completion", "request", "hi")["finalPayload"] == "hi"
    assert run_chain([narrowed], "tools/call", "request", "hi")["finalPayload"] == "HI"
    assert run_chain([upper_entry()], "llm/completion", "request", "hi")["finalPayload"] == "HI"


def test_chain_rejects_a_widening_override_before_running_anything():
    with pytest.raises(ValueError):
        run_chain([upper_entry({"hooks": [{"events": ["prompts/get"], "phase": "request"}]})], "tools/call", "request", "hi")


def test_chain_override_mode_audit_shadows_the_mutation():
    out = run_chain([upper_entry({"mode": "audit"})], "tools/call", "request", "hi")
    assert out["decision"] == "allow" and out["finalPayload"] == "hi" and out["results"][0]["payload"] == "HI"


def test_a_timeout_cancels_the_slow_fixture_with_the_seps_error():
    registry = build(real=False)
    call = {"name": "conformance_slow", "event": "tools/call", "phase": "request", "payload": {}}
    with pytest.raises(InterceptorError) as raised:
        registry.invoke({**call, "timeoutMs": 50})
    assert raised.value.code == -32000 and raised.value.message == "Interceptor execution timeout"
    assert raised.value.data == {"interceptor": "conformance_slow", "timeoutMs": 50, "phase": "request"}


@pytest.mark.parametrize("timeout", [0, -5, "300", True])
def test_a_timeout_that_is_not_a_positive_number_is_invalid_params(timeout):
    registry = build(real=False)
    with pytest.raises(InterceptorError) as raised:
        registry.invoke({"name": "conformance_validator", "event": "tools/call", "phase": "request", "payload": {},
                         "timeoutMs": timeout})
    assert raised.value.code == -32602


def test_a_body_that_ends_after_its_deadline_is_a_timeout_too():
    registry = InterceptorRegistry()
    registry.add(InterceptorDef("busy", "validation", [{"events": ["tools/call"], "phase": "request"}],
                                lambda p, e, ph, c: time.sleep(0.05) or {"valid": True}))
    call = {"name": "busy", "event": "tools/call", "phase": "request", "payload": {}}
    with pytest.raises(InterceptorError) as raised:
        registry.invoke({**call, "timeoutMs": 1})
    assert raised.value.code == -32000
    assert registry.invoke({**call, "timeoutMs": 60000})["valid"] is True


def test_reference_real_interceptors_redact_and_detect():
    registry = build(fixtures=False)
    payload = {"arguments": {"text": "write to jane.doe@example.org"}}
    redacted = registry.invoke({"name": "pii-redactor", "event": "tools/call", "phase": "request", "payload": payload})
    assert redacted["modified"] and "jane.doe" not in str(redacted["payload"])
    found = registry.invoke({"name": "pii-detector", "event": "tools/call", "phase": "request", "payload": payload})
    assert found["valid"] is False and found["messages"][0]["path"] == "$.arguments.text" and "payload" not in found


# -- the working group's fixture replay (conformance/server/wg_fixtures.py) -------------------------------------
def replay(factory, directory=FIXTURES, **kw):
    from conformance.server import wg_fixtures

    kw.setdefault("timeout", SERVER.default_timeout)
    return wg_fixtures.record(factory, directory, adapter="test", **kw)


def judged(rec) -> dict:
    from conformance.core.model import REGISTRY
    from conformance.core.roles import SERVER
    from conformance.core.runner import evaluate

    return {cid: evaluate(REGISTRY[cid], rec) for cid in SERVER.check_ids("wg-fixtures")}


PROTOCOL, BEHAVIOR = "interceptors/server/wg-protocol-fixtures", "interceptors/server/wg-behavior-fixtures"


def test_reference_adapter_passes_both_replay_checks_citing_every_fixture():
    got = judged(replay(wg_adapter))
    assert {cid: r.outcome for cid, r in got.items()} == {PROTOCOL: "pass", BEHAVIOR: "pass"}
    assert got[PROTOCOL].reason.startswith("8/8 protocol fixtures passed")
    assert got[BEHAVIOR].reason.startswith("1/1 behavior fixtures passed")
    assert len(got[PROTOCOL].exchanges) == 8 and all(e["failure"] is None for e in got[PROTOCOL].exchanges)


def _copy(tmp_path, *names, edit=lambda text: text):
    for name in names:
        (tmp_path / name).write_text(edit((FIXTURES / name).read_text()))
    return tmp_path


def _lacking(text: str) -> str:
    return text.replace('"crash"', '"secretless-redactor"').replace("protocol/suite-fail-open", "protocol/lacking")


def test_a_behaviour_the_adapter_lacks_is_reported_not_judged(tmp_path):
    _copy(tmp_path, "suite-fail-closed.json")
    (tmp_path / "lacking.json").write_text(_lacking((FIXTURES / "suite-fail-open.json").read_text()))
    result = judged(replay(wg_adapter, tmp_path))[PROTOCOL]
    assert result.outcome == "pass", result.reason
    assert result.reason.startswith("1/2 protocol fixtures passed")
    assert "not judged: protocol/lacking: adapter lacks behaviour 'secretless-redactor'" in result.reason
    lacking = next(e for e in result.exchanges if e["request"]["id"] == "protocol/lacking")
    assert lacking["failure"].startswith("adapter lacks behaviour 'secretless-redactor'")


def test_a_kind_whose_every_fixture_lacks_a_behaviour_skips(tmp_path):
    (tmp_path / "lacking.json").write_text(_lacking((FIXTURES / "suite-fail-open.json").read_text()))
    _copy(tmp_path, "suite-session-deny.json")
    got = judged(replay(wg_adapter, tmp_path))
    assert got[PROTOCOL].outcome == "skip" and "adapter lacks behaviour 'secretless-redactor'" in got[PROTOCOL].reason
    assert got[BEHAVIOR].outcome == "pass"


def test_a_kind_without_fixtures_skips_saying_so(tmp_path):
    got = judged(replay(wg_adapter, _copy(tmp_path, "suite-fail-closed.json")))
    assert got[BEHAVIOR].outcome == "skip" and got[BEHAVIOR].reason.startswith("no behavior fixtures among the 1")


@pytest.mark.parametrize("problem, setup", [
    ("is not a directory", lambda d: d / "none"),
    ("no working group fixtures", lambda d: d),
    ("not readable as JSON", lambda d: (d / "bad.json").write_text("{") and d),
    ("neither of the working group's", lambda d: (d / "k.json").write_text(
        (FIXTURES / "suite-fail-closed.json").read_text().replace('"kind": "protocol"', '"kind": "other"')) and d),
    ("malformed steps", lambda d: (d / "s.json").write_text(
        (FIXTURES / "suite-invoke-unknown.json").read_text().replace('"steps": [', '"steps": [1, ')) and d),
])
def test_fixtures_that_cannot_be_read_make_every_check_fail_with_why(tmp_path, problem, setup):
    rec = replay(wg_adapter, setup(tmp_path))
    assert problem in rec.unavailable
    assert {r.outcome for r in judged(rec).values()} == {"fail"}


def test_an_adapter_that_cannot_be_loaded_makes_every_check_fail_with_why():
    from conformance.server import wg_fixtures

    rec = wg_fixtures.record_adapter("no_such_module_here:factory", FIXTURES, timeout=SERVER.default_timeout)
    results = judged(rec)
    assert {r.outcome for r in results.values()} == {"fail"} and "ModuleNotFoundError" in results[PROTOCOL].reason


class CrashesOnCreate(WgSession):
    def __init__(self, interceptors):
        raise RuntimeError("no session today")


class AnswersNonsense(WgSession):
    def invoke(self, params):
        return ["not", "an", "answer"]

    def list(self, event):
        return {"interceptors": [float("nan")]}


def test_adapter_faults_are_failures_with_the_adapters_reason():
    crashed = judged(replay(CrashesOnCreate))[PROTOCOL]
    assert crashed.outcome == "fail" and "createSession failed: RuntimeError: no session today" in crashed.reason
    nonsense = judged(replay(AnswersNonsense))[PROTOCOL]
    assert nonsense.outcome == "fail"
    assert "invoke: the adapter answered ['not', 'an', 'answer']" in nonsense.reason
    assert "list: the answer is not JSON" in nonsense.reason


class HangsInChain(WgSession):
    def chain(self, event, phase, payload, session_id):
        import threading

        threading.Event().wait()  # never returns; the replay's thread is a daemon


def test_an_adapter_that_hangs_costs_its_fixtures_and_nothing_else(tmp_path):
    for order, name in enumerate(("suite-invoke-mutation", "suite-fail-closed", "suite-fail-open",
                                  "suite-trust-boundary-order")):
        (tmp_path / f"{order}.json").write_text((FIXTURES / f"{name}.json").read_text())
    rec = replay(HangsInChain, tmp_path, timeout=0.05)
    got = judged(rec)
    assert got[PROTOCOL].outcome == "fail" and "no answer within" in got[PROTOCOL].reason
    assert rec.fatal == "the adapter hung on 2 fixture(s)"
    assert [r.error and r.error.split(" within")[0] for r in rec.exchanges.values()] == [
        None, "no answer", "no answer", "not run: the adapter already hung on 2 fixtures"]
    assert len(rec.exchanges["protocol/suite-invoke-mutation"].answers) == 2


def test_replay_checks_and_live_checks_judge_only_their_own_kind_of_target():
    from conformance.core.model import REGISTRY
    from conformance.core.runner import evaluate, evaluate_all
    from conformance.server.recording import ServerRecording as LiveRecording

    rec = replay(wg_adapter)
    assert set(evaluate_all("server", {"interceptors": rec})) == {PROTOCOL, BEHAVIOR}
    live = evaluate(REGISTRY["interceptors/server/capability-advertised"], rec)
    assert live.outcome == "skip" and "replays the interceptors working group's fixtures" in live.reason
    on_live = evaluate(REGISTRY[PROTOCOL], LiveRecording("interceptors", {}))
    assert on_live.outcome == "skip" and "--wg-fixtures DIR" in on_live.reason
    assert PROTOCOL not in evaluate_all("server", {"interceptors": LiveRecording("interceptors", {})})


def _legacy(name: str, mode: str | None = None) -> str:
    """A suite fixture as the WG's older format wrote it: `chain` steps, optionally a mode of `enforce`; here also
    without the canonical strings."""
    import json

    doc = json.loads((FIXTURES / name).read_text())
    for step in doc["steps"]:
        step["op"] = "chain" if step["op"] == "apply" else step["op"]
        step["expect"].pop("canonical", None)
        step["expect"].pop("finalPayloadCanonical", None)
    if mode:
        doc["interceptors"][0]["mode"] = mode
    return json.dumps(doc)


@pytest.mark.parametrize("name", ["suite-trust-boundary-order.json", "suite-list-filter.json",
                                  "suite-invoke-mutation.json", "suite-session-deny.json"])
def test_older_step_name_and_missing_canonical_strings_are_read(tmp_path, name):
    (tmp_path / name).write_text(_legacy(name))
    assert {r.outcome for r in judged(replay(wg_adapter, tmp_path)).values()} <= {"pass", "skip"}


def test_older_step_name_still_judges(tmp_path):
    from tests.servers.broken_wg_adapters import SameOrderBothWays

    (tmp_path / "f.json").write_text(_legacy("suite-trust-boundary-order.json"))
    result = judged(replay(SameOrderBothWays, tmp_path))[PROTOCOL]
    assert result.outcome == "fail" and "chain: expected decision deny, got allow" in result.reason


def test_each_fixture_says_which_vocabulary_it_uses(tmp_path):
    (tmp_path / "older.json").write_text(_legacy("suite-trust-boundary-order.json", mode="enforce"))
    (tmp_path / "mixed.json").write_text(_legacy("suite-fail-closed.json").replace('"chain"', '"apply"')
                                         .replace('"phases": "request"', '"phases": "request", "mode": "enforce"')
                                         .replace("suite-fail-closed", "suite-mixed"))
    _copy(tmp_path, "suite-fail-open.json", "suite-invoke-deny.json")
    result = judged(replay(wg_adapter, tmp_path))[PROTOCOL]
    assert result.outcome == "pass", result.reason
    shown = {e["request"]["id"]: e["request"]["vocabulary"] for e in result.exchanges}
    assert shown == {"protocol/suite-trust-boundary-order": {"words": ["chain", "enforce"], "generation": "older"},
                     "protocol/suite-mixed": {"words": ["apply", "enforce"], "generation": "mixed"},
                     "protocol/suite-fail-open": {"words": ["apply"], "generation": "newer"},
                     "protocol/suite-invoke-deny": {"words": [], "generation": "either"}}
    assert "vocabulary 1 newer (apply/active), 1 older (chain/enforce), 1 mixed, 1 either" in result.reason


class StampsFinalPayload(WgSession):
    key = "durationMs"

    def chain(self, event, phase, payload, session_id):
        out = super().chain(event, phase, payload, session_id)
        return {**out, "finalPayload": {**out["finalPayload"], self.key: 1.5}}


class StampsUnknownKey(StampsFinalPayload):
    key = "stamp"


@pytest.mark.parametrize("adapter, passes", [(StampsFinalPayload, True), (StampsUnknownKey, False)])
def test_final_payload_is_scrubbed_of_volatile_keys_only(tmp_path, adapter, passes):
    result = judged(replay(adapter, _copy(tmp_path, "suite-fail-open.json")))[PROTOCOL]
    assert (result.outcome == "pass") is passes, result.reason


def test_the_comparison_is_rfc8785_not_sorted_json():
    from conformance.core.judging import canonical_rfc8785, canonical_sorted

    value = {"b": 1.0, "a": "é"}
    assert canonical_rfc8785(value) == '{"a":"é","b":1}'
    assert canonical_sorted(value) == '{"a":"é","b":1.0}'  # why the two forms have two names
