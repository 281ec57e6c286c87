"""Gateway transparency: the reference gateway passes every check, and every check can fail.

The broken proxy (tests/gateway/broken_proxy.py) is an SDK-free pass-through with one flaw per mode;
each mode must fail exactly the checks it names. Proxies that hang or drop the connection must end
within the request timeout with a reason, leaving no process behind.
"""

import json
import os
import shlex
import sys
import time
import uuid
from pathlib import Path

import anyio
import pytest

from conformance.core.model import REGISTRY
from conformance.core.runner import evaluate
from conformance.gateway.launch import background, upstream_command
from conformance.server import record as server_record
from conformance.targets import TargetSpec
from conformance.targets.peerkit import free_port
from tests.gateway.broken_proxy import MUTANTS, VARIANTS
from tests.helpers import (
    PY,
    ROOT,
    SERVER_CHECKS,
    TRANSPARENCY_CHECKS,
    broken_proxy,
    gateway_verdicts,
    not_ok,
    reference_gateway,
    server_verdicts,
)
from tests.test_interrupt import processes_with

TIMEOUT = 2.0


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_upstream_fixture_server_passes_every_server_check(transport):
    # The upstream must be correct for gateway verdicts to mean anything: judge it as a server first, as the
    # gateway role runs it (with a run mark: every answer marked, every optional field sent).
    if transport == "stdio":
        verdicts = server_verdicts(TargetSpec("stdio", command=f"{PY} -m conformance.gateway.upstream --run mcpx-run-t"))
    else:
        port = free_port()

        async def run():
            url = f"http://127.0.0.1:{port}/mcp"
            async with background([sys.executable, "-m", "conformance.gateway.upstream", "--http", str(port),
                                   "--run", "mcpx-run-t"], None, url):
                return await server_record.record_profiles(TargetSpec("http", url=url), server_record.PROFILES, claimed=set(),
                                                    run_timeout=30)

        recordings = anyio.run(run)
        verdicts = {cid: evaluate(REGISTRY[cid], recordings[REGISTRY[cid].profile]) for cid in SERVER_CHECKS}
    assert {cid: r.reason for cid, r in verdicts.items() if r.outcome in ("fail", "warn")} == {}
    # The upstream serves every profile a gateway forwards, so only the unadvertised-method checks do not apply,
    # nor those of what it leaves out on purpose: custom hook patterns and event names, and list changes (the
    # toggle fixture, contract version 4, is not the gateway's to forward: docs/fixture-contract.md), nor the server as
    # an interceptors invoker (the guarded tools, contract version 5, are a server's own chain, not a gateway's).
    assert {cid for cid, r in verdicts.items() if r.outcome != "pass"} == {
        *(f"{p}/server/unadvertised-method-rejected" for p in ("context-middleware", "augmentation", "interceptors")),
        "interceptors/server/custom-wildcards-glob", "interceptors/server/custom-events-namespaced",
        "interceptors/server/custom-wildcards-match-as-glob",
        "augmentation/server/list-changed-notified", "augmentation/server/transient-augmentation-answers",
        *(f"interceptors/server/invoker-{slug}" for slug in ("rejects-invalid-call", "applies-mutations",
                                                              "validation-error-shape", "mutation-failure-error"))}


def test_every_transparency_check_has_a_broken_proxy():
    named = set().union(*(checks for checks, _ in MUTANTS.values() if checks))
    assert sorted(named) == TRANSPARENCY_CHECKS
    assert len(TRANSPARENCY_CHECKS) == 25


@pytest.mark.parametrize("how", ["stdio", "http-upstream", "http-gateway"])
def test_reference_gateway_passes_every_check(how):
    # Over HTTP the gateway imports the SDK's transports: five of them starting at once (one per transparency
    # profile) on a loaded machine take longer than the default 5 s to answer initialize. A bound, not a measure.
    if how == "http-gateway":
        verdicts = gateway_verdicts(reference_gateway("--http", "{port}"), url="http://127.0.0.1:{port}/mcp",
                                    upstream="http", timeout=20)
    else:
        verdicts = gateway_verdicts(reference_gateway(), upstream="http" if how == "http-upstream" else "stdio",
                                    timeout=20)
    assert not_ok(verdicts) == {}
    assert {r.outcome for r in verdicts.values()} == {"pass"}


