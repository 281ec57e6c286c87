"""Gateways nobody here wrote, in front of the suite's upstream: Gatekit 0.3.0, mcp-proxy 0.13.0
(Python), supergateway 4.0.0 and mcp-proxy 6.7.19 (npm), Lasso's mcp-gateway 1.2.1 and IBM
ContextForge 1.0.7.

Pinned findings (ecosystem/gateways/FINDINGS.md), one expectation per run: which checks fail, with a
phrase of each reason, and which skip; every other check passes. An upstream fix flips a visible
assertion here. In short: Gatekit and mcp-proxy (Python) carry the Tool-level fields and refuse the
context-middleware and augmentation methods with the wrong code; supergateway bridging a stdio
upstream to Streamable HTTP passes all 15, but bridging an HTTP upstream to stdio drops the two
capabilities while still forwarding their methods; mcp-proxy (npm) refuses cleanly but strips
`preprocessor` and `execution.requirements` from tools; Lasso does both wrongs; ContextForge renames
every tool past recognition and refuses with the wrong code. ContextForge's plugin pipeline (CPEX),
replayed through ecosystem/gateways/contextforge/adapter.py, fails a pinned set.

They conflict with the project's SDK (or are Node packages), so they live in their own prefixes:
`nox -s gateway_third_party` builds them and sets the variables; elsewhere point MCPX_GATEKIT at
`gatekit-gateway`, MCPX_MCP_PROXY at the Python `mcp-proxy`, MCPX_SUPERGATEWAY at `supergateway`,
MCPX_MCP_PROXY_NPM at the npm `mcp-proxy` (never looked up on PATH: the two mcp-proxy share a name),
MCPX_LASSO at Lasso's `mcp-gateway`, and MCPX_CONTEXTFORGE_PYTHON at an interpreter with
mcp-contextforge-gateway. A tool that is not there skips its runs.
"""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers import PY, ROOT, gateway_verdicts, not_ok


def tool(env: str, name: str | None) -> str | None:
    candidate = os.environ.get(env)
    if candidate and Path(candidate).is_file():
        return candidate
    return shutil.which(name) if name else None


GATEKIT = tool("MCPX_GATEKIT", "gatekit-gateway")
MCP_PROXY = tool("MCPX_MCP_PROXY", "mcp-proxy")
SUPERGATEWAY = tool("MCPX_SUPERGATEWAY", "supergateway")
MCP_PROXY_NPM = tool("MCPX_MCP_PROXY_NPM", None)
LASSO = tool("MCPX_LASSO", None)  # its `mcp-gateway` is a name other packages use too
CONTEXTFORGE_PYTHON = tool("MCPX_CONTEXTFORGE_PYTHON", None)  # an interpreter with mcp-contextforge-gateway
GATEWAYS = ROOT / "ecosystem" / "gateways"  # each one's launcher and pipeline adapter
GATEKIT_LAUNCHER = GATEWAYS / "gatekit" / "launcher.py"
LASSO_LAUNCHER = GATEWAYS / "lasso" / "launcher.py"
CONTEXTFORGE_LAUNCHER = GATEWAYS / "contextforge" / "launcher.py"
HTTP = {"url": "http://127.0.0.1:{port}/mcp"}  # the gateway serves Streamable HTTP on {port}

# How each is put in front of the upstream: (the tool, its gateway command, options of gateway_verdicts).
RUNS = {
    "gatekit-stdio": (lambda: GATEKIT, lambda: f"{PY} {GATEKIT_LAUNCHER} {GATEKIT}", {}),
    # mcp-proxy as a client: a stdio endpoint in front of the upstream served over Streamable HTTP.
    "mcp-proxy-stdio-to-http": (lambda: MCP_PROXY, lambda: f"{MCP_PROXY} --transport streamablehttp {{upstream}}",
                                {"upstream": "http"}),
    # mcp-proxy as a server: Streamable HTTP in front of the upstream on stdio.
    "mcp-proxy-http-to-stdio": (lambda: MCP_PROXY, lambda: f"{MCP_PROXY} --port {{port}} -- sh -c {{upstream}}", HTTP),
    # supergateway serving Streamable HTTP (stateless, its default, and stateful) for a stdio upstream.
    "supergateway-http-to-stdio": (
        lambda: SUPERGATEWAY,
        lambda: f"{SUPERGATEWAY} --stdio {{upstream}} --outputTransport streamableHttp --port {{port}} --logLevel none",
        HTTP),
    "supergateway-stateful-http-to-stdio": (
        lambda: SUPERGATEWAY,
        lambda: (f"{SUPERGATEWAY} --stdio {{upstream}} --outputTransport streamableHttp --stateful --port {{port}} "
                 "--logLevel none"),
        HTTP),
    # supergateway as a client: a stdio endpoint in front of the upstream served over Streamable HTTP.
    "supergateway-stdio-to-http": (lambda: SUPERGATEWAY,
                                   lambda: f"{SUPERGATEWAY} --streamableHttp {{upstream}} --logLevel none",
                                   {"upstream": "http"}),
    # mcp-proxy (npm) only serves HTTP for a stdio server; the suite speaks Streamable HTTP to it.
    "mcp-proxy-npm-http-to-stdio": (lambda: MCP_PROXY_NPM,
                                    lambda: f"{MCP_PROXY_NPM} --port {{port}} --server stream -- sh -c {{upstream}}",
                                    HTTP),
    # Lasso's gateway, stdio, without plugins and with its `basic` guardrail (same findings).
    "lasso-stdio": (lambda: LASSO, lambda: f"{PY} {LASSO_LAUNCHER} {LASSO}", {}),
    "lasso-basic-stdio": (lambda: LASSO, lambda: f"{PY} {LASSO_LAUNCHER} {LASSO} -p basic", {}),
    # ContextForge (SQLite, no Redis) in front of the upstream over Streamable HTTP, reached through its own
    # stdio bridge; it takes 20-30 s to start, hence the long first-request and per-profile bounds.
    "contextforge-stdio-to-http": (lambda: CONTEXTFORGE_PYTHON,
                                   lambda: f"{PY} {CONTEXTFORGE_LAUNCHER} {CONTEXTFORGE_PYTHON}",
                                   {"upstream": "http", "timeout": 90.0, "run_timeout": 240.0}),
}

