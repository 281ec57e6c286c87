"""The detectors and find_pii: each a candidate pattern plus a validity test (see the package docstring for
what is found).

Hand-written detection, on purpose. The libraries that find PII in free text
either load NLP models at run time (Presidio needs a spaCy model download,
which this deployment cannot do) or pull in large dependency trees for
categories we do not need (scrubadub), and none promises the exact round trip.
`phonenumbers.PhoneNumberMatcher` finds phone numbers in text but takes
seconds per 100 KB in pure Python; here it is only used to validate the few
candidates the patterns find. Validity itself comes from a library wherever
one answers the question: phonenumbers (phones), python-stdnum (SSN rules,
Luhn), ipaddress (IPv4). Emails are the exception: email-validator decides
whether an address is acceptable to sign up with (it rejects special-use
domains such as .local or .test, for instance), which is not the question
here: an address-shaped string someone wrote is redacted either way.
"""

from __future__ import annotations

import itertools
import operator
import re
from functools import lru_cache

import phonenumbers

from ...limits import current as current_call
from ..textutil import detection_view, original_offset
from .dense import _UNLIMITED, _candidate_allowance, _dense_at_sight, _find_pii_dense, _Tally, _TooDense
from .handles import HANDLE_RE
from .scan import (
    _ANY_DIGIT_RE,
    _LONGEST_BOUNDED_RUN,
    PHONE_INTL_RE,
    PHONE_NANP_PAREN_RE,
    PHONE_TRUNK0_PAREN_RE,
    _digit_run_scanner,
    _scan_matches,
)
from .spans import _END, _START, Found, _found, _merge_overlaps, _resolve_overlaps
from .validity import (
    _LUHN_DOUBLED,
    _SSN_LABEL_LAST,
    _budgets,
    _ends_like_label,
    _ipv4_ok,
    _longest_valid_prefix,
    _luhn_ok,
    _phone_ok,
    _ssn_valid,
    budgeted,
)

SSN_LABEL_BEFORE_RE = re.compile(
    r"(?i:\b(?:ssn|social[ \-]security(?:[ \-](?:number|no\.?|#))?)(?![\w]))"
    r"[ \t]*[:#=]?[ \t]*(?:(?i:is|was)[ \t]+)?$")

_CARD_GROUPINGS = {(4, 6, 5), (4, 6, 4)}
# Digits as "d" and dashes as spaces: the groups of a digit run, for C-speed substring tests ("dddd" in ...)
# where a regex would stop at every digit of a long run.
_SHAPE = str.maketrans("0123456789-", "dddddddddd ")
# Where a card can start in a run of groups: a 2-6 beginning a 4-digit group or a 13-19 digit one.
_CARD_START_RE = re.compile(r"(?<![0-9])[2-6](?:[0-9]{3}|[0-9]{12,18})(?![0-9])")


# -- detectors -------------------------------------------------------------------------------------
EMAIL_RE = re.compile(
    r"(?<![\w%+.\-])"
    r"[\w%+\-]+(?:[.'][\w%+\-]+)*"
    r"@"
    r"(?:[^\W_](?:[^\W_]|-)*\.)+[^\W\d_]{2,63}"
    r"(?![\w\-])")
_EMAIL_LOCAL_CHARS = frozenset("%+-.'")
_EMAIL_LOCAL_RE = re.compile(r"(?<![\w%+.\-])[\w%+\-]+(?:[.'][\w%+\-]+)*@")
# "@" and a domain: labels cannot contain a dot, so backtracking is linear in the domain's length. A label's
# letters and digits are one repeat, hyphens start the next (the same strings as `(?:[^\W_]|-)*`, tried in the
# same order, without a group repeat at every character).
_EMAIL_AT_DOMAIN_RE = re.compile(r"@(?:[^\W_][^\W_]*(?:-[^\W_]*)*\.)+[^\W\d_]{2,63}(?![\w\-])")
_EMAIL_LOCAL_RUN_RE = re.compile(r"[\w%+\-.']*")  # the characters the left scan in _emails walks over
_DOUBLE_SEPARATOR_RE = re.compile(r"[.'](?=[.'])")
_MAX_LOCAL, _MAX_DOMAIN = 256, 255  # RFC 5321 allows 64 and 255; the local bound is generous on purpose


