"""The official MCP conformance suite's result shape, written beside ours (conformance/report/official.py),
held against real output of that suite: tests/data/official-conformance/ (its README says where it came from).
"""

import json
import re
from pathlib import Path

import yaml

from conformance.core import provenance
from conformance.core.model import PROFILES, Result
from conformance.core.roles import load_all
from conformance.report import baseline, official, results

load_all()  # the check ids a baseline may name

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "official-conformance" / "results"
# How tools built for the official output name a scenario from its directory (its runner and its tier check):
# the mode prefix and a trailing timestamp are not part of the name.
TIMESTAMP = re.compile(r"-\d{4}-\d{2}-\d{2}T[\d-]+Z$")


def sample_checks() -> dict[str, list[dict]]:
    return {path.parent.name: json.loads(path.read_text()) for path in sorted(SAMPLE.glob("*/checks.json"))}


def scenario_of(directory: str, mode_prefix: str = "server") -> str:
    return re.sub(f"^{mode_prefix}-", "", TIMESTAMP.sub("", directory))


def verdict(check_id, outcome, level="MUST", reason=None, **extra):
    return Result(check_id, level, outcome, ["ic.server.capability"], "advertise the capability",
                  "reads the initialize result", reason=reason, **extra)


CHECKS = [verdict("interceptors/server/capability-advertised", "pass"),
          verdict("interceptors/server/list-result-valid", "fail", reason="the result has no interceptors",
                  expected={"interceptors": []}, actual={}),
          verdict("interceptors/server/supported-events-cover-hooks", "warn", "SHOULD", reason="event missing"),
          verdict("interceptors/server/invoke-result-valid", "skip", reason="fixture not exposed: tool x",
                  untestable=True),
          verdict("interceptors/server/unknown-interceptor-rejected", "xfail", reason="expected failure (issue 3)",
                  expected_failure=True),
          verdict("augmentation/server/augment-result-valid", "stale", reason="listed but passes"),
          verdict("augmentation/server/prepend-note-hint", "info", "MAY", reason="chose append"),
          verdict("interceptors/server/unadvertised-method-rejected", "skip",
                  reason="the profile is claimed; capability-advertised judges its advertisement")]
CLAIMED = {"claimed": True, "claimedBy": "option", "reason": "--profile"}


def document(checks=CHECKS, role="server"):
    return results.results_document(role=role, target={"kind": "stdio", "command": "python s.py"}, results=checks,
                                    claims={"interceptors": CLAIMED, "augmentation": CLAIMED}, started=0.0,
                                    finished=2.0, strict=False, exit_code=1)


def test_the_sample_is_real_official_output():
    sample = sample_checks()
    assert len(sample) == 3
    assert {scenario_of(d) for d in sample} == {"ping", "tools-call-error", "tasks-capability-negotiation"}
    statuses = {c["status"] for checks in sample.values() for c in checks}
    assert statuses == {"SUCCESS", "FAILURE"} and statuses <= set(official.STATUSES)


def test_our_checks_have_the_shape_of_the_sample():
    sample = [c for checks in sample_checks().values() for c in checks]
    always = set.intersection(*(set(c) for c in sample))  # members every official check has
    seen = set.union(*(set(c) for c in sample))
    assert always == {"id", "name", "description", "status", "timestamp", "specReferences"}
    for scenario in official.scenarios(document()):
        for check in scenario["checks"]:
            assert always <= set(check) <= seen, set(check) ^ seen
            for key in ("id", "name", "description", "status", "timestamp"):
                assert isinstance(check[key], str) and type(check[key]) is type(sample[0][key])
            assert check["status"] in official.STATUSES
            assert check["specReferences"] and all(set(ref) == {"id", "url"} and all(
                isinstance(v, str) for v in ref.values()) for ref in check["specReferences"])
            assert isinstance(check.get("details", {}), dict)
            if check["status"] == "FAILURE":  # as in the sample: a failure says why
                assert check["errorMessage"]


def test_outcomes_map_to_the_official_statuses():
    (interceptors,) = [s for s in official.scenarios(document()) if s["profile"] == "interceptors"]
    (augmentation,) = [s for s in official.scenarios(document()) if s["profile"] == "augmentation"]
    status = {c["name"]: c for c in interceptors["checks"] + augmentation["checks"]}
    assert {name: c["status"] for name, c in status.items()} == {
        "interceptors/server/capability-advertised": "SUCCESS",
        "interceptors/server/list-result-valid": "FAILURE",
        "interceptors/server/supported-events-cover-hooks": "WARNING",
        "interceptors/server/invoke-result-valid": "WARNING",  # a missing fixture: untestable
        "interceptors/server/unadvertised-method-rejected": "SKIPPED",  # does not apply to a claimed profile
        "interceptors/server/unknown-interceptor-rejected": "FAILURE",
        "augmentation/server/augment-result-valid": "FAILURE",
        "augmentation/server/prepend-note-hint": "INFO"}
    untestable = status["interceptors/server/invoke-result-valid"]
    assert untestable["details"]["untestable"] is True
    assert untestable["errorMessage"] == "Not testable: fixture not exposed: tool x"
    xfail = status["interceptors/server/unknown-interceptor-rejected"]
    assert xfail["details"]["expectedFailure"] is True and xfail["details"]["outcome"] == "xfail"
    failed = status["interceptors/server/list-result-valid"]
    assert failed["id"] == "sep-2624-list-result-valid" and failed["errorMessage"] == "the result has no interceptors"
    assert failed["details"]["expected"] == {"interceptors": []} and failed["details"]["actual"] == {}
    assert failed["specReferences"][0]["url"] == "https://github.com/modelcontextprotocol/modelcontextprotocol/pull/2624"
    info = status["augmentation/server/prepend-note-hint"]
    assert "errorMessage" not in info and info["details"]["note"] == "chose append"


