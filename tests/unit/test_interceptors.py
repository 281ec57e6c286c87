"""Reference interceptors (SEP-2624): override narrowing, the invoker's chain, and the WG fixture replay runner.

The replay tests use the suite's own fixtures in the WG format (tests/data/interceptor-fixtures, written
for these tests by generate.py there); each broken adapter below breaks one chain rule and must fail
exactly the fixtures that pin that rule.
"""

import time
from pathlib import Path

import pytest

from conformance.tools import interceptors_replay as replay
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


# -- the replay runner -------------------------------------------------------------------------------------------
def outcomes(factory) -> dict:
    return {f["id"]: f["passed"] for f in replay.replay(FIXTURES, factory)["fixtures"]}


def test_reference_adapter_passes_every_suite_fixture():
    report = replay.replay(FIXTURES, wg_adapter)
    assert report["total"] == 8 and report["passed"] == 8, report


class AppliesAuditMutations(WgSession):
    def __init__(self, interceptors):
        super().__init__([{k: v for k, v in i.items() if k != "mode"} for i in interceptors])


class FailOpenByDefault(WgSession):
    def __init__(self, interceptors):
        super().__init__([{"failOpen": True, **i} for i in interceptors])


class SameOrderBothWays(WgSession):
    def chain(self, event, phase, payload, session_id):
        return super().chain(event, "response" if phase == "request" else phase, payload, session_id) \
            if phase == "request" and any(e.interceptor.type == "validation" for e in self.entries) else \
            super().chain(event, phase, payload, session_id)


@pytest.mark.parametrize("adapter, failing", [
    (AppliesAuditMutations, {"protocol/suite-audit-shadow", "protocol/suite-list-filter"}),
    (FailOpenByDefault, {"protocol/suite-fail-closed"}),
    (SameOrderBothWays, {"protocol/suite-trust-boundary-order"}),
])
def test_broken_adapter_fails_exactly_its_fixtures(adapter, failing):
    got = outcomes(adapter)
    assert {fid for fid, ok in got.items() if not ok} == failing


def test_unsupported_behaviour_fails_the_fixture_with_a_reason(tmp_path):
    (tmp_path / "f.json").write_text((FIXTURES / "suite-fail-open.json").read_text().replace('"crash"', '"secretless-redactor"'))
    [result] = replay.replay(tmp_path, wg_adapter)["fixtures"]
    assert not result["passed"] and "secretless-redactor" in result["reason"]


def test_command_line_exit_codes_and_reports(tmp_path, capsys):
    assert replay.main(["--fixtures", str(FIXTURES), "--report-dir", str(tmp_path)]) == 0
    assert "8/8 fixtures passed" in capsys.readouterr().out
    assert (tmp_path / "interceptors-replay.json").exists() and (tmp_path / "interceptors-replay.md").exists()
    assert replay.main(["--fixtures", str(FIXTURES), "--adapter", f"{__name__}:FailOpenByDefault"]) == 1
    assert replay.main(["--fixtures", str(tmp_path / "none")]) == 2
    assert replay.main(["--fixtures", str(FIXTURES), "--adapter", "no_such_module:factory"]) == 2