def _email_start(text: str, left: int, at: int) -> int:
    """Where EMAIL_RE's leftmost match ending at the "@" `at` starts, given the run of local characters from `left`.

    A match starts at `left` or right after an apostrophe (the only local character the lookbehind allows before
    it), and after the last doubled separator; so one look suffices instead of one regex match per position.
    """
    if at == left or text[at - 1] in ".'":
        return -1
    lowest = left
    for m in _DOUBLE_SEPARATOR_RE.finditer(text, left, at):
        lowest = m.start() + 1
    start = lowest
    while start < at:
        if (start == left or text[start - 1] == "'") and _EMAIL_LOCAL_RE.match(text, start, at + 1):
            return start
        apostrophe = text.find("'", start, at)
        if apostrophe < 0:
            return -1
        start = apostrophe + 1
    return -1


def _emails(text: str):
    """EMAIL_RE's matches, found from "@" + domain matches (in C) and one bounded look at each local part."""
    done = 0  # matches never overlap: nothing before the end of the previous one is looked at again
    call = current_call()
    for domain in _EMAIL_AT_DOMAIN_RE.finditer(text):
        if call.cancelled:
            call.stop()
        at = domain.start()
        if at < done or domain.end() - at - 1 > _MAX_DOMAIN:
            continue
        # The run of local characters before the "@", back to `done` and at most _MAX_LOCAL long: usually what
        # follows the last space, which one test in C confirms; otherwise character by character.
        lowest = max(done, at - _MAX_LOCAL)
        left = text.rfind(" ", lowest, at) + 1 or lowest
        if _EMAIL_LOCAL_RE.fullmatch(text, left, at + 1):  # the usual case: the whole run is the local part
            start = left
        else:
            if not _EMAIL_LOCAL_RUN_RE.fullmatch(text, left, at):
                left = at
                while left > lowest and (text[left - 1].isalnum() or text[left - 1] == "_"
                                         or text[left - 1] in _EMAIL_LOCAL_CHARS):
                    left -= 1
            start = _email_start(text, left, at)
        if start >= 0:
            yield _found((start, domain.end(), "EMAIL"))
            done = domain.end()


def _trunk0(region: str) -> bool:
    return phonenumbers.ndd_prefix_for_region(region, True) == "0"


def _phones(text: str, strict: bool, region: str, tally: _Tally | None = None):
    """The phone candidates that do not start a digit run: international ones and those in parentheses."""
    tally = tally or _Tally(_UNLIMITED)
    call = current_call()
    if "+" in text:
        for m in _counted(PHONE_INTL_RE.finditer(text), call, tally):
            n = _longest_valid_prefix(m.group(), None)
            if n:
                yield _found((m.start(), m.start() + n, "PHONE"))
    if "(" in text:
        for m in _counted(PHONE_NANP_PAREN_RE.finditer(text), call, tally):
            if _phone_ok(m.group(), "US"):
                yield _found((m.start(), m.end(), "PHONE"))
        if _trunk0(region):
            for m in _counted(PHONE_TRUNK0_PAREN_RE.finditer(text), call, tally):
                n = _longest_valid_prefix(m.group(), region)
                if n:
                    yield _found((m.start(), m.start() + n, "PHONE"))


def _counted(matches, call, tally: _Tally):
    """Each match, counted against the tally, after stopping if the call was cancelled meanwhile."""
    for m in matches:
        if call.cancelled:
            call.stop()
        tally.one()
        yield m