def test_scenarios_are_named_and_placed_as_official_tools_read_them(tmp_path):
    doc = document()
    official.write(tmp_path, doc)
    written = sorted(p.parent.name for p in (tmp_path / "official").glob("*/checks.json"))
    assert written == ["server-server-augmentation", "server-server-interceptors"]
    # The rule that names the sample's scenarios names ours.
    assert [scenario_of(d) for d in written] == ["server-augmentation", "server-interceptors"]
    index = json.loads((tmp_path / "official" / "scenarios.json").read_text())
    assert index["shape"] == {"package": "@modelcontextprotocol/conformance",
                              "version": provenance.OFFICIAL_SUITE_VERSION}
    by_name = {s["name"]: s for s in index["scenarios"]}
    assert by_name["server-interceptors"]["source"] == {"extensionId": "io.modelcontextprotocol/interceptors"}
    assert by_name["server-interceptors"]["mode"] == "server" and by_name["server-interceptors"]["checks"] == 6
    assert by_name["server-augmentation"]["catalogRevision"] == provenance.catalog_revision("augmentation")
    host = official.scenarios(document([verdict("interceptors/host/audit-mutation-not-applied", "pass")], "host"))
    assert [(s["name"], s["directory"], s["mode"]) for s in host] == [
        ("host-interceptors", "host-interceptors", "client")]  # the official client mode: no prefix


def test_the_runs_failures_come_back_as_a_baseline_in_the_official_form(tmp_path):
    official.write(tmp_path, document())
    path = tmp_path / "official" / "expected-failures.yml"
    data = yaml.safe_load(path.read_text())
    # Warnings too (the official runner counts a WARNING as failing); the stale entry, which passes, is dropped.
    assert data["server"] == ["server-augmentation:augment-result-valid"] * 0 + [
        "server-interceptors:sep-2624-invoke-result-valid", "server-interceptors:sep-2624-list-result-valid",
        "server-interceptors:sep-2624-supported-events-cover-hooks",
        "server-interceptors:sep-2624-unknown-interceptor-rejected"]
    assert data["catalog"] == {p: provenance.catalog_revision(p) for p in ("augmentation", "interceptors")}
    loaded = baseline.load(str(path))
    assert set(loaded.checks) == {"interceptors/server/invoke-result-valid", "interceptors/server/list-result-valid",
                                  "interceptors/server/supported-events-cover-hooks",
                                  "interceptors/server/unknown-interceptor-rejected"}
    assert loaded.revision_drift(provenance.catalog_revisions()) == []


def test_the_baseline_is_the_same_text_with_libyaml_or_without(monkeypatch):
    """Written by libyaml's emitter where PyYAML has it, byte for byte what the pure-Python one writes."""
    written = official.baseline_yaml(document())
    assert "server-interceptors:sep-2624-list-result-valid" in written
    monkeypatch.delattr(yaml, "CSafeDumper", raising=False)
    assert official.baseline_yaml(document()) == written


def test_every_profile_has_an_extension_identifier_in_the_sep_2133_style():
    from conformance.server.interceptors import EXTENSION_ID

    assert set(provenance.EXTENSION_IDS) == set(PROFILES)
    assert provenance.EXTENSION_IDS["interceptors"] == EXTENSION_ID  # the one SEP-2624 gives
    for profile, ident in provenance.EXTENSION_IDS.items():
        prefix, name = ident.split("/")
        assert re.fullmatch(r"[a-z0-9-]+(\.[a-z0-9-]+)+", prefix) and name == profile, ident
    doc = (Path(__file__).resolve().parents[2] / "docs" / "check-model.md").read_text()
    assert all(f"`{ident}`" in doc for ident in provenance.EXTENSION_IDS.values())


def test_the_official_version_followed_is_in_the_docs():
    docs = Path(__file__).resolve().parents[2] / "docs"
    assert "0.2.0-alpha.12" == provenance.OFFICIAL_SUITE_VERSION
    assert provenance.OFFICIAL_SUITE_VERSION in (docs / "reports.md").read_text()


# -- what the official tooling reads: its check type, its tier score's scenarios, its SEP check ids ------------

