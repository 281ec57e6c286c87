"""The reference server's SSE streams are resumable over Streamable HTTP (reference_servers/sdk/events.py): each
POST stream opens with a priming event (an id, empty data) and a `retry` field, and a client reconnecting with
`Last-Event-ID` receives what it missed. The official suite's `server-sse-polling` scenario judges the first two;
before, the server sent neither. Raw HTTP on loopback against the real server."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import httpx
import pytest

from reference_servers.sdk.events import BoundedEventStore
from tests.helpers import reference_http_server

# As tests/test_reference_server_security.py: the mcp 1.x variant runs where MCPX_MCP1_PYTHON names an
# interpreter with mcp 1.x and this package installed.
MCP1_PYTHON = os.environ.get("MCPX_MCP1_PYTHON", "")
PYTHONS = [pytest.param(sys.executable, id="installed-mcp"),
           pytest.param(MCP1_PYTHON, id="mcp1", marks=pytest.mark.skipif(
               not Path(MCP1_PYTHON).is_file(), reason=f"no mcp 1.x Python at {MCP1_PYTHON} (MCPX_MCP1_PYTHON)"))]

ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "sse-test", "version": "0"}}


def events(body: str) -> list[dict]:
    """SSE events as field -> value (data lines joined), in order."""
    out = []
    for block in body.replace("\r\n", "\n").split("\n\n"):
        event: dict = {}
        for line in block.split("\n"):
            if not line or line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            event[name] = event.get(name, "") + ("\n" if name == "data" and name in event else "") + value
        if event:
            out.append(event)
    return out


@pytest.mark.parametrize("python", PYTHONS)
def test_a_post_stream_opens_with_a_priming_event_and_a_retry_field_and_resumes_from_it(python):
    with reference_http_server(python=python) as port, httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
        init = http.post("/mcp", headers=ACCEPT, json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT})
        session = {**ACCEPT, "mcp-session-id": init.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
        http.post("/mcp", headers=session, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
        listed = http.post("/mcp", headers=session, json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        assert listed.headers["content-type"].startswith("text/event-stream")
        first, *rest = events(listed.text)
        assert first.get("id") and first.get("data", "") == "" and int(first["retry"]) > 0, first
        assert json.loads(rest[-1]["data"])["result"]["tools"]
        # Reconnecting after the priming event replays the response the client would have missed.
        # The replay stream stays open for what comes next: read it until the response is there.
        replayed = []
        with http.stream("GET", "/mcp", headers={**session, "accept": "text/event-stream",
                                                 "last-event-id": first["id"]}) as resumed:
            for line in resumed.iter_lines():
                if line.startswith("data:") and line[5:].strip():
                    replayed.append(json.loads(line[5:]))
                    if replayed[-1].get("id") == 2:
                        break
        assert "tools" in replayed[-1]["result"], replayed


def test_the_event_store_is_bounded_by_count_and_by_bytes():
    class Message:
        def __init__(self, size: int) -> None:
            self.size = size

        def model_dump_json(self, **_) -> str:
            return "x" * self.size

    async def main():
        store = BoundedEventStore(max_events=3, max_bytes=100)
        ids = [await store.store_event("s", Message(10)) for _ in range(5)]
        assert list(store.events) == ids[2:]  # the oldest two went
        await store.store_event("s", Message(95))
        assert len(store.events) == 1 and store.bytes == 95
        assert await store.replay_events_after(ids[0], lambda e: None) is None  # evicted: nothing to replay

    anyio.run(main)
