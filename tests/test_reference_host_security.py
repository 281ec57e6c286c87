"""The reference host's security properties, end to end with real processes (docs/reference-implementations.md,
"Security notes: reference host")."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import uvicorn

from conformance.host.mock_llm import MockLLM, loopback_socket
from reference_servers.middleware.memory import MemoryStore
from tests.helpers import host_fork_server

ROOT = Path(__file__).resolve().parent.parent

# A stdio "server" that writes the environment it was given to a file and exits: the host logs
# that it failed to start and carries on, which is all this test needs.
DUMP_ENV = "import json, os, sys; json.dump(dict(os.environ), open(sys.argv[1], 'w'))"


@pytest.fixture(scope="module")
def fork_server(tmp_path_factory):
    """The reference host's fork server (reference_clients/host/prefork.py): each host below runs as its child, on
    its own streams and environment, without importing the SDK and openai again."""
    path = str(tmp_path_factory.mktemp("prefork") / "host.sock")
    with host_fork_server(path):
        yield path


@pytest.fixture
def run_host(fork_server):
    def run(config: dict, tmp_path: Path, env: dict, turns: str = "") -> subprocess.CompletedProcess:
        config_file = tmp_path / "config.json"
        config_file.write_text(json.dumps(config))
        return subprocess.run([sys.executable, "-m", "reference_clients.host"], input=turns, capture_output=True,
                              text=True, timeout=60, cwd=ROOT,
                              env={**env, "MCPX_CONFIG": str(config_file), "MCPX_CONNECT_TIMEOUT": "20",
                                   "MCPX_HOST_PREFORK": fork_server})
    return run


def test_stdio_servers_get_a_minimal_environment_plus_their_configured_env(tmp_path, run_host):
    dumps = [tmp_path / "env-a.json", tmp_path / "env-b.json"]
    config = {"mcpServers": {
        "a": {"command": sys.executable, "args": ["-c", DUMP_ENV, str(dumps[0])], "env": {"CONFIGURED_FOR_A": "yes"}},
        "b": {"command": sys.executable, "args": ["-c", DUMP_ENV, str(dumps[1])]},
    }}
    planted = {"OPENAI_API_KEY": "sk-planted-host-key", "MCPX_TEST_SECRET": "planted-secret",
               "AWS_SECRET_ACCESS_KEY": "planted-aws"}
    done = run_host(config, tmp_path, {**os.environ, **planted, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"})
    assert done.returncode == 0, done.stderr[-2000:]
    got = [json.loads(p.read_text()) for p in dumps]
    for env in got:
        assert not set(planted) & set(env), sorted(set(planted) & set(env))
        assert not any(value in planted.values() for value in env.values())
        assert "OPENAI_BASE_URL" not in env and "MCPX_CONFIG" not in env
        assert env.get("PATH")  # the minimal environment still lets a server find its programs
    assert got[0]["CONFIGURED_FOR_A"] == "yes" and "CONFIGURED_FOR_A" not in got[1]


@contextlib.contextmanager
def mock_llm(script: dict):
    """The suite's mock LLM on a loopback port, in a thread; yields (base URL, the MockLLM)."""
    llm = MockLLM(script=script)
    llm.turn = 1
    server = uvicorn.Server(uvicorn.Config(llm.app(), log_level="critical", access_log=False, lifespan="off"))
    sock = loopback_socket()
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 20
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.01)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/v1", llm
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def test_documented_configuration_redacts_preprocessor_output_and_tool_results(tmp_path, run_host):
    # Another user's data, stored where the preprocessor will find it.
    store_path = str(tmp_path / "memories.sqlite")
    with MemoryStore(store_path) as store:
        store.remember("Bob booked the Lisbon flight; reach him at bob.other@example.org")
    # The host.json of docs/reference-implementations.md ("Reference host"), with the memory file above.
    redactions = {"redactions": {"$metadata": "pii_redaction.redactions"}}
    config = {
        "mcpServers": {"everything": {"command": sys.executable, "args": ["-m", "reference_servers.everything"],
                                      "env": {"MCPX_MEMORY_STORE": store_path}}},
        "contextMiddleware": [
            {"server": "everything", "name": "pii_redaction", "phase": "request", "priority": 10,
             "arguments": redactions},
            {"server": "everything", "name": "pii_restoration", "phase": "response", "arguments": redactions}],
        "knownRequirements": {"auth:role:memory_admin": False},
    }
    # The model calls a tool whose result carries an address (conformance_echo says back what it gets).
    script = {1: [{"call": "conformance_echo", "arguments": {"text": "write to carol.third@example.net"}},
                  {"say": "echo"}]}
    turn = json.dumps({"role": "user", "content": "I am ana@example.org: which Lisbon flight was booked?"})
    with mock_llm(script) as (base_url, llm):
        done = run_host(config, tmp_path, {"PATH": os.environ["PATH"], "HOME": str(tmp_path),
                                           "OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "k", "MCPX_MODEL": "m",
                                           "MCPX_STREAM": "0"}, turns=turn + "\n")
    assert done.returncode == 0, done.stderr[-2000:]
    answer = json.loads(done.stdout.splitlines()[0])
    assert answer["content"] == ("ok: I am ana@example.org: which Lisbon flight was booked?"), answer
    bodies = [r.body for r in llm.requests]
    assert len(bodies) == 2, bodies
    sent = json.dumps(bodies)
    assert "ana@example.org" not in sent
    assert "bob.other@example.org" not in sent
    tool_messages = [m for m in bodies[1]["messages"] if m["role"] == "tool"]
    assert len(tool_messages) == 1 and "carol.third@example.net" not in tool_messages[0]["content"]
    assert "[EMAIL_" in tool_messages[0]["content"]
    context = [m["content"] for m in bodies[0]["messages"] if m["role"] == "system"]
    assert any("Bob booked the Lisbon flight; reach him at [EMAIL_" in c for c in context), context


