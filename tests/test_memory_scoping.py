"""The reference server's memories belong to one MCP session over HTTP, end to end with two real sessions."""

from __future__ import annotations

import asyncio
import json
import os
import sys

import pytest

from conformance.targets.http import HttpConnection
from reference_clients.host.servers import Server
from tests.helpers import reference_http_server


@pytest.fixture
def reference_http(tmp_path, reference_server_env):
    env = {**os.environ, **reference_server_env, "MCPX_MEMORY_STORE": str(tmp_path / "memories.sqlite"),
           "MCPX_SATISFIED_REQUIREMENTS": "auth:role:memory_admin"}  # so that forget_memory runs
    with reference_http_server(env=env) as port:
        yield f"http://127.0.0.1:{port}/mcp"


def text_of(result: dict) -> str:
    return "\n".join(b.get("text", "") for b in result.get("content") or ())


async def two_sessions(url: str) -> tuple[str, str, str, str]:
    alice, bob = Server("alice", {"url": url}, 15), Server("bob", {"url": url}, 15)
    for session in (alice, bob):
        session.start()
    try:
        await asyncio.wait_for(asyncio.gather(alice.ready.wait(), bob.ready.wait()), 30)
        assert not alice.failed and not bob.failed, (alice.failed, bob.failed)
        saved = await alice.request("tools/call", {"name": "remember", "arguments": {
            "text": "Alice's passport number is X1234567 and she flies to Lisbon"}})
        assert not saved.get("isError"), saved
        query = {"name": "RetrieveMemories", "arguments": {"query": "passport number Lisbon flight"}}
        own = text_of(await alice.request("tools/call", query))
        other = text_of(await bob.request("tools/call", query))
        forgot = text_of(await bob.request("tools/call", {"name": "forget_memory", "arguments": {"id": 1}}))
        return own, other, forgot, text_of(await alice.request("tools/call", query))
    finally:
        await asyncio.gather(alice.stop(3), bob.stop(3))


def test_one_http_session_cannot_read_anothers_memories(reference_http):
    own, other, forgot, still = asyncio.run(two_sessions(reference_http))
    assert "X1234567" in own
    assert "X1234567" not in other and "No relevant memories" in other
    assert "no memory with id 1" in forgot and "X1234567" in still  # nor delete them


SDK_MAJOR = int(__import__("importlib.metadata").metadata.version("mcp").split(".")[0])
MODERN = "2026-07-28"


async def stateless_calls(url: str) -> tuple[dict, dict]:
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "memory-scoping-test", "version": "0"}}

    async def call(name: str, arguments: dict) -> dict:
        async with HttpConnection(url, mode=MODERN, timeout=10) as conn:  # one connection each: no session links them
            exchange = await conn.request("tools/call", {"name": name, "arguments": arguments, "_meta": meta})
            assert exchange.response is not None, exchange.failure
            return exchange.response.get("result") or {}

    saved = await call("remember", {"text": "Alice's passport number is X1234567"})
    return saved, await call("RetrieveMemories", {"query": "passport number"})


@pytest.mark.skipif(SDK_MAJOR < 2, reason="the 2026-07-28 connection mode exists from mcp 2.0 on")
def test_the_stateless_mode_has_no_session_so_it_keeps_no_memories(reference_http):
    saved, other = asyncio.run(stateless_calls(reference_http))
    assert saved.get("isError") is True and "session" in text_of(saved)
    assert "X1234567" not in text_of(other)


# -- stdio: a gateway starts one process per user session ---------------------------------------------------------
def stdio_server(name: str, home, env: dict | None = None, config=None) -> Server:
    args = ["-m", "reference_servers.everything"] + (["--config", str(config)] if config else [])
    return Server(name, {"command": sys.executable, "args": args,
                         "env": {"HOME": str(home), "XDG_STATE_HOME": str(home / "state"),
                                 "PYTHONPATH": os.pathsep.join(sys.path), **(env or {})}}, 30)


async def one_process_each(alice: Server, bob: Server) -> str:
    """Alice remembers in her process, then Bob (another process, as a gateway gives each session) asks."""
    for session in (alice, bob):
        session.start()
    try:
        await asyncio.wait_for(asyncio.gather(alice.ready.wait(), bob.ready.wait()), 60)
        assert not alice.failed and not bob.failed, (alice.failed, bob.failed)
        saved = await alice.request("tools/call", {"name": "remember", "arguments": {"text": "Alice's bank PIN is 4321"}})
        assert not saved.get("isError"), saved
        return text_of(await bob.request("tools/call", {"name": "RetrieveMemories",
                                                         "arguments": {"query": "bank PIN"}}))
    finally:
        await asyncio.gather(alice.stop(3), bob.stop(3))


def test_stdio_processes_share_no_memories_by_default(tmp_path, reference_server_env):
    """Issue 21, item 8: two stdio processes (two users behind a gateway) with nothing configured."""
    other = asyncio.run(one_process_each(stdio_server("alice", tmp_path, reference_server_env),
                                         stdio_server("bob", tmp_path, reference_server_env)))
    assert "4321" not in other and "No relevant memories" in other
    assert not list(tmp_path.rglob("*.sqlite")), "no store file is written unless one is configured"


def test_a_shared_store_is_shared_only_when_configured(tmp_path, reference_server_env):
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"memoryScope": "shared", "memoryStore": str(tmp_path / "team.sqlite")}))
    other = asyncio.run(one_process_each(stdio_server("alice", tmp_path, reference_server_env, config=config),
                                         stdio_server("bob", tmp_path, reference_server_env, config=config)))
    assert "4321" in other
