"""pii_redaction's validation budget (issue 21, item 1): generated phone- and SSN-shaped text costs a bounded
number of library validations per kilobyte, and a spent budget fails closed.

Each distinct candidate of random digits used to be one phonenumbers parse and is_valid_number (50-100 us) or one
stdnum SSN test: a text made of them cost 200-500 times typical text. The measure here is the number of those
library calls (counted, with the caches emptied first), so it does not depend on the machine's speed; the
benchmark (bench/bench_pii_adversarial.py) prints the time ratio it comes to.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

from reference_servers import interceptors
from reference_servers.middleware import pii
from reference_servers.middleware.pii import dense, validity
from reference_servers.middleware.pii.detection import _find_pii_unbudgeted, find_pii
from reference_servers.middleware.pii.validity import _valid_phone, validation_budget

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))
from bench_pii_adversarial import FAMILIES, library_validations, shape_text  # noqa: E402

MODES = {"standard": {}, "strict": {"aggressiveness": "strict"}, "strict GB": {"aggressiveness": "strict",
                                                                               "defaultRegion": "GB"}}


@pytest.mark.parametrize("size", [300, 16_384])
@pytest.mark.parametrize("mode", MODES)
def test_every_generated_shape_stays_within_the_validation_budget(mode, size):
    over = {}
    for family in FAMILIES:
        text = shape_text(family, size, seed=3)
        calls = library_validations(lambda: pii.pii_redaction([{"type": "text", "text": text}], MODES[mode]))
        if calls > validation_budget(size):
            over[family] = calls
    assert not over, f"library validations over the budget of {validation_budget(size)}: {over}"


def test_the_budget_is_one_for_the_whole_call_not_one_per_block():
    blocks = [{"type": "text", "text": shape_text("nanp dashes", 200, seed=i)} for i in range(50)]
    calls = library_validations(lambda: pii.pii_redaction(blocks, {}))
    assert calls <= validation_budget(50 * 200)


def test_an_interceptor_call_has_one_budget_for_all_its_strings():
    payload = {"arguments": {f"k{i}": shape_text("ssn shapes", 200, seed=i) for i in range(50)}}
    for fn in (interceptors.pii_redactor, interceptors.pii_detector):
        calls = library_validations(lambda: fn(payload, "tools/call", "request", {}))
        assert calls <= validation_budget(50 * 200), fn.__name__


REAL = ["415-555-2671", "(212) 555-0199", "+44 20 7946 0958", "+1 415 555 2671", "123-45-6789", "+49 30 123456",
        "1-415-555-2671"]


@pytest.mark.parametrize("mode", MODES)
def test_a_spent_budget_fails_closed(monkeypatch, mode):
    """Past the budget a candidate is redacted unasked: every span found with validation is still found."""
    rng = random.Random(5)
    families = ["nanp dashes", "intl random cc", "ssn shapes", "bare 10-15 digits", "trunk-0 national"]
    pieces = []
    for i in range(200):
        pieces.append(shape_text(rng.choice(families), 40, seed=i) + " ")
        if i % 20 == 19:
            pieces.append(f"call {rng.choice(REAL)} now. ")
    text = "".join(pieces)
    strict, region = MODES[mode].get("aggressiveness") == "strict", MODES[mode].get("defaultRegion", "US")
    exact = {(f.start, f.end) for f in _find_pii_unbudgeted(text, strict, region)}
    monkeypatch.setattr(validity, "BASE_VALIDATIONS", 3)
    monkeypatch.setattr(validity, "CHARS_PER_VALIDATION", 10 ** 9)
    monkeypatch.setattr(dense, "_DENSE_DIGITS_BASE", 10 ** 9)  # the validated path (dense mode: test_pii_dense.py)
    monkeypatch.setattr(dense, "_DENSE_CANDIDATES_BASE", 10 ** 9)
    with validity.budgeted(len(text)) as budget:
        budgeted = find_pii(text, strict, region)
    assert budget.failed_closed > 0
    covered = {(f.start, f.end) for f in budgeted}
    missed = [text[s:e] for s, e in exact if not any(a <= s and e <= b for a, b in covered)]
    assert not missed, missed
    for value in REAL:  # each real number in the text is redacted
        assert all(any(a <= i < b for a, b in covered) for i in _occurrences(text, value)), value


def _occurrences(text: str, value: str):
    start = text.find(value)
    while start >= 0:
        yield start + len(value) // 2
        start = text.find(value, start + 1)


def test_what_a_call_redacts_does_not_depend_on_what_earlier_calls_cached(monkeypatch):
    monkeypatch.setattr(validity, "BASE_VALIDATIONS", 2)
    monkeypatch.setattr(validity, "CHARS_PER_VALIDATION", 10 ** 9)
    text = shape_text("nanp dashes", 2000, seed=9)
    _valid_phone.cache_clear()
    cold = find_pii(text)
    for value in {text[f.start:f.end] for f in cold}:  # every candidate answered by the cache now
        _valid_phone(value, "US")
    assert find_pii(text) == cold


def test_without_a_budget_the_library_is_asked_once_per_distinct_candidate(monkeypatch):
    """The generator's candidates are distinct: the bound above is the budget's doing, not the cache's."""
    text = shape_text("nanp dashes", 16_384, seed=4)
    monkeypatch.setattr(validity, "CHARS_PER_VALIDATION", 1)
    monkeypatch.setattr(dense, "_DENSE_DIGITS_BASE", 10 ** 9)  # the validated path
    monkeypatch.setattr(dense, "_DENSE_CANDIDATES_BASE", 10 ** 9)
    assert library_validations(lambda: find_pii(text)) > 1000
