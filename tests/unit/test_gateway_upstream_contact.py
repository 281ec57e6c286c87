"""The gateway role's proof of forwarding, as pure functions: the diagnosis of a target that never contacted the
upstream, the upstream's received requests as evidence, the optional-field comparison, and the run mark."""

from types import SimpleNamespace

from conformance.gateway.common import optional_fields
from conformance.gateway.record import upstream_exchanges
from conformance.gateway.upstream import FixtureServer
from conformance.run.diagnosis import diagnose

NOT_A_GATEWAY = "the target never contacted the upstream the suite started"


def rec(upstream: list, *, mode: str = "stdio", unavailable: str | None = None, init_failed: bool = False):
    return SimpleNamespace(upstream=upstream, upstream_mode=mode, unavailable=unavailable, init_failed=init_failed,
                           exchanges={}, wire=[])


def test_no_upstream_contact_on_any_connection_is_one_diagnosis_naming_the_variable():
    problem = diagnose("gateway", {"a": rec([]), "b": rec([])}, SimpleNamespace())
    assert problem.startswith(NOT_A_GATEWAY + " (MCPX_UPSTREAM_COMMAND / {upstream}); is it a gateway, and does it "
                                              "read that variable?")
    assert "MCPX_UPSTREAM_URL / {upstream}" in diagnose("gateway", {"a": rec([], mode="http")}, SimpleNamespace())


def test_one_connection_that_reached_the_upstream_is_judged_not_diagnosed():
    contacted = rec([{"jsonrpc": "2.0", "id": 1, "method": "initialize"}])
    assert diagnose("gateway", {"a": rec([]), "b": contacted}, SimpleNamespace()) is None


def test_a_target_that_never_answered_keeps_its_own_diagnosis():
    problem = diagnose("gateway", {"a": rec([], unavailable="cannot start 'x': no such file")}, SimpleNamespace())
    assert problem.startswith("the target could not be started or reached")
    assert diagnose("server", {"a": rec([])}, SimpleNamespace()) is None  # the server role has no upstream


def test_every_request_the_upstream_received_is_evidence_of_its_own():
    got = upstream_exchanges([
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},  # a notification: nothing to cite
        {"jsonrpc": "2.0", "id": 2, "method": "interceptors/list", "params": {}},
        {"jsonrpc": "2.0", "id": 3, "method": "interceptors/list", "params": {"event": "resources/read"}},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "conformance_echo"}},
        "not an object"])
    assert list(got) == ["upstream received initialize", "upstream received interceptors/list",
                         "upstream received interceptors/list (2)", "upstream received tools/call conformance_echo"]
    assert got["upstream received interceptors/list (2)"].request["params"] == {"event": "resources/read"}


def test_optional_fields_are_compared_key_by_key_and_gateway_additions_pass():
    sent = {"_meta": {"k": {"run": "r"}}, "content": {"1": {"properties": {"relevance": 0.5}}}}
    same = {"_meta": {"k": {"run": "r"}, "gateway": 1}, "content": [{}, {"properties": {"relevance": 0.5}}],
            "extra": True}
    assert optional_fields(sent, same, "x") == []
    assert optional_fields(sent, {"content": [{}, {"properties": {}}]}, "x") == [
        "x._meta is missing", "x.content.1.properties.relevance is missing"]
    assert optional_fields({"durationMs": 0.5}, {"durationMs": 1}, "x") == ["x.durationMs is 1, the upstream sent 0.5"]


def test_the_upstream_marks_answers_only_when_given_a_run():
    def answer(server, method, params):
        return server.handle({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})[-1]

    call = ("tools/call", {"name": "conformance_memories", "arguments": {"query": "q"}})
    assert answer(FixtureServer(), *call)["result"] == {"content": [{"type": "text", "text": "memories for: q"}]}
    marked = answer(FixtureServer(run="mcpx-run-1"), *call)["result"]
    assert marked["content"][0]["text"] == "memories for: q [mcpx-run-1]"
    assert marked["_meta"] == {"dev.mcp-ext-conformance/upstream": {"run": "mcpx-run-1"}}
    failing = answer(FixtureServer(run="mcpx-run-1"), "interceptor/invoke",
                     {"name": "conformance_failing", "event": "tools/call", "phase": "request", "payload": {}})
    assert failing["error"]["data"]["run"] == "mcpx-run-1"
