"""pii_redaction on inputs built to make pattern matching slow (issue 11, item 1).

Each input is 40 KB; before the fix the phone shapes took 12 s or more there (quadratic). The bound is generous
on purpose: it guards against a quadratic blow-up, not a speed target (bench/bench_middleware_functions.py
measures the ratio to typical text).
"""

import time

import pytest

from reference_servers.middleware import pii
from reference_servers.middleware.pii import validity
from reference_servers.middleware.pii.dense import _DENSE_PIECE
from reference_servers.middleware.pii.detection import _find_pii_unbudgeted, _phones, find_pii
from reference_servers.middleware.pii.validity import _digits

SIZE = 40_000
ADVERSARIAL = {
    "international groups": "+1 " + "1 " * SIZE,
    "international dashes": "+1" + "-1" * SIZE,
    "international parentheses": "+1" + "(1)" * SIZE,
    "digit groups": "1 " * SIZE,
    "four-digit groups": "2222 " * SIZE,  # one card window per group
    "trunk-0 groups": "01 " + "11 " * SIZE,
    "apostrophe local parts": ("'a" * 127 + "@" + "b" * 255 + " ") * (SIZE // 512),
    "long local parts": ("a" * 255 + "@" + "b" * 255 + " ") * (SIZE // 512),
    "at signs": "a@" * SIZE,
    "dotted domain": "a@" + "b." * SIZE,
}


@pytest.mark.parametrize("name", ADVERSARIAL)
def test_adversarial_input_is_not_quadratic(name):
    text = ADVERSARIAL[name][:SIZE]
    started = time.perf_counter()
    pii.pii_redaction([{"type": "text", "text": text}], {"aggressiveness": "strict"})
    assert time.perf_counter() - started < 5.0


def test_phone_candidates_count_digits_a_bounded_number_of_times(monkeypatch):
    """The quadratic part was one digit count per group of an unbounded "+1 1 1 ..." run."""
    calls = []
    real = _digits
    monkeypatch.setattr(validity, "_digits", lambda text: calls.append(len(text)) or real(text))
    list(_phones("+1 " + "1 " * 5000, False, "US"))
    assert len(calls) <= 20 and max(calls) <= 64, (len(calls), max(calls))


def test_bounded_candidates_still_find_the_number_before_a_long_run():
    text = "+44 20 7946 0958 " + "1 " * 5000
    assert [text[f.start:f.end] for f in _find_pii_unbudgeted(text)] == ["+44 20 7946 0958"]
    # Half digits: dense mode, which redacts the whole run of groups, the number among them, in pieces.
    pieces = [(f.start, f.end, f.kind) for f in find_pii(text)]
    assert pieces[0] == (0, _DENSE_PIECE, "NUMBER")
    assert all(a[1] == b[0] for a, b in zip(pieces, pieces[1:])) and pieces[-1][1] == len(text.rstrip())
