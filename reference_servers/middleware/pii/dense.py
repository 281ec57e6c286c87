"""Dense mode: a text whose candidates come every few characters, read by shape in C, fail closed (see the
package docstring, "Dense texts")."""

from __future__ import annotations

import bisect
import itertools
import operator
import re
from collections import Counter
from functools import lru_cache

from ...limits import current as current_call
from ..textutil import DASHES, SPACES, drop_invisible
from .handles import HANDLE_NAME, HandleMap
from .spans import _END, _KIND, _START, Found, _found

# -- dense texts --------------------------------------------------------------------------------------
# A text whose candidates come every few characters (random digits in the groupings of phone numbers, SSNs,
# addresses, cards) cannot be validated within its budget anyway, and reading it through the detectors above
# costs 5-10 us of Python per candidate (matching, judging, validating or failing closed, resolving overlaps):
# 10-90 times typical text. Such a text is read in DENSE mode instead, by shape (_DENSE_NUMBER and its neighbours below), fail closed.
#
# The decision is made on the text alone, before anything is validated: dense if more than _DENSE_DIGIT_PERCENT
# of its characters (and _DENSE_DIGITS_BASE) are digits, counted in C (every generated adversarial shape is
# 40-90% digits; typical text, prose with a value in one sentence of four, bench_middleware_functions.mixed_text,
# about 15%); or, for shapes with fewer digits, as soon as the validated path has judged more than
# _DENSE_CANDIDATES_BASE + _DENSE_CANDIDATES_PER_KIB per KiB candidates (it then stops and the text is read in
# dense mode; typical text has about 4 per KiB, the generated shapes 40-80).
_DENSE_DIGIT_PERCENT, _DENSE_DIGITS_BASE = 30, 64
_DENSE_CANDIDATES_BASE, _DENSE_CANDIDATES_PER_KIB = 16, 12
_DIGIT_BYTES = b"0123456789"


def _dense_at_sight(view: str) -> bool:
    encoded = view.encode("utf-8", "surrogatepass")  # C: deleting bytes is much faster than counting characters
    digits = len(encoded) - len(encoded.translate(None, _DIGIT_BYTES))
    return 100 * (digits - _DENSE_DIGITS_BASE) > _DENSE_DIGIT_PERCENT * len(view)


def _candidate_allowance(chars: int) -> int:
    """How many candidates the validated path judges in a text of `chars` characters before it gives the text
    to dense mode."""
    return _DENSE_CANDIDATES_BASE + _DENSE_CANDIDATES_PER_KIB * chars // 1024


class _TooDense(Exception):
    """The validated path met more candidates than _candidate_allowance: the text is read in dense mode."""


_UNLIMITED = 1 << 62


class _Tally:
    """Candidates the validated path may still judge in the text at hand (`left`); `judged` counts them all,
    for the tests (a deterministic measure of the per-candidate Python work)."""

    __slots__ = ("left", "judged")

    def __init__(self, left: int):
        self.left, self.judged = left, 0

    def one(self) -> None:
        self.judged += 1
        self.left -= 1
        if self.left < 0:
            raise _TooDense


# Dense mode reads shapes, not detectors, with compiled splits (in C) of the text with its invisible characters
# dropped, as the detection view drops them (emails first, _DENSE_EMAIL; then _dense_pattern). Its spans are:
# - handle-shaped text (`[EMAIL_1]`), kept as a LITERAL handle as everywhere else;
# - an EMAIL of a broad shape (a run of local-part characters, "@", a run of domain characters, a dot and two or
#   more letters): it holds every address the EMAIL detector finds;
# - a NUMBER: a run of digits (a "+" or "(" before its first, a ")" after its last) with at most three separators
#   (space, dot, dash, parentheses) between two digits, of seven digits or more (every phone number, SSN and card
#   has that many), or a dotted quad (an IPv4 address has as few as four).
# A span the validated path finds is made of digits and those separators, never more than three in a row (or of
# an email's characters), so it lies inside one span of dense mode: dense mode never keeps what that path
# redacts; it redacts look-alikes and the figures around numbers too (a table of figures becomes NUMBER
# handles), which only a text that dense pays for. Offsets go back to the original text in bulk
# (_original_offsets); a span longer than _DENSE_PIECE characters (a text that is one long run of groups) is
# redacted in consecutive pieces.
# The patterns read the text itself, not the detection view (whose translation of other scripts' digits and
# fullwidth forms costs as much as the scan): a digit is any decimal digit (`\d`, the digits the view reads as
# ASCII), and each ASCII punctuation mark stands with its fullwidth form. Handle-shaped text is ASCII, as
# the validated path reads it.
def _wide(marks: str) -> str:
    """`marks` and their fullwidth forms, escaped for a character class."""
    return re.escape(marks + "".join(chr(ord(c) + 0xFEE0) for c in marks))


_DENSE_LITERAL = rf"\[{HANDLE_NAME}\]"
_LOCAL_MARKS = "%+-.'_"
_LOCAL = rf"[\w{_wide(_LOCAL_MARKS)}]"
_DENSE_EMAIL = (rf"(?<!{_LOCAL}){_LOCAL}+[{_wide('@')}][\w{_wide('-._')}]+[{_wide('.')}][^\W\d_]{{2,63}}")
_DENSE_SEP = f"[ {_wide('.-()')}{re.escape(SPACES + DASHES)}]"  # and every Unicode space and dash, as the view
_DENSE_NUMBER = (rf"[{_wide('+')}]?[{_wide('(')}]?\d(?:{_DENSE_SEP}{{0,3}}\d){{6,}}[{_wide(')')}]?"
                 rf"|(?<!\d)\d{{1,3}}(?:[{_wide('.')}]\d{{1,3}}){{3}}(?!\d)")
