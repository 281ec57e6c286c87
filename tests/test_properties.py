"""Property tests (hypothesis) against running implementations, over the real wire.

- Requirement strings are matched exactly by the reference server: a satisfied
  string's near misses (case, Unicode normalization forms, confusables,
  whitespace, empty and very long strings) never satisfy it.
- Requirement strings are matched exactly by hosts: a tool whose requirement is
  a near miss of a known-unsatisfiable string is offered (run through the host
  harness with generated scenarios).
- middleware/invoke on the reference server: random valid contexts come back
  exactly (identity) or with only text changed (uppercase); random invalid
  contexts and arguments get -32602, and the server keeps answering.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import unicodedata

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from conformance.host.harness import run_scenario_sync
from conformance.targets import TargetSpec
from tests.helpers import fake_host

GATED = "auth:role:memory_admin"  # the reference server's forget_memory requires exactly this
CONFUSABLES = {"a": "\u0430", "o": "\u043e", "e": "\u0435", "i": "\u0456", "c": "\u0441", "p": "\u0440"}


# -- generating near misses --------------------------------------------------------------------
def near_misses(exact: str) -> st.SearchStrategy[str]:
    """Strings a careless implementation might take for `exact`, and never equal to it."""
    def swap_case(s: str) -> str:
        return s.swapcase() if s.swapcase() != s else s.upper() + "X"

    def confusable(s: str) -> str:
        for latin, lookalike in CONFUSABLES.items():
            if latin in s:
                return s.replace(latin, lookalike, 1)
        return s + "\u0430"

    transforms = st.sampled_from([
        swap_case, str.upper, str.title, confusable,
        lambda s: unicodedata.normalize("NFD", s + "\u00e9"),  # same look, decomposed accent
        lambda s: s + " ", lambda s: " " + s, lambda s: s.replace(":", " : "), lambda s: s + "\u200b",
        lambda s: s + "\u00a0", lambda s: s.replace(":", "\uff1a"),  # fullwidth colon: NFKC folds it back
        lambda s: "", lambda s: s * 200, lambda s: s[:-1],
    ])
    return st.builds(lambda t, s: t(s), transforms, st.just(exact)).filter(lambda v: v != exact)


def requirement_strings() -> st.SearchStrategy[str]:
    alphabet = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00,")
    return st.text(alphabet, min_size=1, max_size=40)


# -- the reference server over stdio -------------------------------------------------------------
class Client:
    """A blocking JSON-RPC client on a reference server process (one per test module)."""

    def __init__(self, env: dict[str, str] | None = None):
        self.proc = subprocess.Popen([sys.executable, "-m", "reference_servers.everything"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                     encoding="utf-8", env={**os.environ, **(env or {})})
        self.next = 0
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "properties", "version": "0"}})
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")

    def request(self, method: str, params) -> dict:
        self.next += 1
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": self.next, "method": method, "params": params})
                              + "\n")
        self.proc.stdin.flush()
        while True:
            line = self.proc.stdout.readline()
            assert line, "the server closed stdout"
            message = json.loads(line)
            if message.get("id") == self.next:
                return message

    def close(self) -> None:
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()


@pytest.fixture(scope="module")
def server(reference_server_env):
    client = Client(reference_server_env)
    yield client
    client.close()


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(near_misses(GATED), min_size=10, max_size=30, unique=True))
def test_near_misses_never_satisfy_a_requirement_on_the_reference_server(reference_server_env, variants):
    client = Client({**reference_server_env, "MCPX_SATISFIED_REQUIREMENTS": ",".join(v for v in variants if v)})
    try:
        result = client.request("tools/call", {"name": "forget_memory", "arguments": {"id": 1}})["result"]
        assert result.get("isError") is True, variants
        assert GATED in result["content"][0]["text"]
    finally:
        client.close()


def test_the_exact_string_does_satisfy_it(reference_server_env):
    client = Client({**reference_server_env, "MCPX_SATISFIED_REQUIREMENTS": GATED})
    try:
        result = client.request("tools/call", {"name": "forget_memory", "arguments": {"id": 1}})["result"]
        assert "unmet" not in json.dumps(result)
    finally:
        client.close()


@settings(max_examples=300, deadline=None)
@given(requirement_strings(), st.data())
def test_core_gate_is_exact_equality(exact, data):
    """The reference server's gate itself, at volume: allowed iff the strings are equal."""
    from reference_servers.core import App, ToolDef

    candidate = data.draw(st.one_of(st.just(exact), near_misses(exact), requirement_strings()))
    app = App()
    app.satisfied.add(exact)
    tool = ToolDef(name="t", description="", input_schema={"type": "object"}, handler=None,
                   extensions={"execution": {"requirements": [candidate]}})
    assert (app.unmet(tool) == []) == (candidate == exact)


# -- middleware/invoke shapes -------------------------------------------------------------------
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=50)
ANNOTATIONS = st.fixed_dictionaries({}, optional={"audience": st.lists(st.sampled_from(["user", "assistant"])),
                                                  "priority": st.floats(0, 1)})