CAPABILITIES = ("context-middleware/gateway/capability-forwarded-or-refused",
                "augmentation/gateway/capability-forwarded-or-refused",
                "interceptors/gateway/capability-forwarded-or-refused")
TOOL_FIELDS = {"preprocessor-tools/gateway/flag-passes-through": 'without "preprocessor": true',
               "execution-requirements/gateway/requirements-pass-through": "arrive with different requirements"}
# Its mcp 1.x Tool model keeps neither a tool's _meta nor a key it does not know (nor execution: TOOL_FIELDS).
TOOL_META = {f"{p}/gateway/optional-fields-arrive-unchanged": "_meta is missing"
             for p in ("preprocessor-tools", "execution-requirements")}
REFUSED = {"context-middleware/gateway/invoke-every-content-type-unchanged",
           "context-middleware/gateway/invoke-params-arrive-unchanged",
           "augmentation/gateway/augment-every-content-type-unchanged",
           "augmentation/gateway/augment-params-arrive-unchanged",
           "context-middleware/gateway/optional-fields-arrive-unchanged",
           "augmentation/gateway/optional-fields-arrive-unchanged"}
INTERCEPTORS_REFUSED = {"interceptors/gateway/invoke-params-arrive-unchanged",
                        "interceptors/gateway/invoke-results-unchanged", "interceptors/gateway/list-passes-through",
                        "interceptors/gateway/optional-fields-arrive-unchanged"}


def refuses_with(code: str) -> dict:
    return {cid: f"code {code} instead of -32601" for cid in CAPABILITIES}


# Refusing the methods, a gateway has the interceptors checks that need them skipped too.
REFUSED_ALL = REFUSED | INTERCEPTORS_REFUSED


# What each run fails (check -> a phrase of its reason) and skips, as found; the rest pass.
EXPECTED = {
    "gatekit-stdio": (refuses_with("-32004"), REFUSED_ALL),
    "mcp-proxy-stdio-to-http": (refuses_with("-32602"), REFUSED_ALL),
    "mcp-proxy-http-to-stdio": (refuses_with("-32602"), REFUSED_ALL),
    "supergateway-http-to-stdio": ({}, set()),
    "supergateway-stateful-http-to-stdio": ({}, set()),
    # Its SDK client parses the upstream's initialize result, dropping capabilities it does not know,
    # while every other request is relayed untyped: the methods still work.
    # The interceptors capability, under `extensions`, survives.
    "supergateway-stdio-to-http": ({cid: "the upstream's capability was dropped" for cid in CAPABILITIES[:2]}, set()),
    # Refuses the middleware methods cleanly (-32601), but its SDK's Tool schema strips the fields it does not
    # know (an unknown key too; `_meta`, `title` and `execution.taskSupport` survive); it passes the interceptors
    # capability (under `extensions`) on and then refuses its methods (-32601).
    "mcp-proxy-npm-http-to-stdio": ({**TOOL_FIELDS,
                                     **{f"{p}/gateway/optional-fields-arrive-unchanged": "mcpxUnknownField is missing"
                                        for p in ("preprocessor-tools", "execution-requirements")},
                                     "interceptors/gateway/optional-fields-arrive-unchanged": "never received",
                                     "interceptors/gateway/capability-forwarded-or-refused":
                                         "is advertised, but interceptors/list was answered with an error",
                                     "interceptors/gateway/list-passes-through": "returned no list",
                                     "interceptors/gateway/invoke-params-arrive-unchanged": "never received",
                                     "interceptors/gateway/invoke-results-unchanged": "Method not found"}, REFUSED),
    "lasso-stdio": ({**refuses_with("-32602"), **TOOL_FIELDS, **TOOL_META}, REFUSED_ALL),
    "lasso-basic-stdio": ({**refuses_with("-32602"), **TOOL_FIELDS, **TOOL_META}, REFUSED_ALL),
    # It re-lists tools as `<gateway>-<slug>` with every `_` turned into `-` (fixture-conformance-memories),
    # so no upstream tool is found under any prefix; its mcp 1.x server refuses the methods with -32602.
    "contextforge-stdio-to-http": ({**refuses_with("-32602"),
                                    **{cid: "does not list the upstream's tool" for cid in (
                                        "preprocessor-tools/gateway/flag-passes-through",
                                        "preprocessor-tools/gateway/tool-calls-pass-through",
                                        "execution-requirements/gateway/requirements-pass-through",
                                        "execution-requirements/gateway/satisfied-call-passes",
                                        "execution-requirements/gateway/unmet-error-passes-through",
                                        "preprocessor-tools/gateway/optional-fields-arrive-unchanged",
                                        "execution-requirements/gateway/optional-fields-arrive-unchanged")}},
                                   REFUSED_ALL),
}