# -- the replay in the suite's own report formats ----------------------------------------------------------------
def test_report_dir_holds_the_suites_reports_one_check_a_fixture(tmp_path):
    import json
    import xml.etree.ElementTree as ET

    import jsonschema

    from conformance.report import dashboard

    (tmp_path / "fx").mkdir()
    for name in ("suite-fail-closed.json", "suite-list-filter.json"):
        (tmp_path / "fx" / name).write_text((FIXTURES / name).read_text())
    (tmp_path / "fx" / "lacking.json").write_text(
        (FIXTURES / "suite-fail-open.json").read_text().replace('"crash"', '"secretless-redactor"')
        .replace("protocol/suite-fail-open", "behavior/lacking_one"))
    out = tmp_path / "out"
    assert replay.main(["--fixtures", str(tmp_path / "fx"), "--adapter", f"{__name__}:FailOpenByDefault",
                        "--report-dir", str(out)]) == 1
    doc = json.loads((out / "results.json").read_text())
    schema = json.loads((Path(__file__).resolve().parents[2] / "schemas" / "results.json").read_text())
    jsonschema.validate(doc, schema)
    assert doc["role"] == "server" and doc["exitCode"] == 1
    assert doc["target"] == {"kind": "adapter", "adapter": f"{__name__}:FailOpenByDefault"}
    assert doc["profiles"]["interceptors"]["claimed"] is True
    verdicts = {c["id"]: c["outcome"] for c in doc["checks"]}
    assert verdicts == {"interceptors/server/wg-protocol-suite-fail-closed": "fail",
                        "interceptors/server/wg-protocol-suite-list-filter": "pass",
                        "interceptors/server/wg-behavior-lacking-one": "skip"}
    lacking = next(c for c in doc["checks"] if c["outcome"] == "skip")
    assert lacking["reason"].startswith("adapter lacks behaviour 'secretless-redactor'")
    failed = next(c for c in doc["checks"] if c["outcome"] == "fail")
    assert failed["requirement"].startswith("SEP-2624/chain.fail-closed: ") and failed["actual"][0]["step"] == 0
    suite = ET.parse(out / "junit.xml").getroot().find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("3", "1", "1")
    for name in ("summary.md", "index.html", "badges/server-interceptors.svg", "interceptors-replay.md"):
        assert (out / name).exists(), name
    assert "wg-protocol-suite-fail-closed" in (out / "summary.md").read_text()
    assert dashboard.load(str(out)).doc["checks"] == doc["checks"]


def test_wg_check_ids_are_slugs_apart_from_the_registered_checks():
    import conformance.server.interceptors  # noqa: F401  (registers the profile's checks)
    from conformance.core.model import REGISTRY

    assert replay.check_id("behavior/relaybleed-aws_access_key") == "interceptors/server/wg-behavior-relaybleed-aws-access-key"
    assert not [cid for cid in REGISTRY if cid.startswith("interceptors/server/wg-")]
    twins = {"fixtures": [{"id": i, "requirement": "SEP-2624/x", "passed": True, "steps": 1, "reason": None,
                           "failures": [], "description": "", "duration": 0.0, "lacks_behaviour": False}
                          for i in ("protocol/a_b", "protocol/a-b")]}
    assert len({r.id for r in replay.to_results(twins, "m:f")}) == 2


def _legacy(name: str) -> str:
    """A suite fixture as the WG's older format wrote it: `chain` steps; here also without the canonical strings."""
    import json

    doc = json.loads((FIXTURES / name).read_text())
    for step in doc["steps"]:
        step["op"] = "chain" if step["op"] == "apply" else step["op"]
        step["expect"].pop("canonical", None)
        step["expect"].pop("finalPayloadCanonical", None)
    return json.dumps(doc)


@pytest.mark.parametrize("name", ["suite-trust-boundary-order.json", "suite-list-filter.json", "suite-invoke-mutation.json"])
def test_older_step_name_and_missing_canonical_strings_are_read(tmp_path, name):
    (tmp_path / name).write_text(_legacy(name))
    [good] = replay.replay(tmp_path, wg_adapter)["fixtures"]
    assert good["passed"], good


def test_older_step_name_still_judges(tmp_path):
    (tmp_path / "f.json").write_text(_legacy("suite-trust-boundary-order.json"))
    [bad] = replay.replay(tmp_path, SameOrderBothWays)["fixtures"]
    assert not bad["passed"]


class StampsFinalPayload(WgSession):
    key = "durationMs"

    def chain(self, event, phase, payload, session_id):
        out = super().chain(event, phase, payload, session_id)
        return {**out, "finalPayload": {**out["finalPayload"], self.key: 1.5}}


class StampsUnknownKey(StampsFinalPayload):
    key = "stamp"


@pytest.mark.parametrize("adapter, passes", [(StampsFinalPayload, True), (StampsUnknownKey, False)])
def test_final_payload_is_scrubbed_of_volatile_keys_only(tmp_path, adapter, passes):
    (tmp_path / "f.json").write_text((FIXTURES / "suite-fail-open.json").read_text())
    [result] = replay.replay(tmp_path, adapter)["fixtures"]
    assert result["passed"] is passes, result
