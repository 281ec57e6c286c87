"""The sequential-pipeline gateway checks can tell pipelines apart.

- the fixtures are valid data and trace to the catalog;
- the reference engine (through its adapter) passes every check;
- each mutant in tests/gateway/broken_pipelines.py fails exactly the check it was written to fail;
- an adapter that hangs, raises, answers nonsense or cannot be imported fails every check, with a
  reason, within a bound, and never crashes the suite;
- Gatekit 0.3.0, driven through its adapter, fails a pinned set, so an upstream change flips a visible
  assertion here;
- the reference engine's own rules and real plugins behave as documented.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conformance.core import catalog, schemas_loader
from conformance.core.adapters import load_adapter
from conformance.core.model import REGISTRY
from conformance.core.runner import evaluate
from conformance.gateway import replay as gp
from conformance.gateway import sequential_pipeline as sp
from reference_servers.gateway import adapter as reference_adapter
from reference_servers.gateway.pipeline import (
    Decision,
    Pipeline,
    Plugin,
    VocabularyPlugin,
    build_pipeline,
)
from tests.gateway.broken_pipelines import FLAWS, MUTANTS, make_factory

REPO = Path(__file__).resolve().parents[1]
TIMEOUT = 3.0  # seconds per fixture run (the run's --timeout)
FIXTURES = gp.load_fixtures()
SLUGS = {cid: cid.rsplit("/", 1)[1] for cid in sp.CHECK_IDS}

# What Gatekit 0.3.0 gets wrong, as found (see ecosystem/gateways/gatekit/adapter.py):
# - auditors-cannot-modify: the proxy hands auditors the very response object it then sends, so an
#   auditor that changes it in place changes what the client gets;
# - block-reason-carried (BEHAVIOR): once a security plugin blocks, the pipeline stops capturing content
#   and replaces every stage reason with "[blocked]", so the plugin's own reason text is lost.
GATEKIT_VIOLATED = {"auditors-cannot-modify", "block-reason-carried"}


def violated(result) -> bool:
    # BEHAVIOR-level checks report "info" whether they pass or not; a violation carries expected/actual.
    return result.outcome in ("fail", "warn") or (result.outcome == "info" and result.expected is not None)


def verdicts(rec) -> dict[str, object]:
    return {SLUGS[cid]: evaluate(REGISTRY[cid], rec) for cid in sp.CHECK_IDS}


def failing(rec) -> set[str]:
    return {slug for slug, result in verdicts(rec).items() if violated(result)}


# ------------------------------------------------------------------------------------------ fixtures

def test_fixtures_are_valid_and_numerous():
    assert 15 <= len(FIXTURES) <= 40
    ids = [fx["id"] for fx in FIXTURES]
    assert len(ids) == len(set(ids))
    for fx in FIXTURES:
        assert schemas_loader.errors("pipeline-fixture", fx) == [], fx["id"]


def test_every_fixture_serves_a_registered_check_and_traces_to_its_rows():
    rows = catalog.load()
    for fx in FIXTURES:
        assert fx["check"] in REGISTRY, fx["id"]
        for row_id in fx["rows"]:
            assert row_id in rows, f"{fx['id']}: row {row_id} is not in the catalog"
            assert fx["check"] in rows[row_id].checks, f"{fx['id']}: row {row_id} does not name {fx['check']}"


def test_every_check_has_fixtures_and_rows():
    served = {fx["check"] for fx in FIXTURES}
    for cid in sp.CHECK_IDS:
        assert catalog.rows_for(cid), f"{cid} names no catalog row"
        if not cid.endswith("/predictable"):  # predictable replays every fixture
            assert cid in served, f"no fixture serves {cid}"


@pytest.mark.parametrize("broken, why", [
    ({"name": "m-x", "behaviour": "block", "kind": "middleware", "reason": "r"}, "only security blocks"),
    ({"name": "s-x", "behaviour": "block", "kind": "security"}, "a block gives a reason"),
    ({"name": "m-x", "behaviour": "explode", "kind": "middleware"}, "unknown behaviour"),
    ({"name": "m-x", "behaviour": "pass", "kind": "filter"}, "unknown kind"),
    ({"name": "m-x", "behaviour": "pass", "kind": "middleware", "priority": "high"}, "priority is an integer"),
])
def test_schema_rejects_bad_plugins(broken, why):
    fx = json.loads(json.dumps(FIXTURES[0]))
    fx["plugins"] = [broken]
    assert schemas_loader.errors("pipeline-fixture", fx), why


def test_schema_rejects_contradictory_expectations():
    fx = json.loads(json.dumps(FIXTURES[0]))
    fx["expected"] = {"allowed": True, "response": fx["response"], "reasonContains": ["x"]}
    assert schemas_loader.errors("pipeline-fixture", fx)
    fx["expected"] = {"configurationError": True, "allowed": False}
    assert schemas_loader.errors("pipeline-fixture", fx)


def test_malformed_fixture_file_is_named(tmp_path):
    (tmp_path / "bad-one.json").write_text(json.dumps({"id": "bad-one"}))
    with pytest.raises(gp.FixtureError, match="bad-one.json"):
        gp.load_fixtures(tmp_path)


# ------------------------------------------------------------------------------------------ verdicts

def test_reference_adapter_passes_every_check():
    rec = gp.record_pipeline_sync(reference_adapter.factory, fixtures=FIXTURES, timeout=TIMEOUT)
    results = verdicts(rec)
    assert {slug for slug, r in results.items() if violated(r)} == set()
    for slug, result in results.items():
        assert result.outcome in ("pass", "info") and "as expected" in result.reason or "twice" in result.reason
        assert result.exchanges, f"{slug}: the report shows no fixture"
    # what a report shows for one fixture: input, expected and actual
    shown = results["chained-input"].exchanges[0]
    assert set(shown) >= {"label", "request", "response", "failure", "elapsedSeconds"}  # results.json's Exchange
    assert set(shown["request"]) >= {"file", "plugins", "request", "response", "expected"}


def test_reference_factory_loads_by_name():
    assert load_adapter("reference_servers.gateway.adapter:factory") is reference_adapter.factory


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_each_mutant_fails_exactly_its_check(name):
    slugs = {cid.rsplit("/", 1)[1] for cid in MUTANTS[name][0]}
    rec = gp.record_pipeline_sync(make_factory(**FLAWS[name]), fixtures=FIXTURES, timeout=TIMEOUT)
    results = verdicts(rec)
    assert failing(rec) == slugs, {s: r.reason for s, r in results.items() if violated(r)}
    for slug in slugs:
        assert results[slug].reason.startswith("fixture "), results[slug].reason


def test_the_unbroken_strawman_passes():
    assert failing(gp.record_pipeline_sync(make_factory(), fixtures=FIXTURES, timeout=TIMEOUT)) == set()


def test_every_check_has_a_mutant():
    assert set().union(*(fails for fails, _ in MUTANTS.values())) == set(SLUGS)


# ------------------------------------------------------------------------------------------ hostile adapters

class _Hangs:
    def __init__(self, release: threading.Event | None = None):
        self.release = release

    async def process_response(self, request, response):
        if self.release is not None:
            self.release.wait(30)  # blocks the event loop outright
        else:
            await asyncio.sleep(3600)  # hangs politely


@pytest.mark.parametrize("blocking", [False, True], ids=["awaits-forever", "blocks-its-loop"])
def test_hanging_adapter_fails_every_check_within_a_bound(blocking):
    release = threading.Event()
    started = time.monotonic()
    try:
        rec = gp.record_pipeline_sync(lambda plugins: _Hangs(release if blocking else None), fixtures=FIXTURES,
                                      timeout=0.3)
        elapsed = time.monotonic() - started
        results = verdicts(rec)
    finally:
        release.set()
    assert elapsed < 5, elapsed
    assert all(violated(r) for r in results.values()), {s: r.outcome for s, r in results.items()}
    assert "no outcome within 0.3 s" in results["chained-input"].reason or "not run" in results["chained-input"].reason
    assert all(r.outcome == "fail" for r in results.values() if r.level == "MUST")
    assert "hung" in rec.fatal


def test_raising_factory_fails_every_check():
    def factory(plugins):
        raise RuntimeError("cannot build")
    results = verdicts(gp.record_pipeline_sync(factory, fixtures=FIXTURES, timeout=TIMEOUT))
    assert all(violated(r) for r in results.values())
    assert "the adapter raised RuntimeError: cannot build" in results["block-stops-chain"].reason


def test_raising_and_malformed_pipelines_fail_every_check():
    class Raises:
        async def process_response(self, request, response):
            raise KeyError("oops")

    class Nonsense:
        def process_response(self, request, response):
            return {"allowed": "yes"}

    for factory, words in ((lambda p: Raises(), "KeyError"), (lambda p: Nonsense(), "allowed is not a boolean")):
        results = verdicts(gp.record_pipeline_sync(factory, fixtures=FIXTURES, timeout=TIMEOUT))
        assert all(violated(r) for r in results.values())
        assert words in results["ascending-priority"].reason


def test_unimportable_adapter_fails_every_check_with_the_reason():
    rec = gp.record_adapter("no_such_module_here:factory", fixtures=FIXTURES, timeout=TIMEOUT)
    results = verdicts(rec)
    assert all(r.outcome == "fail" for r in results.values())
    assert "ModuleNotFoundError" in results["chained-input"].reason


@pytest.mark.parametrize("spec", ["no-colon", "reference_servers.gateway.adapter:", ":factory"])
def test_load_adapter_rejects_bad_specs(spec):
    with pytest.raises(ValueError):
        load_adapter(spec)


def test_differences_compare_only_stated_fields():
    expected = {"allowed": False, "stages": ["a"]}
    assert sp.differences(expected, {"allowed": False, "response": None, "reason": "x", "stages": ["a"],
                                     "audit": [{"plugin": "z"}]}) == []
    assert sp.differences({"allowed": True, "response": {"b": 1, "a": 2}},
                          {"allowed": True, "response": {"a": 2, "b": 1}, "stages": [], "audit": []}) == []


# ------------------------------------------------------------------------------------------ Gatekit 0.3.0

def _gatekit_python() -> str | None:
    """An interpreter with gatekit: this one, MCPX_GATEKIT_PYTHON, or a venv-gatekit beside this venv
    (gatekit 0.3.0 pins pydantic==2.11.5, which the suite's own environment may not have)."""
    try:
        import gatekit  # noqa: F401
        return sys.executable
    except ImportError:
        pass
    candidates = [os.environ.get("MCPX_GATEKIT_PYTHON"),
                  str(Path(sys.executable).parent.parent.parent / "venv-gatekit" / "bin" / "python")]
    for candidate in filter(None, candidates):
        if Path(candidate).exists() and subprocess.run([candidate, "-c", "import gatekit"],
                                                       capture_output=True).returncode == 0:
            return candidate
    return None


def test_gatekit_fails_a_pinned_set():
    python = _gatekit_python()
    if python is None:
        pytest.skip("gatekit is not installed here, MCPX_GATEKIT_PYTHON names no interpreter with it, and there "
                    "is no ../venv-gatekit (pip install gatekit==0.3.0 into a separate venv: it pins pydantic)")
    proc = subprocess.run(
        [python, "-m", "conformance.gateway.replay", "ecosystem.gateways.gatekit.adapter:factory"],
        capture_output=True, text=True, timeout=120, cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = {r["slug"]: r for r in json.loads(proc.stdout)}
    found = {slug for slug, r in results.items()
             if r["outcome"] in ("fail", "warn") or (r["outcome"] == "info" and "expected" in r)}
    assert found == GATEKIT_VIOLATED, {s: results[s]["reason"] for s in found}
    assert "[s-deny] [blocked]" in results["block-reason-carried"]["reason"]
    assert results["auditors-cannot-modify"]["outcome"] == "fail"
    assert "[audited]" in json.dumps(results["auditors-cannot-modify"]["actual"])


# ------------------------------------------------------------------------------------------ the reference engine

def run(pipeline, request=None, response=None):
    request = request or {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo"}}
    response = response or {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "hi"}]}}
    return asyncio.run(pipeline.process_response(request, response))


