"""mcp-hangar 2.34.4 (PyPI, MIT), the installable SEP-2624 implementation, judged three ways; findings pinned.

mcp-hangar serves interceptors beside its MCP endpoint: `GET /interceptors/list` and `POST
/interceptor/invoke` (a JSON-RPC envelope), in the PR #2624 shape once the request carries
`MCP-Interceptor-Ext: io.modelcontextprotocol/interceptors` (docs/ecosystem.md, "mcp-hangar").

1. Server role on its MCP endpoint (`/mcp`, the header sent): no interceptors capability, both methods
   -32601, so the profile is not claimed and only unadvertised-method-rejected runs (and passes).
2. Server role through ecosystem/gateways/hangar/bridge.py, which puts the two routes on an MCP connection:
   the black-box checks run on its two built-in interceptors; an invoke without payload is accepted
   (malformed-invoke-rejected fails); the fixture checks skip, hangar offers no fixtures.
3. The working group's adapter contract (ecosystem/gateways/hangar/wg_adapter.py): no WG fixture can be
   hosted (hangar's two interceptors are fixed), so all eight are skips; a fixture made of what hangar
   has shows the binding works.

mcp-hangar pins mcp 2.3.0 and a dozen services' clients, so it lives in a virtualenv of its own:
`nox -s hangar_third_party` builds it and sets MCPX_HANGAR; elsewhere point MCPX_HANGAR at its
`mcp-hangar` script. Without it the module skips.
"""

import json
import os
import sys
from pathlib import Path

import pytest

from conformance.core.model import REGISTRY
from conformance.core.roles import SERVER
from conformance.core.runner import evaluate
from conformance.server import record as server_record
from conformance.server import wg_fixtures
from conformance.targets import TargetSpec
from conformance.targets.peerkit import free_port, spawn
from tests.helpers import ROOT, not_ok

HANGAR = os.environ.get("MCPX_HANGAR")
pytestmark = pytest.mark.skipif(not (HANGAR and Path(HANGAR).is_file()),
                                reason="mcp-hangar is not installed: nox -s hangar_third_party, or set MCPX_HANGAR")
HEADER = {"MCP-Interceptor-Ext": "io.modelcontextprotocol/interceptors"}
CHECKS = sorted(c for c in REGISTRY if c.startswith("interceptors/server/"))
BRIDGE = ROOT / "ecosystem" / "gateways" / "hangar" / "bridge.py"


@pytest.fixture(scope="module")
def hangar(tmp_path_factory):
    """mcp-hangar serving Streamable HTTP on loopback with an empty fleet; its HTTP base."""
    home = tmp_path_factory.mktemp("hangar")
    (home / "config.yaml").write_text("mcp_servers: {}\n")
    port = free_port()
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home)}
    with spawn([HANGAR, "--config", str(home / "config.yaml"), "serve", "--http", "--port", str(port)],
               env=env, cwd=home, grace=5.0) as server:
        if not server.wait_listening(port, timeout=90):
            pytest.fail(f"mcp-hangar did not listen on {port}: {server.stderr_tail()}")
        yield f"http://127.0.0.1:{port}"


def verdicts(spec: TargetSpec, claimed: bool = False) -> dict:
    recordings = server_record.record_sync(spec, ["interceptors"], claimed={"interceptors"} if claimed else set(),
                                           run_timeout=120.0)
    return {cid: evaluate(REGISTRY[cid], recordings["interceptors"]) for cid in CHECKS}


def test_its_mcp_endpoint_offers_no_interceptors(hangar):
    got = verdicts(TargetSpec("http", url=f"{hangar}/mcp", header=dict(HEADER)))
    ran = {cid: r.outcome for cid, r in got.items() if r.outcome != "skip"}
    assert ran == {"interceptors/server/unadvertised-method-rejected": "pass"}
    assert "rejected with -32601" in got["interceptors/server/unadvertised-method-rejected"].reason


def test_its_interceptor_routes_through_the_bridge(hangar):
    got = verdicts(TargetSpec("stdio", command=f"{sys.executable} {BRIDGE} --url {hangar}"))
    assert not_ok(got) == {"interceptors/server/malformed-invoke-rejected":
                           "fail: an invoke without payload was answered with a result"}
    passed = {cid.split("/")[-1] for cid, r in got.items() if r.outcome == "pass"}
    assert passed == {"capability-advertised", "supported-events-cover-hooks", "list-result-valid",
                      "invoke-result-valid", "validator-does-not-modify", "unknown-interceptor-rejected",
                      "wire-messages-valid"}
    # Every other check needs a fixture (hangar's two interceptors are its own) or a hook shape hangar's do not use.
    shapes = {"custom-events-namespaced": "no listed hook names an event beyond the SEP's list",
              "custom-wildcards-glob": 'no listed hook uses a wildcard pattern other than "*"'}
    assert {cid: r.reason for cid, r in got.items() if r.outcome == "skip"
            and not cid.endswith("unadvertised-method-rejected") and "fixture" not in (r.reason or "")} \
        == {f"interceptors/server/{slug}": reason for slug, reason in shapes.items()}


def test_no_working_group_fixture_can_be_hosted(hangar, monkeypatch):
    from ecosystem.gateways.hangar import wg_adapter as hangar_wg_adapter

    monkeypatch.setenv("MCPX_HANGAR_URL", hangar)
    rec = wg_fixtures.record(hangar_wg_adapter.factory, ROOT / "tests" / "data" / "interceptor-fixtures",
                             timeout=SERVER.default_timeout)
    replays = list(rec.exchanges.values())
    assert len(replays) == 9  # the working group's eight and the suite's own session fixture
    assert all(r.lacks for r in replays), [(r.id, r.error) for r in replays]


def test_the_adapter_binds_what_hangar_has(hangar, monkeypatch, tmp_path):
    from ecosystem.gateways.hangar import wg_adapter as hangar_wg_adapter

    monkeypatch.setenv("MCPX_HANGAR_URL", hangar)
    payload = {"name": "send_report", "arguments": {"note": "quarterly figures"}}
    fixture = {
        "id": "protocol/hangar-built-in", "kind": "protocol", "requirement": "SEP-2624/invoke.validation",
        "interceptors": [{"name": "t/gate", "type": "validation", "behavior": "allow-all", "events": ["tools/call"],
                          "phases": "request"}],
        "steps": [
            {"op": "invoke", "params": {"name": "t/gate", "event": "tools/call", "phase": "request", "payload": payload},
             "expect": {"result": {"interceptor": "t/gate", "type": "validation", "phase": "request", "valid": True}}},
            {"op": "invoke", "params": {"name": "t/nobody", "event": "tools/call", "phase": "request",
                                        "payload": payload}, "expect": {"errorCode": -32602}},
        ],
        "volatile": ["durationMs"],
    }
    (tmp_path / "hangar-built-in.json").write_text(json.dumps(fixture))
    [replayed] = wg_fixtures.record(hangar_wg_adapter.factory, tmp_path, timeout=SERVER.default_timeout).exchanges.values()
    assert not replayed.lacks and wg_fixtures.fixture_failures(replayed) == [], replayed
