"""The reference server's memories belong to one MCP session over HTTP, end to end with two real sessions."""

from __future__ import annotations

import asyncio
import os

import pytest

from conformance.targets.http import HttpConnection
from reference_clients.host.servers import Server
from tests.helpers import reference_http_server


@pytest.fixture
def reference_http(tmp_path):
    env = {**os.environ, "MCPX_MEMORY_STORE": str(tmp_path / "memories.sqlite"),
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
        async with HttpConnection(url, mode=MODERN) as conn:  # one connection each: no session links them
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
