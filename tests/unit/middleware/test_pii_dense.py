"""pii_redaction's dense mode (issue 21, item 1): text whose candidates come every few characters is read by one
compiled scan and its candidates redacted unvalidated, so no input shape costs more than a bounded amount of
per-candidate Python work.

The measure is deterministic: how many candidates go through the validated path's judges (_phone_ok, _ssn_ok,
_ipv4_ok, _longest_valid_prefix: the 5-10 us a candidate that made generated shapes cost 10-90 times typical
text) per KiB, counted on every generated family of bench/bench_pii_adversarial.py. Before dense mode it was
40-80 per KiB; the benchmark prints the time ratio it comes to. Dense mode may redact more than the validated
path (look-alikes), never less: every span that path finds, unbudgeted, is covered by dense mode's output.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

from reference_servers.middleware import pii
from reference_servers.middleware.pii import dense, detection, validity
from reference_servers.middleware.pii.dense import _candidate_allowance, _dense_at_sight
from reference_servers.middleware.pii.detection import _find_pii_unbudgeted, find_pii
from reference_servers.middleware.pii.handles import HandleMap
from reference_servers.middleware.textutil import detection_view

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))
from bench_middleware_functions import PII_VALUES, mixed_text  # noqa: E402
from bench_pii_adversarial import FAMILIES, REPEATED, SCRIPTS, shape_text  # noqa: E402

MODES = {"standard": {}, "strict": {"aggressiveness": "strict"},
         "strict GB": {"aggressiveness": "strict", "defaultRegion": "GB"}}
JUDGES = ("_phone_ok", "_ssn_ok", "_ipv4_ok", "_longest_valid_prefix")


def judged(monkeypatch, fn) -> int:
    """How many times `fn` has the validated path judge a candidate."""
    calls = 0
    # Wherever a judge is called from: the detectors, and the validity tests themselves (_longest_valid_prefix
    # asks _phone_ok about each prefix).
    for module, name in [(m, n) for m in (detection, validity) for n in JUDGES if hasattr(m, n)]:
        real = getattr(module, name)

        def counting(*args, _real=real, **kwargs):
            nonlocal calls
            calls += 1
            return _real(*args, **kwargs)
        monkeypatch.setattr(module, name, counting)
    try:
        fn()
    finally:
        monkeypatch.undo()
    return calls


@pytest.mark.parametrize("size", [1000, 16_384])
@pytest.mark.parametrize("mode", MODES)
def test_no_generated_shape_sends_many_candidates_through_the_validated_path(monkeypatch, mode, size):
    bound = 16 + 16 * size // 1024  # what the validated path may judge before it hands the text to dense mode
    over = {}
    for family in [*FAMILIES, REPEATED]:
        text = shape_text(family, size, seed=11)
        n = judged(monkeypatch, lambda: pii.pii_redaction([{"type": "text", "text": text}], MODES[mode]))
        if n > bound:
            over[family] = n
    assert not over, f"candidates judged one by one, over {bound} in {size} characters: {over}"


@pytest.mark.parametrize("size", [300, 1000, 10_000, 100_000])
@pytest.mark.parametrize("mode", MODES)
def test_typical_text_is_not_dense_and_redacts_as_the_validated_path_does(monkeypatch, mode, size):
    context = [{"type": "text", "text": mixed_text(size)}]
    monkeypatch.setattr(detection, "_find_pii_dense", lambda *a: pytest.fail("typical text read in dense mode"))
    out = pii.pii_redaction(context, MODES[mode])
    monkeypatch.setattr(dense, "_DENSE_DIGITS_BASE", 10 ** 9)
    monkeypatch.setattr(dense, "_DENSE_CANDIDATES_BASE", 10 ** 9)
    assert pii.pii_redaction(context, MODES[mode]) == out


def test_typical_text_keeps_its_redaction():
    """Byte for byte what the validated path gave before dense mode existed (the text of one seed, hashed)."""
    import hashlib
    out = pii.pii_redaction([{"type": "text", "text": mixed_text(20_000)}], {})
    digest = hashlib.sha256(repr(out).encode()).hexdigest()
    assert digest == TYPICAL_20K_SHA256


TYPICAL_20K_SHA256 = "bda6f73858bc3ed307cbe142ea1d630a8afec4406641ea75fc1173a9c92e77eb"  # from e477eff

INVISIBLE = ["\u200b", "\u00ad", "\u2060", "\ufeff"]


def dense_text(rng: random.Random) -> str:
    """Random families, real values, handle-shaped text, invisible characters and other scripts' digits, mixed."""
    pieces = []
    for i in range(rng.randint(20, 80)):
        piece = shape_text(rng.choice(list(FAMILIES)), rng.randint(20, 80), seed=rng.randrange(10 ** 6))
        roll = rng.random()
        if roll < 0.15:
            piece = rng.choice(PII_VALUES)
        elif roll < 0.25:
            at = rng.randrange(len(piece) + 1)
            piece = piece[:at] + rng.choice(INVISIBLE) + piece[at:]
        elif roll < 0.3:
            piece = piece.translate(str.maketrans("0123456789", rng.choice(list(SCRIPTS.values()))))
        pieces.append(piece + rng.choice([" ", "  ", ", ", "\n", "; ", "", " x "]))
    return "".join(pieces)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("mode", MODES)
