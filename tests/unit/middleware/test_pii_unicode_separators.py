"""pii_redaction reads every Unicode space separator (Zs) as a space and every dash (Pd) and the minus sign as "-"
(issue 32, item 5): a number written with any of them is redacted exactly when its ASCII spelling is, in the
validated path and in dense mode alike. The categories are enumerated from unicodedata, not listed by hand."""

from __future__ import annotations

import re
import sys
import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from reference_servers.middleware import pii
from reference_servers.middleware.pii.dense import _dense_at_sight
from reference_servers.middleware.textutil import detection_view

SPACES = [chr(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) == "Zs"]
DASHES = [chr(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) == "Pd"] + ["\u2212"]
# ASCII spellings whose separators are all spaces, or all dashes: each is PII in its ASCII form.
SPACED = ["415 555 2671", "4111 1111 1111 1111", "+44 20 7946 0958", "3782 822463 10005"]
DASHED = ["415-555-2671", "123-45-6789", "4111-1111-1111-1111", "+44-20-7946-0958"]
SEPARATED = st.one_of(st.tuples(st.sampled_from(SPACED), st.sampled_from(SPACES), st.just(" ")),
                      st.tuples(st.sampled_from(DASHED), st.sampled_from(DASHES), st.just("-")))


def redacted(text: str) -> str:
    return pii.pii_redaction([{"type": "text", "text": text}], {})["content"][0]["text"]


def test_the_categories_are_the_ones_the_detector_reads():
    from reference_servers.middleware.textutil import DASHES as READ_DASHES
    from reference_servers.middleware.textutil import SPACES as READ_SPACES

    assert set(READ_SPACES) == set(SPACES) - {" "} and set(READ_DASHES) == set(DASHES) - {"-"}


@settings(max_examples=300, deadline=None)
@given(SEPARATED, st.sampled_from(["call {} now", "{}", "ref: {}."]))
def test_a_number_with_unicode_separators_is_redacted_in_the_validated_path(case, frame):
    ascii_value, separator, ascii_separator = case
    value = ascii_value.replace(ascii_separator, separator)
    text = frame.format(value)
    assert value not in redacted(text), (ascii_value, f"U+{ord(separator):04X}")
    assert redacted(text).count("[") == redacted(frame.format(ascii_value)).count("[")


@settings(max_examples=60, deadline=None)
@given(SEPARATED)
def test_a_number_with_unicode_separators_is_redacted_in_dense_mode(case):
    ascii_value, separator, ascii_separator = case
    value = ascii_value.replace(ascii_separator, separator)
    text = "; ".join([value] * 300)
    assert _dense_at_sight(detection_view(text)[0])
    left = re.sub(r"\[[A-Z]+_\d+\]", "", redacted(text))  # what is not a handle
    assert not any(ch.isdigit() for ch in left), (ascii_value, f"U+{ord(separator):04X}", left[:80])