def _ssn_ok(text: str, start: int, value: str, strict: bool) -> bool:
    # The cached validity test first: a label needs looking for only where the number alone does not count.
    if len(value) == 11:  # ###-##-####
        if _ssn_valid(value):
            return True
    elif strict and (start == 0 or text[start - 1] not in "+.") and _ssn_valid(value):
        return True
    lo = max(0, start - 48)
    return _ends_like_label(text, lo, start, ":#=", _SSN_LABEL_LAST) and \
        SSN_LABEL_BEFORE_RE.search(text, lo, start) is not None


_SHORT_RUN = 64  # runs up to this long are cached (a card with its neighbours); longer ones are rare and unique


def _card_run(run: str, trunk0: bool) -> tuple[tuple[int, int] | None, bool, bool]:
    """What _digit_run_candidates needs to know of a CARD run: where its longest, then earliest, card is (or
    None); whether a bounded detector may start at one of its groups after the first; and whether it ends in a
    group "1" (which, before " (", starts `1 (415) ...`)."""
    return _short_card_run(run, trunk0) if len(run) <= _SHORT_RUN else _find_card_run(run, trunk0)


@lru_cache(maxsize=8192)
def _short_card_run(run: str, trunk0: bool) -> tuple[tuple[int, int] | None, bool, bool]:
    return _find_card_run(run, trunk0)


def _find_card_run(run: str, trunk0: bool) -> tuple[tuple[int, int] | None, bool, bool]:
    # The scan goes on after the run; the bounded detectors still look at the groups inside it that one of them
    # can start with: 3 digits (SSN, NANP, and `1-415-...` has one), 9 or more (bare SSNs and phones), or a "0"
    # (trunk-0 numbers). Substring tests, in C.
    groups = run.replace("-", " ")
    shape = f"{groups} ".translate(_SHAPE)
    look_inside = " ddd " in shape or " ddddddddd" in shape or (trunk0 and " 0" in groups)
    return _find_card_in_run(run), look_inside, groups.endswith(" 1")


def _find_card_in_run(run: str) -> tuple[int, int] | None:
    if run.isdigit():  # one group (the scanner lets through only 13-19 digits starting with 2-6)
        return (0, len(run)) if _luhn_ok(run) else None
    shape = f" {run.translate(_SHAPE)} "
    if " dddd " not in shape and "d" * 13 not in shape or not _CARD_START_RE.search(run):
        return None  # the first test in C, for long runs of short groups; the second exact
    count, extra = divmod(len(run) + 1, 5)
    if not extra and shape == " " + "dddd " * count and len(set(run[4::5])) == 1:
        # 4-digit groups with one kind of separator, tested in C: a long run of them needs no split
        return _card_in_four_digit_groups(run.replace(run[4], ""), range(0, len(run), 5))
    parts = re.split(r"([ \-])", run)
    groups, seps = parts[0::2], parts[1::2]
    lengths = [len(g) for g in groups]
    digits = "".join(groups)
    offsets, doffsets, pos, dpos = [], [], 0, 0  # each group's start in the run, and in `digits`
    for n in lengths:
        offsets.append(pos)
        doffsets.append(dpos)
        pos, dpos = pos + n + 1, dpos + n
    doffsets.append(dpos)
    one_separator = len(set(seps)) <= 1  # then no window mixes separators, and none needs the test
    best = None  # (start, end) of the longest, then earliest, valid sub-run of whole groups
    for i, first_len in enumerate(lengths):
        if first_len != 4 and not 13 <= first_len <= 19 or digits[doffsets[i]] not in "23456":
            continue  # every card grouping starts with a 4-digit group, or is one run of 13-19 digits
        for j in range(i, min(i + 5, len(lengths))):
            count = doffsets[j + 1] - doffsets[i]
            if count > 19:
                break
            if count < 13 or not (one_separator or len(set(seps[i:j])) <= 1):
                continue
            window = tuple(lengths[i:j + 1])
            if (j == i or window in _CARD_GROUPINGS or (all(n == 4 for n in window[:-1]) and window[-1] <= 4)) \
                    and _luhn_ok(digits[doffsets[i]:doffsets[j + 1]]):
                first, last = offsets[i], offsets[j] + lengths[j]
                if best is None or (last - first, -first) > (best[1] - best[0], -best[0]):
                    best = (first, last)
    return best