@pytest.mark.parametrize("priority", [-1, 101, 1.5, True, "50"])
def test_engine_rejects_bad_priorities(priority):
    with pytest.raises(ValueError, match="priority"):
        build_pipeline([{"plugin": "vocabulary", "name": "x", "behaviour": "pass", "priority": priority}])


@pytest.mark.parametrize("config, words", [
    ({"plugin": "nope"}, "unknown plugin type"),
    ({"plugin": "vocabulary", "name": "x", "behaviour": "pass", "colour": "red"}, "colour"),
    ({"plugin": "vocabulary", "name": "x", "behaviour": "pass", "kind": "filter"}, "kind"),
    ({"plugin": "tool_allowlist", "name": "t"}, "tools"),
    ({"plugin": "audit_log", "name": "a", "path": "/no/such/dir/log.jsonl"}, "does not exist"),
    ({"plugin": "pii_redaction", "name": "p", "aggressiveness": "extreme"}, "aggressiveness"),
])
def test_engine_rejects_bad_configs(config, words):
    with pytest.raises(ValueError, match=words):
        build_pipeline([config])


def test_engine_non_critical_failure_is_skipped_and_auditor_failure_changes_nothing():
    pipeline = build_pipeline([
        {"plugin": "vocabulary", "name": "flaky", "behaviour": "raise", "critical": False},
        {"plugin": "vocabulary", "name": "tag", "behaviour": "append"},
        {"plugin": "vocabulary", "name": "bad-auditor", "behaviour": "raise", "kind": "auditing"},
        {"plugin": "vocabulary", "name": "good-auditor", "behaviour": "audit", "kind": "auditing"},
    ])
    outcome = run(pipeline)
    assert outcome.allowed and outcome.response["result"]["content"][0]["text"] == "hi[tag]"
    assert outcome.stages == ["flaky", "tag"]
    assert [a["plugin"] for a in outcome.audit] == ["good-auditor"]


