"""pii_redaction / pii_restoration: detection on realistic text, the labelled corpus, the exact round trip."""

import collections
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from stdnum import luhn

from reference_servers.middleware import pii
from reference_servers.middleware.pii.detection import find_pii
from reference_servers.middleware.pii.handles import HANDLE_RE
from reference_servers.middleware.pii.validity import _luhn_ok

CORPUS = json.loads(Path(__file__).with_name("pii_corpus.json").read_text(encoding="utf-8"))


def text(value):
    return [{"type": "text", "text": value}]


def redact(value, **arguments):
    out = pii.pii_redaction(text(value), arguments)
    return out["content"][0]["text"], out["metadata"]


def found(value, strict=False, region="US"):
    return [(f.kind, value[f.start:f.end]) for f in find_pii(value, strict, region)]


# -- detection ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("value", [
    "+44 20 7946 0958", "+1 (415) 555-2671", "415-555-2671", "+49 30 123456", "(212) 555-0199", "415.555.2671",
    "1-800-555-0199", "+44 (0)20 7946 0958", "+442079460958", "+33 1 42 68 53 00", "+81 3-1234-5678"])
def test_phone_formats_are_found(value):
    assert found(f"call {value} today") == [("PHONE", value)]


@pytest.mark.parametrize("value", [
    "2025-10-04", "10/04/2025", "04.10.2025", "3.11.7", "version 4.0.2", "2025", "in 1999", "1234567890",
    "order 48213-2291", "10:30-11:45", "ISBN 978-3-16-148410-0", "$6,400,000", "+1 is my vote", "+12 points",
    "555-123-4567"])
def test_dates_versions_years_and_order_numbers_are_not_phones(value):
    assert [k for k, _ in found(f"noted: {value}.")] == []


def test_a_trailing_number_does_not_hide_a_phone():
    assert found("+44 20 7946 0958 2025") == [("PHONE", "+44 20 7946 0958")]


def test_national_numbers_follow_default_region():
    assert found("ring 020 7946 0958 now") == []  # default region US: a UK national number is not recognised
    assert found("ring 020 7946 0958 now", region="GB") == [("PHONE", "020 7946 0958")]
    assert found("am 04.10.2025 in Berlin", region="DE") == []  # a date, though it parses as a German number
    _, meta = redact("ring 030 123456", defaultRegion="DE")
    assert meta["redactions"] == {"PHONE_1": "030 123456"}
    with pytest.raises(ValueError, match="defaultRegion"):
        redact("x", defaultRegion="ZZ")


@pytest.mark.parametrize("value", ["123-45-6789", "234-56-7890", "567-89-0123"])
def test_valid_ssns_are_found(value):
    assert found(f"ssn on file {value} ok") == [("SSN", value)]


@pytest.mark.parametrize("value", ["000-12-3456", "666-12-3456", "912-34-5678", "123-00-4567", "123-45-0000",
                                   "078-05-1120", "123-45-67890", "1234-56-789"])
def test_invalid_ssns_are_not_redacted(value):
    assert found(f"number {value} here") == []


def test_labelled_ssns_are_redacted_even_outside_the_ssa_ranges():
    assert found("SSN: 987-65-4321") == [("SSN", "987-65-4321")]
    assert found("Her social security number is 912345678.") == [("SSN", "912345678")]
    assert found("ssn#123456789") == [("SSN", "123456789")]


@pytest.mark.parametrize("value", ["4111 1111 1111 1111", "4111-1111-1111-1111", "4111111111111111",
                                   "5555 5555 5555 4444", "3782 822463 10005", "6011111111111117",
                                   "2223 0031 2200 3222", "4012888888881881"])
def test_valid_test_cards_are_redacted(value):
    assert found(f"pay with {value}, thanks") == [("CARD", value)]


@pytest.mark.parametrize("value", ["4111 1111 1111 1112", "1234 5678 9012 3456", "0000 0000 0000 0000",
                                   "4111 1111-1111 1111", "41 11 11 11 11 11 11 11", "411111111111111111111"])
def test_card_like_numbers_failing_luhn_or_grouping_are_not_redacted(value):
    assert [k for k, _ in found(f"ref {value} end")] == []


def test_random_digit_runs_are_rarely_cards():
    runs = [f"{(n * 7919 + 104729) % 10**16:016d}" for n in range(1, 2001)]
    hits = sum(1 for run in runs if found(f"order {run}"))
    expected = sum(1 for run in runs if luhn.is_valid(run) and run[0] in "23456")
    assert hits == expected and hits < 0.06 * len(runs)


def test_a_card_inside_a_longer_digit_run_of_groups():
    assert found("codes 12 4111 1111 1111 1111 done") == [("CARD", "4111 1111 1111 1111")]


