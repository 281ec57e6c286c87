"""pii_redaction's prefilter of long texts (Hyperscan) finds exactly what the regex scan alone finds.

Each pattern of PREFILTERS claims to be a superset of its digit-run candidates. One that was not would lose
candidates in long texts only, where nobody looks at single spans; so every text here is judged both ways, with
the prefilter forced on at any length and density, and the two answers must be equal.
"""

import json
import random
import subprocess
import sys

import pytest

from reference_servers.middleware.pii import scan
from reference_servers.middleware.pii.detection import _bounded_runs, _digit_run_candidates, find_pii
from reference_servers.middleware.pii.scan import (
    PREFILTER_MIN_CHARS,
    _candidate_starts,
    _digit_run_scanner,
    _hyperscan,
)

pytestmark = pytest.mark.skipif(_hyperscan() is None, reason="no Hyperscan wheel for this platform")

PII = ["415-555-2671", "415.555.2671", "415 555 2671", "1-415-555-2671", "1 415 555 2671", "1 (415) 555-2671",
       "(212) 555-0199", "123-45-6789", "987-65-4321", "123456789", "4111 1111 1111 1111", "4111-1111-1111-1111",
       "4111111111111111", "378282246310005", "3782 822463 10005", "192.168.1.10", "10.0.0.255", "8.8.8.8",
       "1.2.3.4", "+44 20 7946 0958", "+1 415 555 2671", "020 7946 0958", "030 123456", "14155552671", "4155552671",
       "442079460958"]
WORDS = ["SSN", "ssn:", "SSN is", "social security number", "version", "Version:", "ver.", "release ", "build",
         "order", "room", "a", "x", "_", "é", "ß", "日本", "\u0663", "\u200b", "v", "@", "'", "at"]
GLUE = ["", "", " ", " ", "  ", "-", ".", ". ", ", ", "(", ")", "+", "/", ":", ": ", "#", "\n", "_", "?", "\u00a0"]


def random_digits(rng: random.Random) -> str:
    first = rng.choice("0123456789" + "0123456" * 2)  # more 0 (trunk), 1 (NANP) and 2-6 (cards) than chance
    return first + "".join(rng.choices("0123456789", k=rng.choice([0, 1, 2, 2, 3, 3, 4, 4, 5, 8, 9, 10, 12, 13, 15,
                                                                    16, 19, 20])))


def random_text(rng: random.Random, pieces: int) -> str:
    out = []
    for _ in range(pieces):
        kind = rng.random()
        out.append(rng.choice(PII) if kind < 0.2 else rng.choice(WORDS) if kind < 0.4 else random_digits(rng))
        out.append(rng.choice(GLUE))
    return "".join(out)


def both_ways(monkeypatch, text: str, strict: bool, region: str) -> tuple[list, list]:
    """(_digit_run_candidates with the prefilter, without it)."""
    names = ("CARD",) + _bounded_runs(strict, region)
    with monkeypatch.context() as patch:
        patch.setattr(scan, "PREFILTER_MIN_CHARS", 0)
        patch.setattr(scan, "_DENSE", 1e-9)  # never too dense: the prefilter's answer is used at any density
        assert _candidate_starts(names, text) is not None
        prefiltered = _digit_run_candidates(text, strict, region)
    with monkeypatch.context() as patch:
        patch.setattr(scan, "PREFILTER_MIN_CHARS", sys.maxsize)  # the regex scan alone
        alone = _digit_run_candidates(text, strict, region)
    return prefiltered, alone


@pytest.mark.parametrize("strict", [False, True], ids=["standard", "strict"])
@pytest.mark.parametrize("region", ["US", "GB"])  # GB: national numbers with a trunk 0 are candidates too
def test_random_texts_give_the_same_spans_both_ways(monkeypatch, strict, region):
    rng = random.Random(f"{strict}{region}")
    for _ in range(600):
        text = random_text(rng, rng.randint(1, 40))
        prefiltered, alone = both_ways(monkeypatch, text, strict, region)
        assert prefiltered == alone, text


def test_a_long_mixed_text_gives_the_same_spans_both_ways(monkeypatch):
    rng = random.Random(5)
    text = random_text(rng, 40_000)
    prefiltered, alone = both_ways(monkeypatch, text, True, "GB")
    assert prefiltered == alone
    assert len(alone) > 1000  # a real test: the text is full of candidates