# An interceptors server with one validator on tools/call whose every verdict is argv[2] (JSON), on top of the
# suite's upstream fixture server (conformance_echo; every message it receives is logged to argv[1]).
GUARD = """
import json, sys
sys.path.insert(0, {root!r})
from conformance.gateway.upstream import FixtureServer, Log, serve_stdio
EXT = "io.modelcontextprotocol/interceptors"
VERDICT = json.loads(sys.argv[2])
class Guard(FixtureServer):
    def capabilities(self):
        return {{**super().capabilities(), "extensions": {{EXT: {{"supportedEvents": ["tools/call"]}}}}}}
    def dispatch(self, method, params, out):
        if method == "interceptors/list":
            return {{"interceptors": [{{"name": "guard", "type": "validation",
                                       "hooks": [{{"events": ["tools/call"], "phase": "request"}}]}}]}}
        if method == "interceptor/invoke":
            return VERDICT
        return super().dispatch(method, params, out)
serve_stdio(Guard(plain=True), Log(sys.argv[1]))
"""


@pytest.mark.parametrize("verdict, runs", [
    ({}, False),
    ({"valid": "false"}, False),
    ({"valid": False, "severity": "critical"}, False),
    ({"valid": True, "severity": "critical"}, False),
    ({"valid": True, "messages": "fine"}, False),
    ({"valid": True}, True),
    ({"valid": False, "severity": "warn"}, True),
], ids=["empty", "valid-string", "severity-unknown", "valid-severity-unknown", "messages-not-list", "valid",
        "warning"])
def test_malformed_validation_results_fail_closed(tmp_path, verdict, runs, run_host):
    """Item 10: a tool call goes on only on a well-formed verdict that allows it."""
    log = tmp_path / "guard.jsonl"
    guard = tmp_path / "guard.py"
    guard.write_text(GUARD.format(root=str(ROOT)))
    config = {"mcpServers": {"guard": {"command": sys.executable, "args": [str(guard), str(log), json.dumps(verdict)]}},
              "interceptors": [{"server": "guard"}]}
    script = {1: [{"call": "conformance_echo", "arguments": {"text": "hello"}}, {"say": "done"}]}
    with mock_llm(script) as (base_url, llm):
        done = run_host(config, tmp_path, {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "OPENAI_BASE_URL": base_url,
                                           "OPENAI_API_KEY": "k", "MCPX_MODEL": "m", "MCPX_STREAM": "0"},
                        turns=json.dumps({"role": "user", "content": "echo hello"}) + "\n")
    assert done.returncode == 0, done.stderr[-2000:]
    received = [json.loads(line) for line in log.read_text().splitlines()]
    invoked = [m for m in received if m.get("method") == "interceptor/invoke"]
    called = [m for m in received if m.get("method") == "tools/call"]
    assert invoked, received  # the verdict was asked for
    assert bool(called) == runs, (verdict, done.stderr[-1500:])