# A Python with mcp 1.x installed (the project need not be): the gateway's raw forwarding must not depend
# on the SDK's major version.
MCP1_PYTHON = os.environ.get("MCPX_MCP1_PYTHON", "")


@pytest.mark.skipif(not Path(MCP1_PYTHON).is_file(), reason=f"no mcp 1.x Python at {MCP1_PYTHON} (MCPX_MCP1_PYTHON)")
def test_reference_gateway_on_mcp_1x_passes_every_check():
    verdicts = gateway_verdicts(f"{shlex.quote(MCP1_PYTHON)} -m reference_servers.gateway --http {{port}}",
                                url="http://127.0.0.1:{port}/mcp", env={"PYTHONPATH": str(ROOT)})
    assert not_ok(verdicts) == {}


def test_reference_gateway_with_several_upstreams_prefixes_and_routes(tmp_path):
    # Two upstreams: the suite's (from the environment) and a plain one; names come back as NAME__fixture.
    config = tmp_path / "gateway.json"
    plain = upstream_command(tmp_path / "plain.jsonl", "--plain")
    config.write_text(json.dumps({"upstreams": {"fixture": {"command": "$MCPX_UPSTREAM_COMMAND"},
                                                "plain": {"command": plain}}}))
    verdicts = gateway_verdicts(reference_gateway("--config", shlex.quote(str(config))))
    assert not_ok(verdicts) == {}
    reason = verdicts["preprocessor-tools/gateway/flag-passes-through"].reason
    assert "fixture__conformance_memories" in reason


async def _call_through(command: str, env: dict) -> dict:
    async with TargetSpec("stdio", command=command, env=env, timeout=10).connect() as conn:
        await conn.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                          "clientInfo": {"name": "t", "version": "0"}})
        await conn.notify("notifications/initialized")
        listed = await conn.request("tools/list", {})
        blocked = await conn.request("tools/call", {"name": "conformance_memories", "arguments": {"query": "q"}})
        allowed = await conn.request("tools/call", {"name": "conformance_echo", "arguments": {"text": "hi"}})
        return {"listed": listed.result, "blocked": blocked.response, "allowed": allowed.result}


def test_reference_gateway_applies_the_plugin_pipeline(tmp_path):
    config = tmp_path / "gateway.json"
    config.write_text(json.dumps({"plugins": [{"plugin": "tool_allowlist", "name": "allow", "tools": ["conformance_echo"]}]}))
    env = {"MCPX_UPSTREAM_COMMAND": upstream_command(tmp_path / "up.jsonl")}
    got = anyio.run(_call_through, reference_gateway("--config", shlex.quote(str(config))), env)
    assert [t["name"] for t in got["listed"]["tools"]] == ["conformance_echo"]
    assert got["blocked"]["error"]["message"] == "blocked by the gateway: [allow] tool 'conformance_memories' is not on the allowlist"
    assert got["allowed"]["content"] == [{"type": "text", "text": "hi"}]


def test_unbroken_proxy_passes_every_check(doubles_env):
    assert not_ok(gateway_verdicts(broken_proxy(), timeout=TIMEOUT, env=doubles_env)) == {}


@pytest.mark.parametrize("mode", sorted(m for m, (checks, _) in MUTANTS.items() if checks is not None))
def test_broken_proxy_fails_exactly_its_checks(mode, doubles_env):
    verdicts = gateway_verdicts(broken_proxy(mode), timeout=TIMEOUT, env=doubles_env)
    assert set(not_ok(verdicts)) == MUTANTS[mode][0], not_ok(verdicts)
    for cid in MUTANTS[mode][0]:
        assert verdicts[cid].reason and "internal error" not in verdicts[cid].reason


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_allowed_variant_passes_every_check(variant, doubles_env):
    """The reverse of a broken proxy: a reading the sources allow (a gateway that pages lists), so every check
    passes, the ones the reading touches included."""
    touched, _ = VARIANTS[variant]
    verdicts = gateway_verdicts(f"{broken_proxy()} --variant {variant}", timeout=TIMEOUT, env=doubles_env)
    assert not_ok(verdicts) == {}
    assert {cid: verdicts[cid].outcome for cid in touched} == {cid: "pass" for cid in touched}


