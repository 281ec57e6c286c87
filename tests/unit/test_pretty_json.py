"""The reports' indented JSON (conformance/report/pretty.py) is the standard library's: the same text, a float's
spelling aside, and exactly its text where orjson cannot write a value."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.report import pretty
from conformance.report.pretty import pretty_json

SCALARS = (st.none() | st.booleans() | st.integers(min_value=-(1 << 70), max_value=1 << 70)
           | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8))
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.text(max_size=5), inner, max_size=4), max_leaves=12)


def _has_float(value) -> bool:
    if isinstance(value, float):
        return True
    if isinstance(value, dict):
        return any(_has_float(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_float(v) for v in value)
    return False


@settings(max_examples=500, deadline=None)
@given(VALUES, st.booleans())
def test_pretty_json_is_the_standard_librarys_indented_text(value, sort_keys):
    expected = json.dumps(value, indent=2, ensure_ascii=False, sort_keys=sort_keys, default=str)
    got = pretty_json(value, sort_keys=sort_keys)
    assert json.loads(got) == json.loads(expected)
    if not _has_float(value):
        assert got == expected


def test_what_orjson_refuses_or_lacks_takes_the_standard_path(monkeypatch):
    for value in ({"big": 1 << 70}, {"lone": "\ud800"}, {1: "an integer key"}, {"set": {1}}):
        assert pretty_json(value) == json.dumps(value, indent=2, ensure_ascii=False, default=str)
    monkeypatch.setattr(pretty, "orjson", None)
    assert pretty_json({"a": [1.0, "é"]}) == json.dumps({"a": [1.0, "é"]}, indent=2, ensure_ascii=False)
