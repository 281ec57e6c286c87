"""PII redaction and restoration: a labelled corpus, the SEP's examples, and an exact round trip."""

import json
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reference_servers.middleware import pii

CORPUS = json.loads((Path(__file__).parent / "pii_corpus.json").read_text())
TYPES = ("EMAIL", "PHONE", "SSN", "CARD", "IPV4")


def found(text, strict=False):
    return [(m.kind, text[m.start:m.end]) for m in pii.find(text, strict)]


def precision_recall():
    tp, fp, fn = Counter(), Counter(), Counter()
    for row in CORPUS:
        want = Counter((e["type"], e["value"]) for e in row["entities"])
        got = Counter(found(row["text"]))
        for key in got | want:
            hit = min(got[key], want[key])
            tp[key[0]] += hit
            fp[key[0]] += got[key] - hit
            fn[key[0]] += want[key] - hit
    return {t: (tp[t] / max(tp[t] + fp[t], 1), tp[t] / max(tp[t] + fn[t], 1), tp[t] + fn[t]) for t in TYPES}


def test_precision_and_recall_on_the_labelled_corpus():
    scores = precision_recall()
    for kind, (precision, recall, support) in scores.items():
        print(f"{kind:<6} precision {precision:.2f} recall {recall:.2f} (n={support})")
        assert precision >= 0.95 and recall >= 0.95, kind


@pytest.mark.parametrize("text", [
    "Random digits 1234 5678 9012 3456 fail Luhn.",
    "The meeting is on 2025-10-04 at 10:30.",
    "Due 10/04/2025, see ticket 4821.",
    "Version 3.11.7 shipped",
    "SSN-like 666-12-3456 is invalid.",
    "Not an IP: 999.1.1.1",
])
def test_look_alikes_are_left_alone(text):
    assert found(text) == []


def test_sep_example_one():
    result = pii.pii_redaction([{"type": "text", "text":
                                 "Please review this contract for Jane Smith (jane@example.com, SSN: 987-65-4321)"}], {})
    assert result["content"][0]["text"] == "Please review this contract for Jane Smith ([EMAIL_1], SSN: [SSN_1])"
    assert result["metadata"]["redactions"] == {"EMAIL_1": "jane@example.com", "SSN_1": "987-65-4321"}


def test_same_value_same_handle_and_numbering_continues_across_calls():
    first = pii.pii_redaction([{"type": "text", "text": "a@b.co then c@d.co then a@b.co"}], {})
    assert first["content"][0]["text"] == "[EMAIL_1] then [EMAIL_2] then [EMAIL_1]"
    second = pii.pii_redaction([{"type": "text", "text": "c@d.co and e@f.co"}],
                               {"redactions": first["metadata"]["redactions"]})
    assert second["content"][0]["text"] == "[EMAIL_2] and [EMAIL_3]"


def test_strict_redacts_bare_numbers():
    assert found("ssn 219099999 phone 4155550100") == []
    assert found("ssn 219099999 phone 4155550100", strict=True) == [("SSN", "219099999"), ("PHONE", "4155550100")]


def test_non_text_blocks_untouched():
    image = {"type": "image", "data": "a@b.co", "mimeType": "image/png"}
    assert pii.pii_redaction([dict(image)], {})["content"] == [image]


def test_restoration_leaves_unknown_handles():
    out = pii.pii_restoration([{"type": "text", "text": "[EMAIL_1] and [PHONE_9]"}], {"redactions": {"EMAIL_1": "x@y.z"}})
    assert out["content"][0]["text"] == "x@y.z and [PHONE_9]"
    assert out["metadata"]["restored"] == 1


def test_bad_redaction_map_is_a_value_error():
    with pytest.raises(ValueError):
        pii.pii_redaction([{"type": "text", "text": "x"}], {"redactions": {"not a handle": "v"}})


pieces = st.one_of(
    st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12),
    st.sampled_from(["jane@example.com", "a.b+c@x.io", "+44 20 7946 0958", "415-555-2671", "(212) 555-0199",
                     "123-45-6789", "SSN: 987-65-4321", "4111 1111 1111 1111", "4242424242424242", "192.168.1.10",
                     "[EMAIL_1]", "[PHONE_2]", "[LITERAL_1]", "[", "]", "_1]", "[EMAIL_", " ", "-", ".", "@", "0"]),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(pieces, max_size=12), st.booleans())
def test_round_trip_is_exact(parts, strict):
    text = "".join(parts)
    redacted = pii.pii_redaction([{"type": "text", "text": text}], {"aggressiveness": "strict" if strict else "standard"})
    restored = pii.pii_restoration(redacted["content"], {"redactions": redacted["metadata"]["redactions"]})
    assert restored["content"][0]["text"] == text