SCHEMA = json.loads((SAMPLE.parent / "conformance-check.schema.json").read_text())
OUTCOMES = ("pass", "fail", "warn", "skip", "xfail", "stale", "info")


def every_check_document(role: str, claimed: bool = True) -> dict:
    """A run of the role in which every one of its checks has a verdict, the outcomes taken in turn."""
    from conformance.core import catalog
    from conformance.core.model import REGISTRY

    checks = [Result(cid, catalog.level_of(cid), OUTCOMES[i % len(OUTCOMES)], [r.id for r in catalog.rows_for(cid)],
                     "a requirement", "what the suite did", reason="why", judged_at=1_700_000_000.0 + i / 1000)
              for i, cid in enumerate(sorted(c for c in REGISTRY if c.split("/")[1] == role))]
    claim = CLAIMED if claimed else {"claimed": False, "claimedBy": None, "reason": "not advertised"}
    return results.results_document(role=role, target={"kind": "stdio", "command": "x"}, results=checks,
                                    claims={p: claim for p in PROFILES}, started=0.0, finished=2.0, strict=False,
                                    exit_code=1)


def test_every_check_of_every_role_has_the_official_check_type():
    # The official ConformanceCheck type, as a JSON Schema (tests/data/official-conformance/README.md says why a
    # schema and not tsc: the npm package ships no type declarations); the official sample holds it too.
    import jsonschema

    for checks in sample_checks().values():
        jsonschema.validate(checks, SCHEMA)
    total = 0
    for role in ("server", "host", "gateway"):
        for scenario in official.scenarios(every_check_document(role)):
            jsonschema.validate(scenario["checks"], SCHEMA)
            total += len(scenario["checks"])
    from conformance.core.model import REGISTRY

    assert total == len(REGISTRY)


def test_an_unclaimed_profile_writes_no_official_scenario(tmp_path):
    # Its refusal checks pass: as an official scenario it would count as a passed one in a tier score.
    doc = every_check_document("server", claimed=False)
    assert official.scenarios(doc) == []
    official.write(tmp_path, doc)
    assert list((tmp_path / "official").glob("*/checks.json")) == []
    index = json.loads((tmp_path / "official" / "scenarios.json").read_text())
    assert index["scenarios"] == [] and {p["profile"] for p in index["leftOut"]} == {c["profile"] for c in doc["checks"]}
    assert "counts as a core scenario" in index["scoring"]


def test_no_official_scenario_of_a_claimed_profile_passes_on_skips_alone():
    # The official score passes a scenario with a SUCCESS and no FAILURE; a claimed profile's check whose
    # prerequisite (a fixture) is missing is the official untestable WARNING, never a silent SKIPPED.
    doc = results.results_document(
        role="server", target={"kind": "stdio", "command": "x"}, claims={"interceptors": CLAIMED}, started=0.0,
        finished=2.0, strict=False, exit_code=0,
        results=[verdict("interceptors/server/invoke-result-valid", "skip", reason="fixture not exposed: tool x",
                         untestable=True)])
    (scenario,) = official.scenarios(doc)
    assert [c["status"] for c in scenario["checks"]] == ["WARNING"]


def test_sep_profiles_use_the_official_sep_check_ids():
    # `conformance traceability --results DIR` collects ids matching /^sep-\d+-/ (version 0.2.0-alpha.12).
    for role in ("server", "host", "gateway"):
        for scenario in official.scenarios(every_check_document(role)):
            number = provenance.SEP_NUMBERS.get(scenario["profile"])
            for check in scenario["checks"]:
                slug = check["name"].split("/")[2]
                assert check["id"] == (f"sep-{number}-{slug}" if number else slug)
                assert bool(re.match(r"^sep-\d+-", check["id"])) == bool(number)
                assert official.slug_of(scenario["profile"], check["id"]) == slug
    assert provenance.SEP_NUMBERS == {"execution-requirements": 2487, "interceptors": 2624}


def test_each_check_has_its_own_timestamp_and_every_reference_url_is_absolute():
    for role in ("server", "host", "gateway"):
        for scenario in official.scenarios(every_check_document(role)):
            stamps = [c["timestamp"] for c in scenario["checks"]]
            assert len(set(stamps)) == len(stamps) and all(TIMESTAMP_ISO.fullmatch(s) for s in stamps)
            for check in scenario["checks"]:
                for ref in check["specReferences"]:
                    assert "url" not in ref or re.match(r"https?://", ref["url"]), ref
                    assert "url" in ref or "mcp-ext-conformance " in ref["id"], ref  # a page of this repository


TIMESTAMP_ISO = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z")


def test_the_console_warns_when_our_files_sit_among_an_official_runs_results(tmp_path):
    run = tmp_path / "results"
    (run / "server-ping-2026-11-26T11-35-37-404Z").mkdir(parents=True)
    (run / "server-ping-2026-11-26T11-35-37-404Z" / "checks.json").write_text("[]")
    assert official.mixing_warning(tmp_path / "elsewhere") is None
    assert "as core ones" in official.mixing_warning(run / "ours")
    assert "as core ones" in official.mixing_warning(run)
