"""The reference server's defences (issue 11): no stall across sessions, input and time limits, Host/Origin
checks on both SDK majors and on non-loopback binds, JSON-RPC errors for unknown tools.

Each test runs the real server in a subprocess, over stdio or Streamable HTTP on loopback. The mcp 1.x variants
run when MCPX_MCP1_PYTHON names an interpreter with mcp 1.x and this
package installed (`uv venv /tmp/v1 && VIRTUAL_ENV=/tmp/v1 uv pip install -e '.[reference]' 'mcp==1.30.0'
'pydantic<2.14'`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import anyio
import httpx
import pytest

from conformance.client.session import PROTOCOL_VERSION
from conformance.targets import TargetSpec
from conformance.targets.peerkit import free_port
from tests.helpers import ROOT, reference_http_server

MCP1_PYTHON = os.environ.get("MCPX_MCP1_PYTHON", "")
PYTHONS = [pytest.param(sys.executable, id="installed-mcp"),
           pytest.param(MCP1_PYTHON, id="mcp1", marks=pytest.mark.skipif(
               not Path(MCP1_PYTHON).is_file(), reason=f"no mcp 1.x Python at {MCP1_PYTHON} (MCPX_MCP1_PYTHON)"))]
INIT = {"protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": {"name": "security-test", "version": "0"}}
ENV = {**os.environ, "MCPX_MEMORY_STORE": ":memory:"}
# ENV plus the worker's fork server (conftest.py): the sessions below run there, a start's own behaviour (refusing
# a bind, the pipes' size) is tested on plain starts. An mcp 1.x interpreter's starter is refused and runs itself.
SERVED = dict(ENV)


@pytest.fixture(scope="module", autouse=True)
def _served_by_the_fork_server(reference_server_env):
    SERVED.update(reference_server_env)


def http_server(python: str, *args: str, host: str = "127.0.0.1"):
    return reference_http_server("--host", host, *args, python=python, env=SERVED)


def heavy_text(size: int) -> str:
    """Mixed text with PII every few words: a long but legitimate pii_redaction input."""
    words = "Call +44 20 7946 0958 or mail jane.doe@example.com about order 4111 1111 1111 1111 today".split()
    out = (" ".join(words) + " ") * (size // 90 + 1)
    return out[:size]


@pytest.mark.parametrize("python", PYTHONS)
def test_a_second_session_is_answered_while_another_runs_heavy_middleware(python):
    """Before, middleware ran on the event loop: the other session's tools/list waited for the whole call."""
    with http_server(python) as port:
        url = f"http://127.0.0.1:{port}/mcp"
        finished: dict[str, float] = {}

        async def main():
            async with TargetSpec("http", url=url, timeout=120).connect() as heavy, \
                    TargetSpec("http", url=url, timeout=120).connect() as light:
                for conn in (heavy, light):
                    assert (await conn.request("initialize", INIT)).has_result
                    await conn.notify("notifications/initialized")

                async def run_heavy():
                    ex = await heavy.request("middleware/invoke", {"name": "pii_redaction", "arguments": {},
                                                                   "context": [{"type": "text",
                                                                                "text": heavy_text(3_000_000)}]})
                    finished["heavy"] = time.monotonic()
                    assert ex.has_result, ex.outcome_text()

                async def run_light():
                    await anyio.sleep(0.3)  # the heavy call is running by now
                    ex = await light.request("tools/list", {})
                    finished["light"] = time.monotonic()
                    assert ex.has_result, ex.outcome_text()

                async with anyio.create_task_group() as tg:
                    tg.start_soon(run_heavy)
                    tg.start_soon(run_light)

        anyio.run(main)
        assert finished["light"] < finished["heavy"], "tools/list of the other session waited for the middleware"