@pytest.mark.parametrize("value, want", [
    ("ref 1234 5678 9012 415 555.2671", ("PHONE", "415 555.2671")),
    ("ref 4111 1111 1111 1 (415) 555-2671", ("PHONE", "1 (415) 555-2671")),
    ("call 2222 1-415-555-2671 now", ("PHONE", "1-415-555-2671")),
    ("ids 1234 5678 123-45-6789 5", ("SSN", "123-45-6789"))])
def test_a_phone_or_ssn_starting_inside_a_run_of_digit_groups(value, want):
    """The scan skips over a run of groups that could hold a card; what starts inside it is still found."""
    assert found(value) == [want]


@pytest.mark.parametrize("value, want", [
    ("10.20.30.40", True), ("255.255.255.255", True), ("0.0.0.0", True), ("999.1.1.1", False),
    ("256.1.1.1", False), ("01.2.3.4", False), ("1.2.3", False), ("1.2.3.4.5", False), ("v1.2.3.4", False),
    ("version 1.2.3.4", False), ("release: 1.2.3.4", False), ("Build:1.2.3.4", False), ("ver. 1.2.3.4", False),
    ("version  1.2.3.4", False), ("server 1.2.3.4", True)])
def test_ipv4(value, want):
    assert bool(found(f"host {value}.")) is want


def test_emails():
    assert found("mail o'neill@mail.example.ie.") == [("EMAIL", "o'neill@mail.example.ie")]
    assert found("'jane@example.com'") == [("EMAIL", "jane@example.com")]
    assert found("@jane and jane@localhost and a@b") == []
    assert found("josé@exemplo.com.br") == [("EMAIL", "josé@exemplo.com.br")]


def test_strict_adds_bare_ssns_and_bare_phones_only():
    value = "ids 123456789 and 4155552671 and 442079460958 and 1234567890"
    assert found(value) == []
    assert found(value, strict=True) == [("SSN", "123456789"), ("PHONE", "4155552671"), ("PHONE", "442079460958")]
    assert found("id 912345678", strict=True) == []  # bare runs must pass the SSA rules


def test_overlaps_longest_then_earliest():
    # the card (16 digits) beats the strict-mode bare phone reading of a part of it
    assert found("5555555555554444", strict=True) == [("CARD", "5555555555554444")]
    # an email's domain is not also an IP, a phone inside an email is not separate
    assert found("x@10.0.0.1.example.com +1 415-555-2671@example.com") == [
        ("EMAIL", "x@10.0.0.1.example.com"), ("EMAIL", "415-555-2671@example.com")]


# -- handles, the session map, restoration -------------------------------------------------------------------
def test_the_seps_example_one_and_two():
    redacted, meta = redact("Please review this contract for Jane Smith (jane@example.com, SSN: 987-65-4321)")
    assert redacted == "Please review this contract for Jane Smith ([EMAIL_1], SSN: [SSN_1])"
    assert meta == {"redactions": {"EMAIL_1": "jane@example.com", "SSN_1": "987-65-4321"},
                    "counts": {"EMAIL": 1, "SSN": 1}}
    back = pii.pii_restoration(text("I've reviewed it. Please send it to [EMAIL_1]."), {"redactions": meta["redactions"]})
    assert back["content"] == text("I've reviewed it. Please send it to jane@example.com.")
    assert back["metadata"] == {"restored": 1}


def test_same_value_same_handle_and_numbering_per_type():
    redacted, meta = redact("a@x.io b@x.io a@x.io 10.0.0.1 a@x.io")
    assert redacted == "[EMAIL_1] [EMAIL_2] [EMAIL_1] [IPV4_1] [EMAIL_1]"
    assert meta["counts"] == {"EMAIL": 4, "IPV4": 1}


def test_handles_stay_stable_across_calls_with_the_map_passed_back():
    first, meta1 = redact("a@x.io and 10.0.0.1")
    second, meta2 = redact("b@x.io, a@x.io", redactions=meta1["redactions"])
    assert second == "[EMAIL_2], [EMAIL_1]"
    assert meta2["redactions"] == {"EMAIL_1": "a@x.io", "IPV4_1": "10.0.0.1", "EMAIL_2": "b@x.io"}
    both = pii.pii_restoration(text(first + " | " + second), {"redactions": meta2["redactions"]})
    assert both["content"][0]["text"] == "a@x.io and 10.0.0.1 | b@x.io, a@x.io"
    # numbering continues after the highest number of the type, whatever the order of the map
    _, meta3 = redact("c@x.io", redactions={"EMAIL_7": "z@x.io", "EMAIL_2": "y@x.io"})
    assert meta3["redactions"]["EMAIL_8"] == "c@x.io"