_DIGIT_VALUES = bytes.maketrans(b"0123456789", bytes(range(10)))


def _card_in_four_digit_groups(digits: str, offsets: range) -> tuple[int, int] | None:
    """The earliest card in a run of 4-digit groups: only four whole groups (16 digits) can be one. Every window
    starts at an even index of `digits`, so the digits Luhn doubles are the even-indexed ones for all of them,
    and one running sum checks every window (a run of thousands of groups costs what typical text does). The
    sums, window totals and their remainders are worked out in C; Python looks only at windows whose Luhn sum
    is a multiple of 10."""
    doubled = digits[0::2].translate(_LUHN_DOUBLED)
    weights = bytearray(len(digits))
    weights[0::2], weights[1::2] = doubled.encode(), digits[1::2].encode()
    sums = [0, *itertools.accumulate(weights.translate(_DIGIT_VALUES))]
    # window i (groups i to i + 3) is digits 4i to 4i + 15: remainders[i] is its Luhn sum mod 10
    remainders = bytes(map((10).__rmod__, map(operator.sub, sums[16::4], sums[0::4])))
    i = remainders.find(0)
    while i >= 0:
        if digits[4 * i] in "23456":
            return offsets[i], offsets[i + 3] + 4
        i = remainders.find(0, i + 1)
    return None


def _judge_runs(m: re.Match, names: tuple[str, ...], done: list[int], text: str, strict: bool, region: str,
                out: list[Found], tally: _Tally) -> None:
    """Adds the candidates of a _digit_run_scanner match for the bounded detectors `names` (its groups from
    the second on) to `out`, each taken as its own pattern's finditer would give them: one starting inside the
    previous candidate of that detector (`done`, by position in `names`) is skipped."""
    start = m.start()
    regs = m.regs
    first = len(regs) - len(names)  # the group of names[0]
    # m.lastindex is the highest group set (the lookaheads set them in order): none after it needs a look, and
    # none of `names` is set where it comes before `first` (a CARD run alone).
    for i in range(m.lastindex - first + 1):
        end = regs[first + i][1]
        if end < 0 or start < done[i]:
            continue
        done[i] = end
        tally.one()
        name = names[i]
        value = text[start:end]
        if name == "SSN":
            if _ssn_ok(text, start, value, strict):
                out.append(_found((start, end, "SSN")))
        elif name == "IPV4":
            if _ipv4_ok(value, text, start):
                out.append(_found((start, end, "IPV4")))
        elif name == "NANP":
            if _phone_ok(value, "US"):
                out.append(_found((start, end, "PHONE")))
        elif name == "TRUNK0":
            n = _longest_valid_prefix(value, region)
            if n:
                out.append(_found((start, start + n, "PHONE")))
        elif _phone_ok(value, region) or _phone_ok("+" + value, None):  # BARE
            out.append(_found((start, end, "PHONE")))


def _bounded_runs(strict: bool, region: str) -> tuple[str, ...]:
    """The DIGIT_RUNS besides CARD that a call looks for: trunk-0 numbers only for regions that have them, bare
    runs only in strict mode."""
    return ("SSN", "IPV4", "NANP") + (("TRUNK0",) if _trunk0(region) else ()) + (("BARE",) if strict else ())


