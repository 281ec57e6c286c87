"""The reference server's limits hold on every entry point (issue 21, items 3 and 5), end to end over HTTP.

- Amplification: what a call reads (text, the whole params: context, arguments, an interceptor's payload) and what
  it writes are bounded; pii_restoration with one large value behind a handle written many times is refused
  with -32000 naming maxOutputChars instead of answering hundreds of megabytes.
- Abandoned work: a call over maxSeconds is answered with -32000 and its worker stops (the process goes back
  to idle: its CPU time stops growing) while another session is served; interceptor/invoke is under the same
  limits as middleware/invoke.
"""

from __future__ import annotations

import json
import os
import sys
import time

import anyio
import pytest

from conformance.client.session import PROTOCOL_VERSION
from conformance.targets import TargetSpec
from conformance.targets.peerkit import free_port, spawn
from tests.helpers import ROOT

INIT = {"protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": {"name": "limits-test", "version": "0"}}


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100  # utime + stime, in clock ticks (100 a second on Linux)


class Server:
    def __init__(self, tmp_path, limits: dict):
        config = tmp_path / "config.json"
        config.write_text(json.dumps({"limits": limits}))
        self.port = free_port()
        self.group = spawn([sys.executable, "-m", "reference_servers.everything", "--http",
                            str(self.port), "--config", str(config)], cwd=ROOT,
                           env={**os.environ, "MCPX_MEMORY_STORE": ":memory:"})

    def __enter__(self):
        self.group.__enter__()
        assert self.group.wait_listening(self.port), self.group.stderr_tail(lines=20)
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        return self

    def __exit__(self, *exc):
        return self.group.__exit__(*exc)


async def session(url: str):
    conn = TargetSpec("http", url=url, timeout=120).connect()
    await conn.__aenter__()
    assert (await conn.request("initialize", INIT)).has_result
    await conn.notify("notifications/initialized")
    return conn


def error_of(exchange) -> dict:
    assert exchange.response is not None, exchange.outcome_text()
    assert "error" in exchange.response, str(exchange.response)[:300]
    return exchange.response["error"]


# -- amplification: sizes in and out ----------------------------------------------------------------------------------
def test_input_and_output_sizes_are_bounded_on_every_entry_point(tmp_path):
    limits = {"maxInputChars": 200_000, "maxOutputChars": 300_000, "maxTextChars": 100_000}
    with Server(tmp_path, limits) as server:
        async def main():
            conn = await session(server.url)
            try:
                # 150 handles, one value of 50,000 characters: 7.5 M characters restored
                amplified = await conn.request("middleware/invoke", {
                    "name": "pii_restoration", "arguments": {"redactions": {"EMAIL_1": "x" * 50_000}},
                    "context": [{"type": "text", "text": "[EMAIL_1]" * 150}]})
                big_arguments = await conn.request("middleware/invoke", {
                    "name": "pii_restoration", "arguments": {"redactions": {f"EMAIL_{i}": "y" * 100
                                                                             for i in range(3000)}},
                    "context": [{"type": "text", "text": "hello"}]})
                big_payload = await conn.request("interceptor/invoke", {
                    "name": "pii-detector", "event": "tools/call", "phase": "request",
                    "payload": {"arguments": {"notes": ["z" * 1000] * 150}}})
                small = await conn.request("middleware/invoke", {
                    "name": "pii_restoration", "arguments": {"redactions": {"EMAIL_1": "jane@example.com"}},
                    "context": [{"type": "text", "text": "mail [EMAIL_1]"}]})
                return amplified, big_arguments, big_payload, small
            finally:
                await conn.__aexit__(None, None, None)

        amplified, big_arguments, big_payload, small = anyio.run(main)
    error = error_of(amplified)
    assert error["code"] == -32000 and error["data"]["limit"] == "maxOutputChars", error
    assert "300000" in error["message"]
    error = error_of(big_arguments)
    assert error["code"] == -32602 and error["data"]["limit"] == "maxInputChars", error
    error = error_of(big_payload)
    assert error["code"] == -32602 and error["data"]["limit"] == "maxTextChars", error
    assert small.response["result"]["content"][0]["text"] == "mail jane@example.com"


# -- abandoned work stops, another session is served --------------------------------------------------------------
def slow_call(method: str) -> dict:
    """A call of some seconds of pure-Python work: many short strings, each one a PII scan."""
    notes = [f"call 415-555-{i % 10000:04d} or mail user{i}@example.com" for i in range(40_000)]
    if method == "interceptor/invoke":
        return {"name": "pii-detector", "event": "tools/call", "phase": "request", "payload": {"arguments": {"notes": notes}}}
    return {"name": "pii_redaction", "arguments": {}, "context": [{"type": "text", "text": n} for n in notes]}


@pytest.mark.parametrize("method", ["interceptor/invoke", "middleware/invoke"])
def test_work_past_max_seconds_stops_and_another_session_is_served(tmp_path, method):
    # 40,000 blocks are 200,000 JSON values, over the HTTP front's default maxJsonValues: raised for this test.
    with Server(tmp_path, {"maxSeconds": 0.5, "maxConcurrent": 2, "maxJsonValues": 400_000}) as server:
        pid = server.group.pid
        outcome: dict = {}

        async def main():
            attacker, other = await session(server.url), await session(server.url)
            try:
                errors = []

                async def attack():
                    errors.append(error_of(await attacker.request(method, slow_call(method))))

                async def serve_other():
                    await anyio.sleep(0.5)  # the attack is running
                    started = time.monotonic()
                    ping = await other.request("ping", {})
                    outcome["ping"] = (ping.has_result, time.monotonic() - started)
                    small = await other.request("middleware/invoke", {
                        "name": "pii_redaction", "arguments": {},
                        "context": [{"type": "text", "text": "mail jane@example.com"}]})
                    outcome["small"] = small.has_result and small.response["result"]["content"][0]["text"]
                    outcome["small error"] = small.error or small.failure  # for the assertion's message

                async with anyio.create_task_group() as tg:
                    for _ in range(6):
                        tg.start_soon(attack)
                    tg.start_soon(serve_other)
                outcome["errors"] = errors
            finally:
                await other.__aexit__(None, None, None)  # the last entered first: their cancel scopes nest
                await attacker.__aexit__(None, None, None)

        anyio.run(main)
        # Every attacking call was answered: it ran past maxSeconds. Its worker must have stopped: the server's
        # CPU time stops growing (before, the abandoned threads ran on for seconds after their callers' errors).
        idle = False
        for _ in range(20):
            before = cpu_seconds(pid)
            time.sleep(0.5)
            if cpu_seconds(pid) - before < 0.1:
                idle = True
                break
    assert [e["data"]["limit"] for e in outcome["errors"]] == ["maxSeconds"] * 6, outcome["errors"]
    assert outcome["ping"][0] and outcome["small"] == "mail [EMAIL_1]", outcome
    assert idle, "the server kept working after every caller had its answer"
