"""reference_servers/httpguard.py: a body's shape judged on its bytes, before any parser, exactly as a parser sees it."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from reference_servers.httpguard import header_problem, shape_problem

# Text full of what the scan must not mistake for structure: brackets, commas, colons, quotes, backslashes.
TRICKY = st.text(alphabet=st.sampled_from(list('[]{},:"\\ab\u00e9\u2028')), max_size=12)
JSON = st.recursive(st.none() | st.booleans() | st.integers() | TRICKY,
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TRICKY, inner, max_size=4),
                    max_leaves=40)


def depth(value) -> int:
    if isinstance(value, list):
        return 1 + max(map(depth, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(depth, value.values()), default=0)
    return 0


def values(value) -> int:
    """What the scan counts: `[` and `{` once each, a comma between items, a colon per key."""
    if isinstance(value, list):
        return 1 + max(len(value) - 1, 0) + sum(map(values, value))
    if isinstance(value, dict):
        return 1 + max(len(value) - 1, 0) + len(value) + sum(map(values, value.values()))
    return 0


@settings(max_examples=400)
@given(JSON, st.integers(1, 6), st.integers(1, 40), st.booleans())
def test_the_verdict_is_the_parsers_depth_and_count(value, max_depth, max_values, ascii_only):
    body = json.dumps(value, ensure_ascii=ascii_only).encode()
    problem = shape_problem(body, max_depth, max_values)
    assert (problem is None) == (depth(value) <= max_depth and values(value) <= max_values), problem


@given(st.integers(101, 5000))
def test_deep_nesting_is_refused_however_it_is_wrapped(levels):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"a": "]]]"}}).encode()
    body = body[:-1] + b',"b":' + b"[" * levels + b"]" * levels + b"}"
    assert shape_problem(body, 100, None) == "nested deeper than 100 levels"


def test_a_long_text_with_commas_and_brackets_is_one_value():
    text = "a, b: [c] {d} \\\" " * 200_000
    assert shape_problem(json.dumps({"t": text}).encode(), 100, 10) is None


@given(st.lists(st.sampled_from([b"host", b"origin", b"content-length", b"transfer-encoding", b"accept",
                                 b"mcp-session-id", b"Origin"]), max_size=6))
def test_ambiguous_headers_are_refused(names):
    lowered = [n.lower() for n in names]
    repeated = any(lowered.count(n) > 1 for n in (b"host", b"origin", b"content-length", b"transfer-encoding"))
    both = b"content-length" in lowered and b"transfer-encoding" in lowered
    assert (header_problem([(n, b"x") for n in names]) is not None) == (repeated or both)


@given(JSON)
def test_both_ways_of_taking_strings_out_agree(value):
    from reference_servers.httpguard import _outside_strings

    body = json.dumps(value).encode()
    assert _outside_strings(body, 0) == _outside_strings(body, 1 << 30)