BLOCK = st.one_of(
    st.builds(lambda t, a: {"type": "text", "text": t, **({"annotations": a} if a else {})}, TEXT, ANNOTATIONS),
    st.builds(lambda d: {"type": "image", "data": d, "mimeType": "image/png"}, st.sampled_from(["iVBORw0KGgo=", "AA=="])),
    st.builds(lambda d: {"type": "audio", "data": d, "mimeType": "audio/wav"}, st.sampled_from(["UklGRg==", "AA=="])),
    st.builds(lambda u: {"type": "resource_link", "uri": f"file:///{u}", "name": u or "x"},
              st.text("abcxyz", max_size=8)),
    st.builds(lambda t: {"type": "resource", "resource": {"uri": "mem://x", "text": t, "mimeType": "text/plain"}},
              TEXT),
)
INVALID_CONTEXT = st.one_of(
    st.none(), st.text(max_size=5), st.integers(), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.lists(st.one_of(st.integers(), st.text(max_size=3), st.none()), min_size=1, max_size=3),
    st.lists(st.fixed_dictionaries({"text": TEXT}), min_size=1, max_size=2),  # blocks without a type
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(BLOCK, max_size=6))
def test_identity_returns_any_valid_context_exactly(server, context):
    answer = server.request("middleware/invoke", {"name": "conformance_identity", "arguments": {},
                                                  "context": context})
    assert answer["result"]["content"] == context


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(BLOCK, max_size=6))
def test_uppercase_changes_text_only(server, context):
    answer = server.request("middleware/invoke", {"name": "conformance_uppercase", "arguments": {},
                                                  "context": context})["result"]
    assert len(answer["content"]) == len(context)
    for got, sent in zip(answer["content"], context):
        if sent["type"] == "text":
            assert got == {**sent, "text": sent["text"].upper()}
        else:
            assert got == sent
    assert answer["metadata"]["changed"] == sum(1 for b in context if b["type"] == "text"
                                                and b["text"].upper() != b["text"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(INVALID_CONTEXT)
def test_invalid_context_is_invalid_params_and_the_server_lives_on(server, context):
    answer = server.request("middleware/invoke", {"name": "conformance_identity", "arguments": {},
                                                  "context": context})
    assert answer.get("error", {}).get("code") == -32602, answer
    assert "result" in server.request("ping", {})


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(st.none(), st.integers(), st.text(max_size=3), st.lists(st.integers(), max_size=2),
                 st.dictionaries(st.sampled_from(["mode", "x"]),
                                 st.one_of(st.text(max_size=3), st.integers(), st.none()), max_size=2)))
@example(arguments={"mode": "a", "x": None})  # its schema has additionalProperties: false
def test_strict_args_accepts_exactly_mode_a_or_b(server, arguments):
    answer = server.request("middleware/invoke", {"name": "conformance_strict_args", "arguments": arguments,
                                                  "context": [{"type": "text", "text": "x"}]})
    valid = isinstance(arguments, dict) and set(arguments) == {"mode"} and arguments["mode"] in ("a", "b")
    if valid:
        assert answer["result"]["metadata"] == {"mode": arguments["mode"]}
    else:
        assert answer.get("error", {}).get("code") == -32602, (arguments, answer)


# -- hosts: generated scenarios through the harness -------------------------------------------------
def near_miss_scenario(known: str, variants: list[str]) -> dict:
    return {
        "id": "execution-requirements/generated-near-misses", "profile": "execution-requirements",
        "knownRequirements": {known: False},
        "servers": {"gated": {"transport": "stdio", "tools": [
            {"name": f"near_{i}", "kind": "gated", "requirements": [v]} for i, v in enumerate(variants)
        ] + [{"name": "exact", "kind": "gated", "requirements": [known]}]}},
        "turns": ["hello {nonce}"], "script": {1: [{"say": "echo"}]},
    }


HOSTS = {"fake host": fake_host()}
try:  # the reference host, when it is installed
    import reference_clients.host  # noqa: F401

    HOSTS["reference host"] = f"{sys.executable} -m reference_clients.host"
except ImportError:
    pass


@pytest.mark.parametrize("host", sorted(HOSTS))
@settings(max_examples=4, deadline=None)
@given(data=st.data())
def test_hosts_offer_every_near_miss_of_a_known_unsatisfiable_string(host, data):
    known = data.draw(st.sampled_from(["scenario:known-false", "Org:Caf\u00e9:Admin", "x.y/z"]) | requirement_strings())
    variants = data.draw(st.lists(near_misses(known), min_size=1, max_size=8, unique=True))
    run = run_scenario_sync(TargetSpec("stdio", command=HOSTS[host], timeout=30), near_miss_scenario(known, variants))
    assert run.fatal is None, run.fatal
    offered = {name.split("__")[-1] for req in run.model if req.valid
               for name in (t["function"]["name"] for t in req.body.get("tools") or ())}
    missing = [v for i, v in enumerate(variants) if f"near_{i}" not in offered]
    assert not missing, f"{host} left out tools whose requirement is only a near miss: {missing!r}"
