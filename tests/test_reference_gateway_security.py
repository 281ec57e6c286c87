"""The reference gateway's security properties (issue 11), over real subprocesses: allowlist enforced before
forwarding, minimal upstream environment, unambiguous prefixes, an owner-only audit log, exit on stdin EOF,
redaction of every place text reaches the client, and the HTTP front's Host/Origin, body and session limits."""

from __future__ import annotations

import json
import os
import shlex
import stat
import subprocess
import sys
import textwrap

import anyio
import pytest

from conformance.gateway.launch import UPSTREAM_SCRIPT
from conformance.targets import TargetSpec
from reference_servers.gateway.pipeline import build_pipeline
from reference_servers.gateway.proxy import load_config

PY = sys.executable
INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}


def write_config(tmp_path, upstreams: dict, plugins: list | None = None):
    path = tmp_path / "gateway.json"
    path.write_text(json.dumps({"upstreams": upstreams, "plugins": plugins or []}))
    return path


def upstream_spec(log, env: dict | None = None) -> dict:
    spec = {"command": shlex.join([PY, str(UPSTREAM_SCRIPT), "--log", str(log)])}
    if env:
        spec["env"] = env
    return spec


async def session(config, calls, env: dict | None = None) -> list:
    """Open the gateway over stdio, initialize, then run each (method, params) in order; the exchanges."""
    spec = TargetSpec("stdio", command=shlex.join([PY, "-m", "reference_servers.gateway", "--config", str(config)]),
                      env=env or {}, request_timeout=20)
    out = []
    async with spec.connect() as conn:
        init = await conn.request("initialize", INIT)
        assert init.has_result, init.outcome_text()
        await conn.notify("notifications/initialized")
        for method, params in calls:
            out.append(await conn.request(method, params))
    return out


def upstream_methods(log) -> list:
    return [(m.get("method"), (m.get("params") or {}).get("name")) for m in map(json.loads, log.read_text().splitlines())]


# -- A: the allowlist refuses before forwarding ---------------------------------------------------------------

def test_allowlist_refuses_a_call_before_it_reaches_the_upstream(tmp_path):
    log = tmp_path / "upstream.jsonl"
    config = write_config(tmp_path, {"up": upstream_spec(log)},
                          [{"plugin": "tool_allowlist", "name": "allow",
                            "tools": ["conformance_echo", "conformance_side_effects"]}])
    blocked, count = anyio.run(session, config, [("tools/call", {"name": "conformance_gated_ok", "arguments": {}}),
                                                 ("tools/call", {"name": "conformance_side_effects", "arguments": {}})])
    assert blocked.response["error"]["message"] == \
        "blocked by the gateway: [allow] tool 'conformance_gated_ok' is not on the allowlist"
    assert count.result["content"][0]["text"] == "0"  # the gated tool's body never ran
    assert ("tools/call", "conformance_gated_ok") not in upstream_methods(log)


# -- B: upstreams get a minimal environment --------------------------------------------------------------------

def test_upstreams_do_not_inherit_the_gateways_secrets(tmp_path):
    dump = tmp_path / "env.json"
    wrapper = tmp_path / "wrapper.py"
    wrapper.write_text(textwrap.dedent(f"""
        import json, os, sys
        open({str(dump)!r}, "w").write(json.dumps(dict(os.environ)))
        os.execv(sys.executable, [sys.executable, {str(UPSTREAM_SCRIPT)!r}, "--log", {str(tmp_path / 'u.jsonl')!r}])
    """))
    config = write_config(tmp_path, {"up": {"command": shlex.join([PY, str(wrapper)]), "env": {"UPSTREAM_OWN": "yes"}}})
    (echo,) = anyio.run(session, config, [("tools/call", {"name": "conformance_echo", "arguments": {"text": "x"}})],
                        {"OPENAI_API_KEY": "sk-planted-secret"})
    assert echo.has_result
    seen = json.loads(dump.read_text())
    assert "OPENAI_API_KEY" not in seen and "sk-planted-secret" not in json.dumps(seen)
    assert seen["UPSTREAM_OWN"] == "yes" and "PATH" in seen


