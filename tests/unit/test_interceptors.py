"""Reference interceptors (SEP-2624): override narrowing, the invoker's chain, and the WG fixture replay runner.

The replay tests use the suite's own fixtures in the WG format (tests/data/interceptor-fixtures, written
for these tests by generate.py there); each broken adapter below breaks one chain rule and must fail
exactly the fixtures that pin that rule.
"""

from pathlib import Path

import pytest

from conformance import interceptors_replay as replay
from reference_servers.interceptor_chain import ChainEntry, WgSession, run_chain, wg_adapter
from reference_servers.interceptors import InterceptorDef, InterceptorRegistry, build, narrow_hooks

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