_DENSE_PIECE = 64


@lru_cache(maxsize=2)
def _dense_pattern(brackets: bool) -> re.Pattern:
    """The pattern of dense mode's numbers, with handle-shaped text first where the text has a "["."""
    return re.compile("(" + "|".join([_DENSE_LITERAL] * brackets + [_DENSE_NUMBER]) + ")")


_DENSE_EMAIL_RE = re.compile(f"({_DENSE_EMAIL})")


def _spans_of(parts: list[str]) -> tuple[list[int], list[int], list[str]]:
    """The starts, ends and texts of the spans of a split by a pattern with one group (gap, span, ..., gap)."""
    bounds = list(itertools.accumulate(map(len, parts)))
    return bounds[0:-1:2], bounds[1::2], parts[1::2]


def _dense_kind(value: str) -> str:
    return "LITERAL" if value[0] == "[" else "NUMBER"


def _mask(match: re.Match) -> str:
    return "\x00" * (match.end() - match.start())


def _original_offsets(breaks: list[tuple[int, int]], offsets: list[int]) -> list[int]:
    """original_offset of each of `offsets`, in bulk (bisect and addition mapped in C)."""
    keys = [(offset, float("inf")) for offset, _ in breaks]
    shift = [0, *(dropped for _, dropped in breaks)]
    where = map(bisect.bisect_right, itertools.repeat(keys), zip(offsets, itertools.repeat(float("inf"))))
    return list(map(operator.add, offsets, map(shift.__getitem__, where)))


def _find_pii_dense(text: str, view: str, breaks: list[tuple[int, int]]) -> list[Found]:
    """find_pii's answer in dense mode (see _DENSE_NUMBER): the spans come from one split of the text (its invisible
    characters dropped, as in the view), their offsets from the lengths of its parts, all in C but the kinds."""
    call = current_call()
    if call.cancelled:
        call.stop()
    base = drop_invisible(text) if breaks else text  # the view's offsets, the text's characters
    emails: list[Found] = []
    if "@" in view:  # emails first, then numbers in what is left: a number never eats into an address's local part
        starts, ends, _ = _spans_of(_DENSE_EMAIL_RE.split(base))
        if starts:
            emails = list(map(_found, zip(starts, ends, itertools.repeat("EMAIL"))))
            base = _DENSE_EMAIL_RE.sub(_mask, base)
    starts, ends, values = _spans_of(_dense_pattern("[" in base).split(base))  # in C
    if call.cancelled:
        call.stop()
    kinds = list(map(_dense_kind, values)) if "[" in base else ["NUMBER"] * len(values)
    if emails:
        spans = sorted(emails + list(map(_found, zip(starts, ends, kinds))))
        starts, ends, kinds = list(map(_START, spans)), list(map(_END, spans)), list(map(_KIND, spans))
    if breaks:  # a span keeps the invisible characters inside it, as on the validated path
        starts = _original_offsets(breaks, starts)
        ends = [end + 1 for end in _original_offsets(breaks, [end - 1 for end in ends])]
    found = list(map(_found, zip(starts, ends, kinds)))
    if found and (breaks or emails or max(map(len, values)) > _DENSE_PIECE):
        found = [piece for f in found for piece in (
            [f] if f.end - f.start <= _DENSE_PIECE else
            [_found((lo, min(lo + _DENSE_PIECE, f.end), f.kind)) for lo in range(f.start, f.end, _DENSE_PIECE)])]
    return found


def _redact_dense(text: str, handles: HandleMap, counts: dict[str, int] | None) -> str:
    """redact_text of a dense text without invisible characters or "@" (_find_pii_dense's spans), from the parts
    of the split themselves: no span objects, no slicing."""
    call = current_call()
    parts = _dense_pattern("[" in text).split(text)  # gap, span, gap, span, ..., gap
    if call.cancelled:
        call.stop()
    values = parts[1::2]
    if not values:
        return text
    if max(map(len, values)) > _DENSE_PIECE:  # a long run: as consecutive pieces, with empty gaps between
        pieces = [parts[0]]
        for value, gap in zip(values, parts[2::2]):
            for lo in range(0, len(value), _DENSE_PIECE):
                pieces += [value[lo:lo + _DENSE_PIECE], ""]
            pieces[-1] = gap
        parts, values = pieces, pieces[1::2]
    if "[" in text:
        kinds = list(map(_dense_kind, values))
        names = handles.handles_for(list(zip(kinds, values)))
    else:  # one kind: the kind's own map, no keys to build
        kinds = ["NUMBER"] * len(values)
        names = list(map(handles.handles_of("NUMBER", values).__getitem__, values))
    if counts is not None:
        for kind, n in Counter(kinds).items():
            counts[kind] = counts.get(kind, 0) + n
    pieces = zip(parts[0::2], itertools.repeat("["), names, itertools.repeat("]"))
    return "".join(itertools.chain.from_iterable(pieces)) + parts[-1]