def test_a_list_cut_at_the_page_cap_is_named_through_a_gateway(monkeypatch):
    from conformance.client import session

    monkeypatch.setattr(session, "MAX_PAGES", 2)
    verdicts = gateway_verdicts(f"{broken_proxy()} --variant paged-lists", timeout=TIMEOUT)
    reason = verdicts["execution-requirements/gateway/requirements-pass-through"].reason or ""
    assert "does not list the upstream's tool" in reason and "reads at most 2 pages of a list" in reason, reason


def test_clean_refusal_skips_the_comparisons_with_a_reason(doubles_env):
    verdicts = gateway_verdicts(broken_proxy("refuse-extensions-cleanly"), timeout=TIMEOUT, env=doubles_env)
    skipped = {cid: r.reason for cid, r in verdicts.items() if r.outcome == "skip"}
    assert set(skipped) == {"context-middleware/gateway/invoke-every-content-type-unchanged",
                            "context-middleware/gateway/invoke-params-arrive-unchanged",
                            "augmentation/gateway/augment-every-content-type-unchanged",
                            "augmentation/gateway/augment-params-arrive-unchanged",
                            "interceptors/gateway/list-passes-through",
                            "interceptors/gateway/invoke-results-unchanged",
                            "interceptors/gateway/invoke-params-arrive-unchanged",
                            *(f"{p}/gateway/optional-fields-arrive-unchanged"
                              for p in ("context-middleware", "augmentation", "interceptors"))}
    assert all("refuses its methods" in reason for reason in skipped.values())


@pytest.mark.parametrize("mode, fragment", [
    ("drop-connection", "server closed stdout (exit code 3; stderr ends: broken proxy: dropping the connection"),
    ("hang-middleware-invoke", "no response to middleware/invoke within 2 s"),
])
def test_drop_and_hang_end_in_bound_with_reasons_and_nothing_left(mode, fragment):
    marker = f"gw-{uuid.uuid4().hex}"
    started = time.monotonic()
    verdicts = gateway_verdicts(f"{broken_proxy(mode)} --marker {marker}", timeout=TIMEOUT)
    elapsed = time.monotonic() - started
    assert elapsed < 2 * TIMEOUT + 5, f"{mode} took {elapsed:.1f} s"
    reasons = [r.reason for r in verdicts.values() if r.outcome == "fail"]
    assert reasons and all("internal error" not in r for r in reasons)
    assert any(fragment in r for r in reasons), reasons
    time.sleep(0.3)
    assert processes_with(marker) == []


@pytest.mark.parametrize("command, fragment", [
    ("/nonexistent/gateway", "cannot start"),
    (f"{PY} -c 'import sys; sys.exit(4)'", "exit code 4"),
    (f"{PY} -c 'import time; time.sleep(60)'", "no response to initialize within 2 s"),
])
def test_gateway_that_cannot_serve_fails_every_check_with_a_reason(command, fragment):
    started = time.monotonic()
    verdicts = gateway_verdicts(command, timeout=TIMEOUT)
    assert time.monotonic() - started < 2 * TIMEOUT + 5
    assert {r.outcome for r in verdicts.values()} == {"fail"}
    assert all(fragment in r.reason for r in verdicts.values()), {r.reason for r in verdicts.values()}


def test_http_gateway_that_never_listens_is_unavailable():
    verdicts = gateway_verdicts(f"{shlex.quote(sys.executable)} -c 'import sys; sys.exit(5)'",
                                url="http://127.0.0.1:{port}/mcp", timeout=TIMEOUT)
    assert all("exited (exit code 5) before listening" in r.reason for r in verdicts.values())