@pytest.mark.parametrize("text", ["1 " * 20_000, "2222 " * 8_000, "+1 " + "1 " * 20_000, "01 " + "11 " * 13_000,
                                  "1-1." * 10_000, "123-45-6789 " * 3_000, "4111 1111 1111 1111 " * 2_000],
                         ids=["digit groups", "four-digit groups", "international groups", "trunk-0 groups",
                              "mixed separators", "SSNs", "cards"])
def test_dense_texts_give_the_same_spans_both_ways(monkeypatch, text):
    prefiltered, alone = both_ways(monkeypatch, text, True, "GB")
    assert prefiltered == alone


@pytest.mark.parametrize("before", ["é", "ß", "日", "\u0663", "—", "“", "\u00a0"])
def test_a_character_beyond_ascii_before_a_number_reads_as_the_regex_engine_reads_it(monkeypatch, before):
    """A letter glued to "1 415 555 2671" makes the "1" no candidate and the "415" one; Hyperscan reports one
    start per end, so the prefilter must not take that letter for a separator."""
    text = f"call {before}1 415 555 2671 or {before}1-415-555-2671 or {before}4111 1111 1111 1111 now"
    prefiltered, alone = both_ways(monkeypatch, text, False, "US")
    assert prefiltered == alone


def test_find_pii_on_a_long_text_is_the_same_both_ways(monkeypatch):
    rng = random.Random(9)
    text = random_text(rng, 20_000) + " jane.doe@example.com [EMAIL_1]"
    assert len(text) > PREFILTER_MIN_CHARS
    with_prefilter = find_pii(text)
    monkeypatch.setattr(scan, "PREFILTER_MIN_CHARS", sys.maxsize)
    assert with_prefilter == find_pii(text)


def test_the_prefilter_steps_aside_for_short_and_dense_texts():
    names = ("CARD", "SSN", "IPV4", "NANP")
    typical = ("Call 415-555-2671 or write to jane@example.com about order 1234 of 2025-10-04. The quarterly "
               "review covered routing, pricing and the partner programme; version 3.11.7 shipped, and nothing "
               "else in this paragraph is personal, it is here to make the text realistic. " * 200)
    assert _candidate_starts(names, typical) is not None
    assert _candidate_starts(names, typical[:1_000]) is None  # short: the regex scan costs less
    assert _candidate_starts(names, "1 " * 50_000) is None  # a report every other character


@pytest.mark.parametrize("names", [("CARD", "SSN", "IPV4", "NANP"), ("CARD", "SSN", "IPV4", "NANP", "TRUNK0", "BARE")],
                         ids=["standard", "strict trunk-0"])
def test_the_first_tests_the_prefiltered_scan_leaves_out_reject_no_candidate(names):
    """At the prefilter's positions the scanner runs without its first tests (what candidates start with): only
    sound if no candidate fails them, at any position."""
    full, bare = _digit_run_scanner(names), _digit_run_scanner(names, first_tests=False)
    rng = random.Random(len(names))
    for _ in range(400):
        text = random_text(rng, rng.randint(1, 40))
        for position in range(len(text)):
            a, b = full.match(text, position), bare.match(text, position)
            assert (a.regs if a and a.lastindex else None) == (b.regs if b and b.lastindex else None), (text, position)


def test_without_hyperscan_the_regex_scan_finds_the_same(tmp_path):
    """Where the wheel is missing (the import fails) nothing breaks: long texts go through the regex scan."""
    text = random_text(random.Random(13), 6_000)
    assert len(text) > PREFILTER_MIN_CHARS
    path = tmp_path / "text.txt"
    path.write_text(text, encoding="utf-8")
    script = ("import sys, json; sys.modules['hyperscan'] = None\n"  # `import hyperscan` now raises ImportError
              "from reference_servers.middleware.pii.detection import find_pii\n"
              "from reference_servers.middleware.pii.scan import _hyperscan\n"
              f"spans = find_pii(open({str(path)!r}, encoding='utf-8').read(), True, 'GB')\n"
              "assert _hyperscan() is None\n"
              "print(json.dumps(spans))")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    assert [tuple(span) for span in json.loads(out.stdout)] == find_pii(text, True, "GB")