def test_dense_mode_covers_every_span_the_validated_path_finds(mode, seed):
    strict, region = MODES[mode].get("aggressiveness") == "strict", MODES[mode].get("defaultRegion", "US")
    text = dense_text(random.Random(f"{mode}/{seed}"))
    view, _ = detection_view(text)
    assert _dense_at_sight(view)
    dense = find_pii(text, strict, region)
    covered = bytearray(len(text))
    for f in dense:
        covered[f.start:f.end] = b"\x01" * (f.end - f.start)
    missed = [text[f.start:f.end] for f in _find_pii_unbudgeted(text, strict, region)
              if not all(covered[f.start:f.end])]
    assert not missed, missed
    assert all(a.end <= b.start for a, b in zip(dense, dense[1:]))  # in order, not overlapping
    redacted = pii.pii_redaction([{"type": "text", "text": text}], MODES[mode])
    restored = pii.pii_restoration(redacted["content"], {"redactions": redacted["metadata"]["redactions"],
                                                         "restoreInUrls": True})
    assert restored["content"][0]["text"] == text


def test_dense_mode_keeps_handle_shaped_text_and_session_numbering():
    text = "[EMAIL_1] " + shape_text("nanp dashes", 3000, seed=1) + " [PHONE_2] 415-555-2671"
    previous = {"PHONE_1": "415-555-2671", "PHONE_7": "212-555-0199"}
    out = pii.pii_redaction([{"type": "text", "text": text}], {"redactions": previous})
    redacted, redactions = out["content"][0]["text"], out["metadata"]["redactions"]
    # Dense mode's handles are NUMBER_n, numbered on; a value the session already has keeps its handle.
    assert redacted.startswith("[LITERAL_1] [NUMBER_1]") and redacted.endswith("[LITERAL_2] [PHONE_1]")
    assert redactions["LITERAL_1"] == "[EMAIL_1]" and redactions["PHONE_7"] == "212-555-0199"


def test_dense_mode_redacts_runs_of_seven_digits_and_dotted_quads_only():
    filler = shape_text("ipv4", 2000, seed=2)
    text = (filler + " x 256.1.1.1 | 4111 1111 1111 1112 | 12.50 | 2024 | 1-2-3 | v9 | 415-555 | (0)1 23 45 67 | "
            "jane.doe@example.com x " + filler)
    found = {text[f.start:f.end]: f.kind for f in find_pii(text)}
    assert found["256.1.1.1"] == "NUMBER"  # a dotted quad, valid or not
    assert found["4111 1111 1111 1112"] == "NUMBER"  # seven digits or more, whatever the checksum
    assert found["(0)1 23 45 67"] == "NUMBER"
    assert found["jane.doe@example.com"] == "EMAIL"
    assert not {"12.50", "2024", "1-2-3", "9", "415-555"} & set(found)  # fewer than seven digits: kept


def test_a_text_with_few_marks_but_many_candidates_goes_dense_on_the_way(monkeypatch):
    """Shapes with one mark per candidate stay under the marks threshold; the validated path hands them over
    after _candidate_allowance candidates."""
    rng = random.Random(3)
    text = "".join(f"the SSN: {rng.randrange(10 ** 8, 10 ** 9)} was noted; " for _ in range(700))
    view, _ = detection_view(text)
    assert not _dense_at_sight(view)
    n = judged(monkeypatch, lambda: find_pii(text))
    assert n <= _candidate_allowance(len(text)) + 1
    covered = {(f.start, f.end) for f in find_pii(text)}
    assert all((f.start, f.end) in covered for f in _find_pii_unbudgeted(text))


@pytest.mark.parametrize("seed", range(8))
def test_dense_redaction_from_the_split_equals_redaction_from_the_spans(seed):
    """_redact_dense (the parts of the split, no span objects) writes what redact_text writes from find_pii's
    spans: the same handles, numbering and pieces."""
    rng = random.Random(f"split/{seed}")
    text = "".join(shape_text(rng.choice(list(FAMILIES)), rng.randint(50, 400), seed=rng.randrange(10 ** 6)) + " "
                   for _ in range(rng.randint(5, 30)))
    text += rng.choice(["", " [PHONE_3] ", " " + "1 " * 200])  # handle-shaped text; a run long enough for pieces
    view, breaks = detection_view(text)
    assert _dense_at_sight(view) and not breaks and "@" not in view
    previous = {"NUMBER_2": "415-555-2671"}
    fast, slow = HandleMap(previous), HandleMap(previous)
    counts_fast: dict = {}
    counts_slow: dict = {}
    out_fast = pii.redact_text(text, fast, counts=counts_fast)
    out_slow = _redact_from_spans(text, slow, counts_slow)
    assert out_fast == out_slow and fast.values == slow.values and counts_fast == counts_slow


def _redact_from_spans(text, handles, counts):
    """redact_text's span path, called directly (the dense text goes through find_pii's dense spans)."""
    import itertools
    from collections import Counter

    found = find_pii(text)
    starts, ends = [f.start for f in found], [f.end for f in found]
    keys = [(f.kind, text[f.start:f.end]) for f in found]
    distinct = list(dict.fromkeys(keys))
    tags = dict(zip(distinct, (f"[{h}]" for h in handles.handles_for(distinct))))
    for kind, n in Counter(f.kind for f in found).items():
        counts[kind] = counts.get(kind, 0) + n
    gaps = [text[a:b] for a, b in zip([0, *ends], starts)]
    return "".join(itertools.chain.from_iterable(zip(gaps, (tags[k] for k in keys)))) + text[ends[-1]:]