def test_engine_fails_closed_on_a_non_decision():
    class Sloppy(Plugin):
        async def process_response(self, request, response):
            return response

    outcome = run(Pipeline([Sloppy("sloppy"), VocabularyPlugin("tag", "append")]))
    assert not outcome.allowed and outcome.response is None and "[sloppy]" in outcome.reason
    assert outcome.stages == ["sloppy"]


def test_engine_leaves_the_callers_response_alone():
    response = {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "hi"}]}}

    class InPlace(Plugin):
        async def process_response(self, request, response):
            response["result"]["content"][0]["text"] = "changed"
            return Decision()

    run(Pipeline([InPlace("in-place")]), response=response)
    assert response["result"]["content"][0]["text"] == "hi"


def test_real_plugins_pii_allowlist_and_audit_log(tmp_path):
    log = tmp_path / "audit.jsonl"
    pipeline = build_pipeline([
        {"plugin": "audit_log", "name": "log", "path": str(log)},
        {"plugin": "tool_allowlist", "name": "allow", "tools": ["echo"], "priority": 10},
        {"plugin": "pii_redaction", "name": "pii", "priority": 20},
    ])
    text = {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "mail ann@example.com"}]}}
    outcome = run(pipeline, response=text)
    assert outcome.allowed and outcome.stages == ["allow", "pii"]
    assert outcome.response["result"]["content"][0]["text"] == "mail [EMAIL_1]"

    call_other = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "rm_rf"}}
    blocked = run(pipeline, request=call_other, response=text)
    assert not blocked.allowed and blocked.reason == "[allow] tool 'rm_rf' is not on the allowlist"
    assert blocked.stages == ["allow"]

    listing = {"jsonrpc": "2.0", "id": 3, "result": {"tools": [{"name": "echo"}, {"name": "rm_rf"}]}}
    listed = run(pipeline, request={"jsonrpc": "2.0", "id": 3, "method": "tools/list"}, response=listing)
    assert [t["name"] for t in listed.response["result"]["tools"]] == ["echo"]

    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(x["method"], x["allowed"]) for x in lines] == [("tools/call", True), ("tools/call", False),
                                                          ("tools/list", True)]
    assert lines[0]["response"]["result"]["content"][0]["text"] == "mail [EMAIL_1]"


def test_the_replay_bounds_each_fixture_run_by_the_runs_timeout(tmp_path, monkeypatch):
    """--timeout reaches the pipeline replay (it once kept its own 3 s)."""
    from conformance import options
    from conformance.core.roles import GATEWAY
    from conformance.gateway import record as gateway_record

    (tmp_path / "mcpx_hanging_pipeline.py").write_text(
        "import asyncio\n\n\nclass Pipeline:\n    async def process_response(self, request, response):\n"
        "        await asyncio.sleep(60)\n\n\ndef factory(plugins):\n    return Pipeline()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    run = options.Run(GATEWAY, {"command": None, "adapter": "mcpx_hanging_pipeline:factory", "timeout": 0.4})
    rec = gateway_record.record_run(run, [gp.PROFILE], set(), None)[gp.PROFILE]
    assert any("no outcome within 0.4 s" in (fx.error or "") for fx in rec.exchanges.values()), rec.fatal
