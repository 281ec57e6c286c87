"""The base-protocol validators say precisely what is wrong with a message; the suite writes messages exactly."""

import json

import pytest

from conformance.core.wire import base_problems, envelope_problems, transcript_problems
from conformance.targets import WireEvent
from conformance.targets.base import json_line

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