def test_user_typed_handles_survive_the_round_trip():
    original = "Template: [EMAIL_1] and [LITERAL_1] then the real jane@example.com and [EMAIL_1]"
    redacted, meta = redact(original)
    assert redacted == "Template: [LITERAL_1] and [LITERAL_2] then the real [EMAIL_1] and [LITERAL_1]"
    assert meta["redactions"]["LITERAL_1"] == "[EMAIL_1]"
    back = pii.pii_restoration(text(redacted), {"redactions": meta["redactions"]})
    assert back["content"][0]["text"] == original


def test_restoration_leaves_unknown_handles_and_reports_them():
    out = pii.pii_restoration(text("[EMAIL_1] [PHONE_9] [PHONE_9] [not a handle] [email_1]"),
                              {"redactions": {"EMAIL_1": "a@x.io"}})
    assert out["content"][0]["text"] == "a@x.io [PHONE_9] [PHONE_9] [not a handle] [email_1]"
    assert out["metadata"] == {"restored": 1, "unknownHandles": ["PHONE_9"]}


def test_non_text_blocks_pass_through_untouched_and_input_is_not_mutated():
    image = {"type": "image", "data": "QUJD", "mimeType": "image/png", "annotations": {"note": "jane@example.com"}}
    resource = {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "jane@example.com"}}
    link = {"type": "resource_link", "uri": "file:///b", "name": "b"}
    block = {"type": "text", "text": "mail jane@example.com", "_meta": {"k": 1}}
    context = [image, block, resource, link]
    snapshot = json.dumps(context)
    out = pii.pii_redaction(context, {})
    assert out["content"][0] is image and out["content"][2] is resource and out["content"][3] is link
    assert out["content"][1] == {"type": "text", "text": "mail [EMAIL_1]", "_meta": {"k": 1}}
    assert json.dumps(context) == snapshot


@pytest.mark.parametrize("arguments, match", [
    ({"aggressiveness": "extreme"}, "aggressiveness"),
    ({"redactions": {"email_1": "x"}}, "handle name"),
    ({"redactions": {"EMAIL_1": 5}}, "string"),
    ({"redactions": ["EMAIL_1"]}, "object"),
])
def test_bad_arguments_are_value_errors(arguments, match):
    with pytest.raises(ValueError, match=match):
        pii.pii_redaction(text("x"), arguments)


def test_restoration_requires_the_map():
    with pytest.raises(ValueError, match="redactions"):
        pii.pii_restoration(text("[EMAIL_1]"), {})


# -- the labelled corpus --------------------------------------------------------------------------------------
def test_corpus_precision_and_recall_per_type(capsys):
    tp, fp, fn = collections.Counter(), collections.Counter(), collections.Counter()
    mistakes = []
    for row in CORPUS:
        got = collections.Counter(item for item in found(row["text"]) if item[0] != "LITERAL")
        want = collections.Counter((e["type"], e["value"]) for e in row["entities"])
        for (kind, _), n in (got & want).items():
            tp[kind] += n
        for (kind, value), n in (got - want).items():
            fp[kind] += n
            mistakes.append(f"false positive {kind} {value!r} in {row['text']!r}")
        for (kind, value), n in (want - got).items():
            fn[kind] += n
            mistakes.append(f"missed {kind} {value!r} in {row['text']!r}")
    lines = [f"{'type':<6} {'tp':>3} {'fp':>3} {'fn':>3} {'precision':>9} {'recall':>7}"]
    worst = 1.0
    for kind in ("EMAIL", "PHONE", "SSN", "CARD", "IPV4"):
        precision = tp[kind] / (tp[kind] + fp[kind]) if tp[kind] + fp[kind] else 1.0
        recall = tp[kind] / (tp[kind] + fn[kind]) if tp[kind] + fn[kind] else 1.0
        worst = min(worst, precision, recall)
        lines.append(f"{kind:<6} {tp[kind]:>3} {fp[kind]:>3} {fn[kind]:>3} {precision:>9.3f} {recall:>7.3f}")
    with capsys.disabled():
        print(f"\nPII corpus: {len(CORPUS)} lines, {sum(len(r['entities']) for r in CORPUS)} entities")
        print("\n".join(lines))
    assert len(CORPUS) >= 60
    assert all(tp[k] >= 5 for k in ("EMAIL", "PHONE", "SSN", "CARD", "IPV4")), tp
    assert worst >= 0.95, "\n".join(mistakes)


# -- the round trip, property-tested ---------------------------------------------------------------------------
def _luhn_complete(prefix: str) -> str:
    return prefix + luhn.calc_check_digit(prefix)


