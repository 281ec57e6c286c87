"""The peer kit: process groups, stderr tails and the raw JSON-RPC serve loops, on real processes."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import anyio
import pytest

from conformance.targets import reaper
from conformance.targets.peerkit import (
    Group,
    RpcError,
    StderrTail,
    answer_http,
    free_port,
    group_alive,
    open_group,
    spawn,
    stderr_tail,
    stop_group,
)
from tests.helpers import alive

ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable
# A leader that starts a grandchild in its group, prints the grandchild's pid, and then sleeps.
FAMILY = ("import subprocess, sys, time; c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']);"
          " print(c.pid, flush=True); time.sleep(60)")
STUBBORN = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True); time.sleep(60)"


def _gone(pid: int, within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False


def test_stderr_tail_keeps_the_last_three_non_blank_lines():
    assert stderr_tail(b"one\n\ntwo\nthree\n  \nfour\n\n") == "two | three | four"
    assert stderr_tail(b"\xff broken\n") == "\ufffd broken"
    assert stderr_tail(b"") == ""
    assert stderr_tail(b"red \x1b[31malert\x1b[0m\n") == "red alert"


def test_free_port_is_a_port():
    assert 0 < free_port() < 65536


def test_stderr_tail_stays_bounded():
    tail = StderrTail(limit=100)
    for i in range(1000):
        tail.add(f"line {i}\n".encode())
    assert len(tail.bytes()) <= 100
    assert tail.text() == "line 997 | line 998 | line 999"


def test_group_stop_ends_grandchildren_and_unregisters():
    with spawn([PY, "-c", FAMILY], stdout=subprocess.PIPE) as group:
        grandchild = int(group.proc.stdout.readline())
        assert group.pid in reaper._groups
        assert group_alive(group.pid) and alive(grandchild)
    assert group.returncode == -signal.SIGTERM
    assert _gone(grandchild)
    assert group.pid not in reaper._groups


def test_group_kills_what_ignores_sigterm():
    group = spawn([PY, "-c", STUBBORN], stdout=subprocess.PIPE)
    assert group.proc.stdout.readline() == b"up\n"
    started = time.monotonic()
    assert group.stop(grace=0.3) == -signal.SIGKILL
    assert time.monotonic() - started < 3
    group.close()


def test_group_keeps_the_stderr_tail_of_a_crash():
    group = Group([PY, "-c", "import sys; print('a' * 20000, file=sys.stderr); sys.exit('it broke')"], tail_bytes=64)
    with group:
        assert not group.wait_listening(free_port(), timeout=10)
        assert group.returncode == 1
        assert group.stderr_tail() == "a" * (64 - len("\nit broke\n")) + " | it broke"  # the last 64 bytes only


def test_group_waits_until_listening():
    port = free_port()
    with spawn([PY, "-m", "http.server", "--bind", "127.0.0.1", str(port)]) as group:
        assert group.wait_listening(port, timeout=20)
        assert group.returncode is None


async def _line(stream) -> bytes:
    data = b""
    while not data.endswith(b"\n"):  # a pipe may hand a line over in pieces
        data += await stream.receive()
    return data


def test_async_group_stops_by_group():
    async def main():
        proc = await open_group([PY, "-c", FAMILY], stdout=subprocess.PIPE)
        assert proc.pid in reaper._groups
        grandchild = int(await _line(proc.stdout))
        code = await stop_group(proc, grace=1.0)
        await proc.aclose()
        return proc.pid, grandchild, code

    pid, grandchild, code = anyio.run(main)
    assert code == -signal.SIGTERM
    assert _gone(grandchild)
    assert pid not in reaper._groups


def test_async_stop_kills_what_ignores_sigterm():
    async def main():
        proc = await open_group([PY, "-c", STUBBORN], stdout=subprocess.PIPE)
        assert await _line(proc.stdout) == b"up\n"
        code = await stop_group(proc, grace=0.3)
        await proc.aclose()
        return code

    assert anyio.run(main) == -signal.SIGKILL


# -- the raw servers ------------------------------------------------------------------------------------

KIT_SERVER = (
    "from conformance.targets.peerkit import RpcError, serve_stdio\n"
    "def handle(m):\n"
    "    if m.get('method') == 'fail': raise RpcError(-32001, 'no', {'why': 1})\n"
    "    return [{'jsonrpc': '2.0', 'id': m.get('id'), 'result': m.get('params')}] if 'id' in m else []\n"
    "def guarded(m):\n"
    "    try: return handle(m)\n"
    "    except RpcError as e: return [e.response(m.get('id'))]\n"
    "serve_stdio(guarded)\n"
)
JUNK = "not json\n[1]\n5\n\n"
PARSE = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
INVALID = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Invalid Request: not a JSON object"}}


def _talk(argv: list[str], text: str) -> list[dict]:
    out = subprocess.run(argv, input=text, capture_output=True, text=True, timeout=30, cwd=ROOT, check=True).stdout
    return [json.loads(line) for line in out.splitlines()]


def test_serve_stdio_answers_one_line_per_message():
    sent = ('{"jsonrpc":"2.0","id":1,"method":"echo","params":{"x":1}}\n'
            '{"jsonrpc":"2.0","method":"note"}\n'
            '{"jsonrpc":"2.0","id":2,"method":"fail"}\n'
            '[{"jsonrpc":"2.0","id":3,"method":"echo"},7]\n' + JUNK)
    assert _talk([PY, "-c", KIT_SERVER], sent) == [
        {"jsonrpc": "2.0", "id": 1, "result": {"x": 1}},
        {"jsonrpc": "2.0", "id": 2, "error": {"code": -32001, "message": "no", "data": {"why": 1}}},
        {"jsonrpc": "2.0", "id": 3, "result": None}, INVALID,
        PARSE, INVALID, INVALID,
    ]


def test_the_raw_servers_answer_junk_alike(tmp_path):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"name": "s", "nonce": "n" * 12, "server": {"tools": [{"name": "echo"}]}}))
    upstream = [PY, str(ROOT / "conformance" / "gateway" / "upstream.py")]  # by path, as gateways start it
    scenario = [PY, "-m", "conformance.host.scenario_server", "--spec", str(spec), "--log", str(tmp_path / "log")]
    assert _talk(upstream, JUNK) == _talk(scenario, JUNK) == [PARSE, INVALID, INVALID]
    recorded = [json.loads(line) for line in (tmp_path / "log").read_text().splitlines()]
    assert [e.get("problem") for e in recorded[1:]] == ["not JSON", None, None]  # junk stays on the wire record


def test_rpc_error_carries_data_only_when_given():
    assert RpcError(-32602, "bad").response(4) == {"jsonrpc": "2.0", "id": 4, "error": {"code": -32602, "message": "bad"}}


def _echo(message: dict) -> list[dict]:
    return [{"jsonrpc": "2.0", "id": message["id"], "result": {}}] if "id" in message else []


@pytest.mark.parametrize(("method", "path", "body", "status", "answer"), [
    ("POST", "/mcp", b'{"jsonrpc":"2.0","id":1,"method":"ping"}', 200, {"jsonrpc": "2.0", "id": 1, "result": {}}),
    ("POST", "/mcp", b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]', 200, [{"jsonrpc": "2.0", "id": 1, "result": {}}]),
    ("POST", "/mcp", b'{"jsonrpc":"2.0","method":"notifications/initialized"}', 202, None),
    ("POST", "/mcp", b"{oops", 400, PARSE),
    ("POST", "/mcp", b"", 400, INVALID),
    ("POST", "/mcp", b"[]", 400, INVALID),
    ("POST", "/other", b"{}", 404, None),
    ("GET", "/mcp", b"", 405, None),
    ("DELETE", "/mcp", b"", 200, None),
])
def test_answer_http(method, path, body, status, answer):
    got_status, headers, payload = answer_http(method, path, body, _echo, session="s1")
    assert got_status == status
    assert (json.loads(payload) if payload else None) == answer
    assert headers.get("Mcp-Session-Id") == ("s1" if status == 200 and answer else None)


def test_upstream_serves_streamable_http_through_the_kit(tmp_path):
    port = free_port()
    with spawn([PY, str(ROOT / "conformance" / "gateway" / "upstream.py"), "--http", str(port)]) as upstream:
        assert upstream.wait_listening(port, timeout=20), upstream.stderr_tail()

        def post(body: bytes):
            req = urllib.request.Request(f"http://127.0.0.1:{port}/mcp", body,
                                         {"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(req, timeout=10) as resp:
                    return resp.status, json.loads(resp.read())
            except urllib.error.HTTPError as err:
                return err.code, json.loads(err.read())

        assert post(b'{"jsonrpc":"2.0","id":1,"method":"ping"}') == (200, {"jsonrpc": "2.0", "id": 1, "result": {}})
        assert post(b"nope") == (400, PARSE)


def test_a_group_started_after_the_exit_handlers_ran_is_ended_at_once():
    import subprocess
    import sys

    code = ("import subprocess; from conformance.targets import reaper; reaper.kill_all(); "
            "p = subprocess.Popen(['sleep', '30'], start_new_session=True); reaper.track(p.pid); "
            "print(p.wait(timeout=5))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert out.stdout.strip() == "-9", out.stderr[-500:]


def test_a_scenario_interceptor_stalls_then_answers_or_times_out_at_timeout_ms():
    import io
    import threading

    from conformance.host.scenario_server import LaterLines, ScenarioServer

    item = {"name": "v-slow", "type": "validation", "kind": "reject-if", "pattern": "NEVER-", "stallIf": "SLOW-",
            "stall": 0.2, "hooks": [{"events": ["tools/call"], "phase": "request"}]}
    out = io.StringIO()
    lines = LaterLines(out)
    recorded: list[dict] = []
    server = ScenarioServer("slow", {"interceptors": [item]}, "n" * 10, recorded.append, lines.defer, lines.cancel)

    def invoke(rid: int, payload: str, **extra) -> dict | None:
        params = {"name": "v-slow", "event": "tools/call", "phase": "request", "payload": payload, **extra}
        return server.handle({"jsonrpc": "2.0", "id": rid, "method": "interceptor/invoke", "params": params})

    assert invoke(1, "SLOW-x", timeoutMs=50) is None  # deferred: the answer comes from a timer
    assert invoke(2, "SLOW-x") is None
    assert invoke(3, "SLOW-x") is None
    server.handle({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}})
    assert invoke(4, "fast")["result"]["valid"] is True  # answered at once, while the others wait
    assert [(e["response"].get("error", {}).get("code"), e.get("delay"), e.get("stall")) for e in recorded[:3]] == [
        (-32000, 0.05, 0.2), (None, 0.2, 0.2), (None, 0.2, 0.2)]  # recorded on arrival, with the answer to come
    for timer in [t for t in threading.enumerate() if isinstance(t, threading.Timer)]:
        timer.join(5)
    answers = {a["id"]: a for a in map(json.loads, out.getvalue().splitlines())}
    assert sorted(answers) == [1, 2]  # 3 was cancelled
    assert answers[1]["error"] == {"code": -32000, "message": "Interceptor execution timeout",
                                   "data": {"interceptor": "v-slow", "timeoutMs": 50, "phase": "request"}}
    assert answers[2]["result"]["valid"] is True


@pytest.mark.parametrize("text", ['{"n": NaN}', '[Infinity]', '{"a": [1, -Infinity]}'])
def test_strict_loads_refuses_what_json_does_not_have(text):
    from conformance.targets.peerkit import strict_loads

    with pytest.raises(ValueError, match="is not JSON"):
        strict_loads(text)
    assert strict_loads('{"n": 1.5e3, "s": "NaN"}') == {"n": 1500.0, "s": "NaN"}  # the word in a string is text