def stdio_session(python: str, messages: list[dict], *args: str) -> dict:
    """Answers by id of one stdio session that sends `messages` after initialize."""
    lines = [{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT},
             {"jsonrpc": "2.0", "method": "notifications/initialized"}, *messages]
    proc = subprocess.Popen([python, "-m", "reference_servers.everything", *args], cwd=ROOT, env=SERVED,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    answers: dict = {}
    try:
        for line in lines:
            proc.stdin.write(json.dumps(line) + "\n")
        proc.stdin.flush()
        wanted = {m["id"] for m in lines if "id" in m}
        while wanted - set(answers):
            line = proc.stdout.readline()
            assert line, f"server ended early: {proc.stderr.read()[-2000:]}"
            message = json.loads(line)
            answers[message.get("id")] = message
    finally:
        proc.kill()
        proc.wait(timeout=10)
    return answers


@pytest.mark.parametrize("python", PYTHONS)
def test_unknown_tool_is_a_json_rpc_invalid_params_error(python):
    """MCP spec (2025-06-18 on), server/tools, Error Handling: an unknown tool is a protocol error (-32602). It was code 0."""
    answers = stdio_session(python, [{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                      "params": {"name": "no_such_tool", "arguments": {}}}])
    assert answers[1]["error"]["code"] == -32602, answers[1]
    assert "no_such_tool" in answers[1]["error"]["message"]


def test_text_over_the_size_limit_is_refused_with_a_clear_error(tmp_path):
    config = tmp_path / "limits.json"
    config.write_text(json.dumps({"limits": {"maxTextChars": 1000}}))
    answers = stdio_session(sys.executable, [
        {"jsonrpc": "2.0", "id": 1, "method": "middleware/invoke",
         "params": {"name": "pii_redaction", "arguments": {}, "context": [{"type": "text", "text": "x" * 1001}]}},
        {"jsonrpc": "2.0", "id": 2, "method": "middleware/invoke",
         "params": {"name": "pii_redaction", "arguments": {}, "context": [{"type": "text", "text": "x" * 1000}]}},
    ], "--config", str(config))
    assert answers[1]["error"]["code"] == -32602
    assert "1000" in answers[1]["error"]["message"] and answers[1]["error"]["data"]["limit"] == "maxTextChars"
    assert "result" in answers[2]


def test_middleware_over_the_time_limit_is_answered_with_an_error(tmp_path):
    config = tmp_path / "limits.json"
    config.write_text(json.dumps({"limits": {"maxSeconds": 0.001}}))
    answers = stdio_session(sys.executable, [
        {"jsonrpc": "2.0", "id": 1, "method": "middleware/invoke",
         "params": {"name": "pii_redaction", "arguments": {}, "context": [{"type": "text",
                                                                            "text": heavy_text(2_000_000)}]}},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ], "--config", str(config))
    assert answers[1]["error"]["code"] == -32000, answers[1]
    assert answers[1]["error"]["data"]["limit"] == "maxSeconds"
    assert "result" in answers[2]  # the session goes on


def post(port: int, headers: dict) -> httpx.Response:
    return httpx.post(f"http://127.0.0.1:{port}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                                            "params": INIT},
                      headers={"Accept": "application/json, text/event-stream", **headers}, timeout=30)


@pytest.mark.parametrize("python", PYTHONS)
def test_foreign_host_and_origin_headers_are_refused_on_loopback(python):
    """DNS rebinding: a page on evil.example resolving to 127.0.0.1 sends Host/Origin evil.example."""
    with http_server(python) as port:
        assert post(port, {"Host": "evil.example"}).status_code == 421
        assert post(port, {"Origin": "http://evil.example"}).status_code == 403
        assert post(port, {"Origin": f"http://localhost:{port}"}).status_code == 200


def test_non_loopback_bind_without_allowed_hosts_refuses_to_start():
    proc = subprocess.run([sys.executable, "-m", "reference_servers.everything", "--http", str(free_port()),
                           "--host", "0.0.0.0"], cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "allowedHosts" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("python", PYTHONS)
def test_non_loopback_bind_accepts_only_the_allowed_hosts_and_hides_the_fixtures(python):
    with http_server(python, "--allowed-host", "mcp.example.test:*", host="0.0.0.0") as port:
        assert post(port, {"Host": "127.0.0.1"}).status_code == 421
        response = post(port, {"Host": f"mcp.example.test:{port}"})
        assert response.status_code == 200
        session = response.headers.get("mcp-session-id")
        headers = {"Host": f"mcp.example.test:{port}", "Accept": "application/json, text/event-stream",
                   **({"mcp-session-id": session} if session else {})}
        version = {"mcp-protocol-version": PROTOCOL_VERSION}
        httpx.post(f"http://127.0.0.1:{port}/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                   headers={**headers, **version}, timeout=30)
        listed = httpx.post(f"http://127.0.0.1:{port}/mcp", json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                            headers={**headers, **version}, timeout=30)
        names = [t["name"] for t in sse_or_json(listed)["result"]["tools"]]
        assert names and not [n for n in names if n.startswith("conformance_")], names


def sse_or_json(response: httpx.Response) -> dict:
    if response.headers.get("content-type", "").startswith("application/json"):
        return response.json()
    for line in response.text.splitlines():
        if line.startswith("data:") and line[5:].strip():
            return json.loads(line[5:])
    raise AssertionError(response.text)


SESSION_SCRIPT = """
import json, anyio
from importlib.metadata import version
from reference_servers.everything.app import build_app
from reference_servers.sdk import adapter

app = build_app({"memoryStore": ":memory:"})
seen = {}

async def main():
    if int(version("mcp").split(".")[0]) >= 2:
        from mcp import Client
        async with Client(adapter().build_server(app), mode="legacy") as client:
            await client.call_tool("remember", {"text": "a memory"})
            seen["during"] = len(app.sessions)
    else:
        from mcp.shared.memory import create_connected_server_and_client_session
        async with create_connected_server_and_client_session(adapter().ExtensionServer(app)) as client:
            await client.call_tool("remember", {"text": "a memory"})
            seen["during"] = len(app.sessions)
    await anyio.sleep(0.1)  # the server side unwinds after the client has gone
    seen["after"] = len(app.sessions)

anyio.run(main)
print(json.dumps(seen))
"""


@pytest.mark.parametrize("python", PYTHONS)
def test_per_session_state_is_freed_when_the_session_ends(python):
    """In process, with the SDK's in-memory transport: the App's session table is empty once the client has gone."""
    proc = subprocess.run([python, "-c", SESSION_SCRIPT], cwd=ROOT, env=ENV, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {"during": 1, "after": 0}


@pytest.mark.parametrize("python", PYTHONS)
def test_stdio_pipes_hold_a_whole_1mb_message(python):
    """The server widens both stdio pipes (64 KiB by default) so that a 1 MB call crosses each in one write."""
    fcntl = pytest.importorskip("fcntl")
    if not hasattr(fcntl, "F_GETPIPE_SZ") or int(Path("/proc/sys/fs/pipe-max-size").read_text()) < 1 << 20:
        pytest.skip("pipes cannot be widened to 1 MiB here")
    proc = subprocess.Popen([python, "-m", "reference_servers.everything"], cwd=ROOT, env=ENV, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        def call(rid: int, method: str, params: dict) -> dict:
            proc.stdin.write((json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}) + "\n").encode())
            proc.stdin.flush()
            return json.loads(proc.stdout.readline())

        assert "result" in call(1, "initialize", INIT)
        assert fcntl.fcntl(proc.stdin.fileno(), fcntl.F_GETPIPE_SZ) == 1 << 20
        assert fcntl.fcntl(proc.stdout.fileno(), fcntl.F_GETPIPE_SZ) == 1 << 20
        proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        reply = call(2, "middleware/invoke", {"name": "pii_redaction", "arguments": {},
                                              "context": [{"type": "text", "text": heavy_text(1_000_000)}]})
        assert "[EMAIL_1]" in reply["result"]["content"][0]["text"]
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdout.close()


def raw_exchange(port: int, head: str, body: bytes = b"") -> int:
    """The status line's code for a request written byte for byte (headers an HTTP client would not send)."""
    import socket

    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(head.replace("\n", "\r\n").encode() + b"\r\n" + body)
        answer = sock.recv(4096)
    return int(answer.split(b" ", 2)[1])


def smuggling_heads(port: int) -> dict[str, str]:
    """Requests whose framing or origin is ambiguous: each must get 400, before anything else judges them."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT})
    common = f"POST /mcp HTTP/1.1\nHost: 127.0.0.1:{port}\nAccept: application/json, text/event-stream\n" \
             "Content-Type: application/json\n"
    return {"content-length and transfer-encoding":
            common + f"Content-Length: {len(body)}\nTransfer-Encoding: chunked\n\n"
            f"{len(body):x}\r\n{body}\r\n0\r\n\r\n",
            "two origins": common + f"Origin: http://evil.example\nOrigin: http://localhost:{port}\n"
            f"Content-Length: {len(body)}\n\n{body}",
            "two hosts": common + f"Host: evil.example\nContent-Length: {len(body)}\n\n{body}"}


def nested_lists_body(megabytes: int = 4) -> bytes:
    unit = b"[[[[]]]],"
    lists = unit * (megabytes * 1024 * 1024 // len(unit))
    return b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":{"a":[' + \
        lists[:-1] + b"]}}}"


@pytest.mark.parametrize("python", PYTHONS)
def test_ambiguous_requests_and_unparseable_shapes_are_refused_before_parsing(python):
    """Issue 32 items 1 and 11: a body of millions of values, or nested past the limit, is 400 from its bytes;
    so are Content-Length with Transfer-Encoding and repeated Origin or Host headers."""
    with http_server(python) as port:
        for name, head in smuggling_heads(port).items():
            assert raw_exchange(port, head) == 400, name
        for body in (nested_lists_body(), b"[" * 5000 + b"]" * 5000):
            refused = httpx.post(f"http://127.0.0.1:{port}/mcp", content=body, timeout=60,
                                 headers={"Accept": "application/json, text/event-stream",
                                          "Content-Type": "application/json"})
            assert refused.status_code == 400 and refused.json()["error"]["code"] == -32600, refused.text[:200]
        assert post(port, {}).status_code == 200  # and an ordinary request is served