def _digit_run_candidates(text: str, strict: bool, region: str, tally: _Tally | None = None) -> list[Found]:
    """Cards, SSNs, IPv4 addresses and the phones that start a digit run, from one scan (_digit_run_scanner)."""
    tally = tally or _Tally(_UNLIMITED)
    bounded = _bounded_runs(strict, region)
    trunk0 = "TRUNK0" in bounded
    done = [0] * len(bounded)
    inside = _digit_run_scanner(bounded)
    out: list[Found] = []
    names = ("CARD",) + bounded
    call = current_call()  # stopped between two matches when the call is cancelled (reference_servers/limits.py)
    for m in _scan_matches(names, text):
        if call.cancelled:
            call.stop()
        _judge_runs(m, bounded, done, text, strict, region, out, tally)
        start, end = m.span()
        if m.regs[1][1] < 0:  # no CARD run
            continue
        card, look_inside, last_one = _card_run(text[start:end], trunk0)
        if card:
            out.append(_found((start + card[0], start + card[1], "CARD")))
        if look_inside or (last_one and text[end:end + 1] in (" ", ".", "-") and text[end + 1:end + 2] == "("):
            for n in inside.finditer(text, start + 1, end + _LONGEST_BOUNDED_RUN):
                if call.cancelled:
                    call.stop()
                if n.start() >= end:
                    break
                if n.lastindex is not None:
                    _judge_runs(n, bounded, done, text, strict, region, out, tally)
    return out


def find_pii(text: str, strict: bool = False, region: str = "US", seen: tuple | None = None) -> list[Found]:
    """Every PII span of `text`, non-overlapping, in text order (see the package docstring), within the validation
    budget of the caller's `budgeted` block, or one of its own for `text`; `seen` is its detection_view if the
    caller has it."""
    with budgeted(len(text)):
        return _find_pii(text, strict, region, seen=seen)


def _find_pii_unbudgeted(text: str, strict: bool = False, region: str = "US") -> list[Found]:
    """find_pii asking the libraries about every candidate, never in dense mode (for the tests to compare
    against)."""
    outer = getattr(_budgets, "current", None)
    _budgets.current = None
    try:
        return _find_pii(text, strict, region, dense=False)
    finally:
        _budgets.current = outer


def _find_pii(text: str, strict: bool, region: str, dense: bool = True, seen: tuple | None = None) -> list[Found]:
    literals = [_found((m.start(), m.end(), "LITERAL")) for m in HANDLE_RE.finditer(text)] if "[" in text else []
    view, breaks = seen or detection_view(text)  # invisible characters, fullwidth forms, other scripts' digits
    if dense and _dense_at_sight(view):
        return _find_pii_dense(text, view, breaks)
    candidates = list(_emails(view)) if "@" in view else []
    if _ANY_DIGIT_RE.search(view):  # every other detector needs a digit
        tally = _Tally(_candidate_allowance(len(view)) if dense else _UNLIMITED)
        try:
            candidates += _digit_run_candidates(view, strict, region, tally)
            candidates += _phones(view, strict, region, tally)
        except _TooDense:
            return _find_pii_dense(text, view, breaks)
    if not candidates:
        return literals
    if breaks:  # back to the original's offsets: a span keeps the invisible characters inside it
        candidates = [_found((original_offset(breaks, f.start), original_offset(breaks, f.end - 1) + 1, f.kind))
                      for f in candidates]
    # Overlaps are resolved within each group of spans that overlap one another, and most spans overlap none: a
    # group starts where a span reaches past the next one's start (found in C), and the spans between groups stay.
    spans = sorted(literals + candidates)
    starts, ends = list(map(_START, spans)), list(map(_END, spans))
    overlapping = [k for k, clear in enumerate(map(operator.le, ends, starts[1:])) if not clear]
    if not overlapping:
        return spans
    chosen, i = [], 0
    budget = getattr(_budgets, "current", None)
    # Once the budget is spent some spans are guesses, and the longest of two overlapping ones could leave the
    # rest of a real number out: the spans of each overlapping group are merged into one instead (fail closed).
    resolve = _merge_overlaps if budget is not None and budget.failed_closed else _resolve_overlaps
    for k in overlapping:
        if k < i:  # inside the group before
            continue
        chosen += spans[i:k]
        j, reach = k + 1, ends[k]
        while j < len(spans) and starts[j] < reach:
            reach = max(reach, ends[j])
            j += 1
        chosen += resolve(spans[k:j])
        i = j
    chosen += spans[i:]
    return chosen