@pytest.mark.parametrize("run", sorted(RUNS))
def test_third_party_gateway_findings(run):
    installed, command, options = RUNS[run]
    if not installed():
        pytest.skip(f"{run}: the tool is not installed (see the module docstring)")
    verdicts = gateway_verdicts(command(), **{"timeout": 10.0, **options})
    failing, skipped = EXPECTED[run]
    found = not_ok(verdicts)
    assert set(found) == set(failing), found
    assert all(failing[cid] in reason for cid, reason in found.items()), found
    assert {cid for cid, r in verdicts.items() if r.outcome == "skip"} == skipped
    assert {r.outcome for cid, r in verdicts.items() if cid not in set(failing) | skipped} == {"pass"}


# ------------------------------------------------------------------------------------------ ContextForge's pipeline

# What ContextForge 1.0.7 (CPEX 0.1.3) does differently, through ecosystem/gateways/contextforge/adapter.py,
# per mapping of the fixture kinds to CPEX modes (slug -> a phrase of its reason):
# - ascending-priority: modes run in a fixed order (SEQUENTIAL, TRANSFORM, AUDIT), priority orders only
#   within one, so a middleware (TRANSFORM) at 10 runs after a security plugin (SEQUENTIAL) at 20;
# - default-priority: the default is 100, not 50;
# - priority-range-enforced: any integer is accepted (101, -1);
# - middleware-before-security-on-ties (BEHAVIOR): SEQUENTIAL first, or, all SEQUENTIAL, definition order;
# - auditors-after-pipeline: a block raises out of the SEQUENTIAL phase, so AUDIT plugins never see it;
# - auditors-cannot-modify: payload isolation copies one level deep, so an auditor's in-place edit of a
#   content block reaches the response the gateway delivers.
CPEX_COMMON = {"default-priority": "stages ran ['q-fifty', 'p-default']",
               "priority-range-enforced": "the pipeline was built and ran",
               "auditors-after-pipeline": "audit records came from []",
               "auditors-cannot-modify": "the final response differs",
               "middleware-before-security-on-ties": "stages ran"}
CONTEXTFORGE_VIOLATED = {
    "factory": {**CPEX_COMMON, "ascending-priority": "stages ran ['basic-pii-filter', 'tool-manager']"},
    "factory_all_sequential": CPEX_COMMON,
}


@pytest.mark.parametrize("factory", sorted(CONTEXTFORGE_VIOLATED))
def test_contextforge_pipeline_findings(factory):
    python = CONTEXTFORGE_PYTHON
    if python is None:
        pytest.skip("MCPX_CONTEXTFORGE_PYTHON names no interpreter with mcp-contextforge-gateway==1.0.7.post20260921 "
                    "(it pins mcp<2: nox -s gateway_third_party installs it in its own virtualenv)")
    proc = subprocess.run(
        [python, "-m", "conformance.gateway.replay", f"ecosystem.gateways.contextforge.adapter:{factory}"],
        capture_output=True, text=True, timeout=120, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = {r["slug"]: r for r in json.loads(proc.stdout)}
    found = {slug: r["reason"] for slug, r in results.items()
             if r["outcome"] in ("fail", "warn") or (r["outcome"] == "info" and "expected" in r)}
    expected = CONTEXTFORGE_VIOLATED[factory]
    assert set(found) == set(expected), found
    assert all(expected[slug] in reason for slug, reason in found.items()), found
    assert "[audited]" in json.dumps(results["auditors-cannot-modify"]["actual"])
    assert results["block-reason-names-plugin"]["outcome"] == "pass"