digits = st.text("0123456789", min_size=1, max_size=1)
emails = st.builds(lambda user, host, tld: f"{user}@{host}.{tld}",
                   st.from_regex(r"[a-z0-9][a-z0-9_+-]{0,6}(?:[.'][a-z0-9_+-]{1,5}){0,2}", fullmatch=True),
                   st.from_regex(r"[a-z][a-z0-9-]{0,8}[a-z0-9]", fullmatch=True), st.sampled_from(["com", "io", "co.uk"]))
phones = st.one_of(
    st.sampled_from(["+44 20 7946 0958", "+1 (415) 555-2671", "415-555-2671", "+49 30 123456", "(212) 555-0199"]),
    st.from_regex(r"\+[1-9][0-9]{0,2}( [0-9]{2,4}){2,4}", fullmatch=True),
    st.from_regex(r"\(?[2-9][0-9]{2}\)?[ .-][2-9][0-9]{2}[ .-][0-9]{4}", fullmatch=True))
ssns = st.from_regex(r"[0-9]{3}-[0-9]{2}-[0-9]{4}", fullmatch=True)
cards = st.builds(lambda p, sep: sep.join(_luhn_complete(p)[i:i + 4] for i in range(0, 16, 4)),
                  st.from_regex(r"[2-6][0-9]{14}", fullmatch=True), st.sampled_from(["", " ", "-"]))
ips = st.builds(lambda a, b, c, d: f"{a}.{b}.{c}.{d}", *[st.integers(0, 300)] * 4)
handles = st.one_of(st.from_regex(r"\[[A-Z][A-Z0-9]{0,6}_[0-9]{1,3}\]", fullmatch=True),
                    st.sampled_from(["[EMAIL_1]", "[LITERAL_1]", "[SSN_1]", "[PHONE_2]", "[EMAIL_1", "EMAIL_1]",
                                     "[[EMAIL_1]]", "[EMAIL_01]", "[ EMAIL_1 ]"]))
noise = st.one_of(st.text(max_size=12), st.sampled_from([" ", "\n", ", ", ".", "(", ")", "-", "+", "@", "[", "]",
                                                         "é", "日本", "👩‍💻", "\u200b", "SSN: ", "version "]))
pieces = st.lists(st.one_of(emails, phones, ssns, cards, ips, handles, noise, noise), max_size=25)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(blocks=st.lists(pieces.map("".join), min_size=1, max_size=3), strict=st.booleans(),
       seed=st.dictionaries(st.sampled_from(["EMAIL_1", "PHONE_3", "LITERAL_2", "CARD_1"]), emails, max_size=2))
def test_redaction_then_restoration_is_exact(blocks, strict, seed):
    context = [{"type": "text", "text": b} for b in blocks]
    out = pii.pii_redaction(context, {"aggressiveness": "strict" if strict else "standard", "redactions": seed})
    redactions = out["metadata"]["redactions"]
    assert set(seed.items()) <= set(redactions.items())
    for block in out["content"]:  # after redaction, the only handle-shaped text is handles the map defines
        assert all(m.group(1) in redactions for m in HANDLE_RE.finditer(block["text"]))
    everywhere = {"redactions": redactions, "restoreInUrls": True}  # the input may hold URLs with PII in them
    back = pii.pii_restoration(out["content"], everywhere)
    assert [b["text"] for b in back["content"]] == blocks
    # redacting twice and restoring twice also gets the input back
    again = pii.pii_redaction(out["content"], {"redactions": redactions})
    once = pii.pii_restoration(again["content"], {"redactions": again["metadata"]["redactions"],
                                                  "restoreInUrls": True})
    twice = pii.pii_restoration(once["content"], everywhere)
    assert [b["text"] for b in twice["content"]] == blocks


@settings(max_examples=100, deadline=None)
@given(value=st.one_of(emails, cards), before=st.sampled_from([" ", "\n", "(", ": "]),
       after=st.sampled_from([" ", ".", ")", ", "]))
def test_generated_emails_and_cards_are_always_redacted(value, before, after):
    redacted, meta = redact(f"x{before}{value}{after}y")
    assert value not in redacted and value in meta["redactions"].values()


def test_the_luhn_check_agrees_with_stdnum():
    import random

    from stdnum import luhn

    rng = random.Random(5)
    numbers = ["4111111111111111", "4111111111111112", "378282246310005", "0", "18"]
    numbers += ["".join(rng.choice("0123456789") for _ in range(rng.randint(1, 19))) for _ in range(5000)]
    assert [_luhn_ok(n) for n in numbers] == [luhn.is_valid(n) for n in numbers]