# -- E: prefixes, audit log mode, stdin EOF ---------------------------------------------------------------------

def test_colliding_prefixes_are_refused(tmp_path):
    config = write_config(tmp_path, {"a": {"command": "x"}, "a_": {"command": "y"}})
    with pytest.raises(ValueError, match=r"'a_' must not end with '_'.*collides with upstream 'a'"):
        load_config(str(config))
    result = subprocess.run([PY, "-m", "reference_servers.gateway", "--config", str(config)],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 2 and "collides" in result.stderr and "Traceback" not in result.stderr


def test_audit_log_is_created_owner_only(tmp_path):
    path = tmp_path / "audit.jsonl"
    pipeline = build_pipeline([{"plugin": "audit_log", "name": "log", "path": str(path)}])
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x"}}
    anyio.run(pipeline.process_response, request, {"jsonrpc": "2.0", "id": 1, "result": {}})
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_stdio_gateway_exits_when_its_client_closes_stdin(tmp_path):
    config = write_config(tmp_path, {"up": upstream_spec(tmp_path / "u.jsonl")})
    proc = subprocess.Popen([PY, "-m", "reference_servers.gateway", "--config", str(config)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        proc.stdin.write((json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT}) + "\n").encode())
        proc.stdin.flush()
        assert b'"result"' in proc.stdout.readline()
        proc.stdin.close()
        assert proc.wait(timeout=15) == 0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, 9)
            proc.wait()


# -- D: redaction covers every way text reaches the client ------------------------------------------------------

LEAKY_UPSTREAM = '''
import json, sys
EMAIL = "ann@example.com"
def send(m):
    sys.stdout.write(json.dumps(m) + "\\n"); sys.stdout.flush()
for line in sys.stdin:
    m = json.loads(line)
    method, rid = m.get("method"), m.get("id")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": "2025-11-25", "capabilities": {"tools": {},
              "logging": {}}, "serverInfo": {"name": "leaky", "version": "0"}}})
    elif method == "tools/call" and m["params"]["name"] == "leak":
        send({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "log " + EMAIL}})
        send({"jsonrpc": "2.0", "id": "s1", "method": "sampling/createMessage", "params": {"maxTokens": 5,
              "messages": [{"role": "user", "content": {"type": "text", "text": "ask " + EMAIL}}]}})
        send({"jsonrpc": "2.0", "id": "e1", "method": "elicitation/create", "params": {"message": "confirm " + EMAIL,
              "requestedSchema": {"type": "object", "properties": {}}}})
        send({"jsonrpc": "2.0", "id": rid, "result": {
              "content": [{"type": "text", "text": "text " + EMAIL},
                          {"type": "resource", "resource": {"uri": "file:///a.txt", "mimeType": "text/plain",
                                                            "text": "resource " + EMAIL}}],
              "structuredContent": {"owner": {"email": EMAIL}}}})
    elif method == "tools/call":
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": "no such user " + EMAIL,
              "data": {"who": EMAIL}}})
    elif rid is not None and method is not None:
        send({"jsonrpc": "2.0", "id": rid, "result": {}})
'''


def test_redaction_covers_notifications_requests_resources_structured_content_and_errors(tmp_path):
    script = tmp_path / "leaky.py"
    script.write_text(LEAKY_UPSTREAM)
    config = write_config(tmp_path, {"up": {"command": shlex.join([PY, str(script)])}},
                          [{"plugin": "pii_redaction", "name": "pii"}])

    async def go():
        spec = TargetSpec("stdio", command=shlex.join([PY, "-m", "reference_servers.gateway", "--config", str(config)]),
                          env={}, request_timeout=20)
        async with spec.connect() as conn:
            assert (await conn.request("initialize", INIT)).has_result
            leak = await conn.request("tools/call", {"name": "leak", "arguments": {}})
            failed = await conn.request("tools/call", {"name": "other", "arguments": {}})
            await anyio.sleep(0.5)  # the server-to-client requests are answered by the suite's connection
            return leak, failed, [e.message for e in conn.wire if e.direction == "in" and e.message]

    leak, failed, received = anyio.run(go)
    everything = json.dumps(received)
    assert "ann@example.com" not in everything, everything
    methods = {m.get("method") for m in received}
    assert {"notifications/message", "sampling/createMessage", "elicitation/create"} <= methods
    result = leak.result
    assert result["content"][1]["resource"] == {"uri": "file:///a.txt", "mimeType": "text/plain",
                                                "text": "resource [EMAIL_1]"}
    assert result["structuredContent"] == {"owner": {"email": "[EMAIL_1]"}}
    assert failed.response["error"]["message"] == "no such user [EMAIL_1]"


