"""The base-protocol validators say precisely what is wrong with a message; the suite writes messages exactly."""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.core.wire import base_problems, envelope_problems, transcript_problems
from conformance.targets import WireEvent
from conformance.targets.base import PLAIN_FILL, filled_params, json_bytes, json_line

VALID = [
    {"jsonrpc": "2.0", "id": 1, "result": {}},
    {"jsonrpc": "2.0", "id": "a", "error": {"code": -32601, "message": "Method not found"}},
    {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x"}},
    {"jsonrpc": "2.0", "id": 7, "method": "ping"},
]
INVALID = {
    "wrong version": ({"jsonrpc": "1.0", "id": 1, "result": {}}, "jsonrpc"),
    "result and error": ({"jsonrpc": "2.0", "id": 1, "result": {}, "error": {"code": 1, "message": ""}}, "exactly one"),
    "neither result nor error": ({"jsonrpc": "2.0", "id": 1}, "exactly one"),
    "string error code": ({"jsonrpc": "2.0", "id": 1, "error": {"code": "x", "message": "m"}}, "error.code"),
    "no id no method": ({"jsonrpc": "2.0", "result": {}}, "no method, no id"),
    "positional params": ({"jsonrpc": "2.0", "method": "x", "params": [1]}, "named params"),
    "array": ([1], "not a JSON object"),
}


@pytest.mark.parametrize("message", VALID)
def test_valid_envelopes(message):
    assert envelope_problems(message) == []


@pytest.mark.parametrize("name", INVALID)
def test_invalid_envelopes(name):
    message, fragment = INVALID[name]
    problems = envelope_problems(message)
    assert problems and fragment in " ".join(problems)


def test_base_types_catch_a_bad_tool_list():
    problems = base_problems("tools/list", {"jsonrpc": "2.0", "id": 1, "result": {"tools": [{"name": 3}]}})
    assert problems and "tools/list result is not valid MCP" in problems[0]


def test_base_types_catch_a_bad_notification():
    problems = base_problems(None, {"jsonrpc": "2.0", "method": "notifications/message",
                                    "params": {"level": "loud", "data": "x"}})
    assert problems and "notification notifications/message" in problems[0]


def test_transcript_reports_wire_problems_in_order():
    wire = [WireEvent(0.1, "out", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
            WireEvent(0.2, "in", raw="garbage", problem="not JSON"),
            WireEvent(0.3, "in", {"jsonrpc": "2.0", "id": 1, "result": {"tools": "no"}})]
    problems = transcript_problems(wire)
    assert len(problems) == 2
    assert problems[0].startswith("t=0.200s: not JSON")
    assert "tools/list result" in problems[1]


def test_meta_carriage_names_fields_found_only_under_meta():
    from conformance.core.judging import meta_carriage

    tools = [{"name": "a", "_meta": {"com.example/preprocessor": True}},
             {"name": "b", "preprocessor": True, "_meta": {"com.example/preprocessor": True}},  # in place too
             {"name": "c", "_meta": {"io.example/requirements": ["x:y"]}},
             {"name": "d", "_meta": {"conformance/probe": "memories"}}]
    assert meta_carriage(tools, "preprocessor-tools") == ["a: _meta['com.example/preprocessor']"]
    assert meta_carriage(tools, "execution-requirements") == ["c: _meta['io.example/requirements']"]
    assert meta_carriage(tools, "augmentation") == []


@pytest.mark.parametrize("message", [
    {"jsonrpc": "2.0", "id": 1, "method": "m", "params": {"text": "plain ASCII, \"quoted\", tab\t newline\n"}},
    {"text": "café, ４１５, 😀"}, {"text": "DEL \x7f, bell \x07, NUL \x00"}, {"text": "a literal \\u0041"},
    {"n": [1, -2.5, 1e300, True, None], "nested": {"ünïcode key": ["x"]}},
])
def test_json_line_is_the_compact_utf8_encoding(message):
    assert json_line(message) == (json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n").encode()


def test_json_line_refuses_a_lone_surrogate_like_the_plain_encoding():
    with pytest.raises(UnicodeEncodeError):
        json_line({"text": "\ud800"})


@given(envelope=st.fixed_dictionaries({"jsonrpc": st.just("2.0"), "id": st.integers() | st.text(max_size=5),
                                         "method": st.text(max_size=20)}),
       value=st.dictionaries(st.text(max_size=8), st.recursive(
           st.none() | st.booleans() | st.integers() | st.text(max_size=10),
           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
           max_leaves=8), max_size=4),
       prefix=st.text(alphabet=sorted(PLAIN_FILL), max_size=6), fill=st.sampled_from(sorted(PLAIN_FILL)),
       count=st.integers(0, 50), meta=st.booleans())
def test_filled_params_are_written_as_the_plain_encoding_writes_them(envelope, value, prefix, fill, count, meta):
    """EncodedParams' own text is exactly what encoding its dict would give, in a line and in an HTTP body."""
    marker = "conformance-marker"
    value = {**value, "payload": {"arguments": {"location": marker}}}
    params = filled_params(value, marker, prefix, fill, count)
    assert params["payload"]["arguments"]["location"] == prefix + fill * count
    if meta:
        params = params.merged({"_meta": {"k": "é"}})
    message = {**envelope, "params": params}
    plain = json.dumps({**envelope, "params": dict(params)}, ensure_ascii=False, separators=(",", ":"))
    assert json_line(message) == (plain + "\n").encode()
    assert json_bytes(message) == plain.encode()


def test_filled_params_refuse_a_fill_that_needs_escaping_or_a_marker_seen_twice():
    with pytest.raises(AssertionError):
        filled_params({"a": "m"}, "m", "", '"', 3)
    with pytest.raises(AssertionError):
        filled_params({"a": "m", "b": ["m"]}, "m", "", "x", 3)


def test_report_evidence_shortens_only_very_long_strings():
    from conformance.targets.base import REPORT_STRING_LIMIT, Exchange

    huge = "x" * (REPORT_STRING_LIMIT + 1)
    usual = {"method": "interceptor/invoke", "params": {"payload": {"text": "y" * REPORT_STRING_LIMIT}}}
    ex = Exchange(label="probe", method="interceptor/invoke", request={"params": {"payload": [huge, {"k": huge}], "n": 3}}, response=usual)
    report = ex.to_report()
    assert report["response"] == usual  # at the limit: kept whole
    kept = report["request"]["params"]
    assert kept["n"] == 3 and len(kept["payload"][0]) < 300 and kept["payload"][1]["k"] == kept["payload"][0]
    assert f"({REPORT_STRING_LIMIT + 1} characters; shortened in the report)" in kept["payload"][0]