# -- C: the HTTP front ---------------------------------------------------------------------------------------------

def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is gone for our purpose: it no longer runs.
    with open(f"/proc/{pid}/stat") as fh:
        return fh.read().split(") ")[-1][0] != "Z"


def wait_for(condition, timeout: float = 15.0) -> bool:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return False


@pytest.fixture
def http_gateway(tmp_path):
    """Start the gateway over HTTP in front of an upstream that records its pid; yields (url, pids file, start)."""
    from conformance.gateway.launch import free_port

    pids = tmp_path / "pids"
    wrapper = tmp_path / "wrapper.py"
    wrapper.write_text(textwrap.dedent(f"""
        import os, sys
        open({str(pids)!r}, "a").write(f"{{os.getpid()}}\\n")
        os.execv(sys.executable, [sys.executable, {str(UPSTREAM_SCRIPT)!r}, "--log", {str(tmp_path / 'u.jsonl')!r}])
    """))
    config = write_config(tmp_path, {"up": {"command": shlex.join([PY, str(wrapper)])}})
    procs = []

    def start(*flags: str) -> str:
        port = free_port()
        proc = subprocess.Popen([PY, "-m", "reference_servers.gateway", "--config", str(config), "--http", str(port),
                                 *flags], stderr=subprocess.DEVNULL, start_new_session=True)
        procs.append(proc)
        import httpx

        url = f"http://127.0.0.1:{port}/mcp"
        assert wait_for(lambda: _listening(httpx, url)), "gateway did not listen"
        return url

    yield start, pids
    for proc in procs:
        os.killpg(proc.pid, 9)
        proc.wait()


def _listening(httpx, url) -> bool:
    try:
        httpx.get(url, timeout=1)
        return True
    except httpx.TransportError:
        return False


HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
INIT_BODY = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT})


def started_pids(pids) -> list[int]:
    return [int(x) for x in pids.read_text().split()] if pids.exists() else []


def test_http_refuses_foreign_host_and_origin_and_big_bodies_before_starting_upstreams(http_gateway):
    import httpx

    start, pids = http_gateway
    url = start("--max-body", "2000")
    port = url.split(":")[2].split("/")[0]
    assert httpx.post(url, content=INIT_BODY, headers={**HEADERS, "host": f"evil.example:{port}"}).status_code == 421
    assert httpx.post(url, content=INIT_BODY, headers={**HEADERS, "origin": "http://evil.example"}).status_code == 403
    big = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {**INIT, "pad": "x" * 5000}})
    assert httpx.post(url, content=big, headers=HEADERS).status_code == 413
    assert started_pids(pids) == []  # none of them cost an upstream process
    ok = httpx.post(url, content=INIT_BODY, headers={**HEADERS, "origin": f"http://localhost:{port}"})
    assert ok.status_code == 200 and ok.headers.get("mcp-session-id")


def test_http_session_end_stops_its_upstreams_on_delete_and_on_idle(http_gateway):
    import httpx

    start, pids = http_gateway
    url = start("--idle-timeout", "2")
    sid = httpx.post(url, content=INIT_BODY, headers=HEADERS).headers["mcp-session-id"]
    (first,) = started_pids(pids)
    assert pid_alive(first)
    assert httpx.delete(url, headers={"mcp-session-id": sid}).status_code in (200, 204)
    assert wait_for(lambda: not pid_alive(first)), "DELETE left the upstream running"

    httpx.post(url, content=INIT_BODY, headers=HEADERS)  # then abandoned: no DELETE
    second = started_pids(pids)[1]
    assert wait_for(lambda: not pid_alive(second)), "an idle session kept its upstream"
