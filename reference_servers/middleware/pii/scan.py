"""The candidate patterns, and the one scan of digit runs that serves every detector but EMAIL and the
phones that start with "+" or "(".

How the text is read. Every detector but EMAIL and the phones that start
with "+" or "(" starts at the first digit of a run of digits, so one regex
scan (_digit_run_scanner) serves them all: at each digit that starts a run it
checks what their candidates start with, then each candidate pattern in a
lookahead, and matches only where one of them does. Prose numbers (years,
amounts, dates, versions) end there in a few steps, without Python code;
validity tests run on real candidates only, and are cached by value. A run of
digit groups that may hold a card is skipped over as a whole (cards are
unbounded; looking again at each of its groups would be quadratic) and looked
inside only when a group there can start an SSN or a phone number.

In long texts (32 KB and more) the digit-run candidates are found in about half
the time with Hyperscan, a C library of automata that finds every match of many
patterns in one pass: the regex engine stops at every digit of digit-dense
prose, while Hyperscan passes over it and reports where a candidate of each
detector may start (PREFILTERS, one lookaround-free superset of each candidate
pattern), and the scan above runs at those positions only. The spans found are
the same either way (the tests compare the two); where Hyperscan has no wheel,
cannot run on the CPU, or the candidates are dense (one every few characters,
where the regex scan passes a whole run of groups in one match) the regex scan
reads the text alone.
"""

from __future__ import annotations

import re
import threading
from functools import lru_cache

# -- candidate patterns (ASCII digits only: "\d" would also match other scripts' digits) ----------
# A candidate must not continue a longer token: these guards say what may not touch it. Every pattern starts with
# the character it must start with (a digit, "+" or "("), and the guard on the character before it comes right
# after, as a lookbehind over both: a pattern that starts with a character class lets the regex engine skip ahead
# to the next such character in C, where a leading lookaround would be tried at every position.
_NOT_AFTER_BAD = r"[\w+\-.]"
_NOT_BEFORE = r"(?![\w\-]|\.[0-9])"

# Unambiguous on purpose (every group after the first starts with a separator or "("), so a long digit run cannot
# make the regex engine backtrack through every way of splitting it.
PHONE_INTL_RE = re.compile(r"\+(?<![\w+]\+)[0-9]+(?:[ .\-]?\([0-9]{1,4}\)[0-9]*|[ .\-][0-9]+){0,24}")
# North American numbers, `(1-)415-555-2671` starting with a digit (in DIGIT_RUNS) and `(415) 555-2671`.
_NANP_AREA = r"(?:\([0-9]{3}\)[ .\-]?|[0-9]{3}[ .\-])"
PHONE_NANP_PAREN_RE = re.compile(
    rf"\((?<!{_NOT_AFTER_BAD}\()[0-9]{{3}}\)[ .\-]?[0-9]{{3}}[ .\-][0-9]{{4}}{_NOT_BEFORE}")
_TRUNK0_GROUPS = r"(?:[ .\-][0-9]{2,8}){1,4}"
PHONE_TRUNK0_PAREN_RE = re.compile(rf"\((?<!{_NOT_AFTER_BAD}\()0[0-9]{{1,4}}\){_TRUNK0_GROUPS}{_NOT_BEFORE}")
_ANY_DIGIT_RE = re.compile(r"[0-9]")
DATE_SHAPE_RE = re.compile(r"^[0-9]{1,4}([./\-])[0-9]{1,2}\1[0-9]{1,4}$")
_SEPARATOR_RE = re.compile(r"[ .\-](?=[0-9(])|(?<=[0-9)])(?=\()")

# "version 1.2.3.4" written the usual ways (the word, then nothing, a space, ":" or ": "), refused in the pattern
# so that a list of versions does not reach Python; _ipv4_ok's _VERSION_WORD_RE still decides the rest.
_NOT_AFTER_VERSION_WORD = "".join(
    rf"(?<!\b{re.escape(word)}{gap}[0-9])" for word in ("version", "release", "build", "ver", "ver.")
    for gap in (("", " ") if word.endswith(".") else (" ", ":", ": ")))

# The candidates that start a run of digits, as (guard, rest), both read right after the first digit: the guard
# says what may not come before that digit besides a word character (which none allows), the rest is the pattern
# after it.
DIGIT_RUNS = {
    # Runs of digit groups with at least 13 digits (the lookahead): cards, decided in _find_card_in_run. A run of one
    # group must be a whole card (13-19 digits, the first 2-6), so order numbers never reach Python; the most
    # groups are tried first, as a `(?:[ \-][0-9]+)*` would. The 12-digit lookahead (a repeated group, costly in
    # the regex engine) comes after a test it implies: its first 12 characters are digits or separators.
    "CARD": (r"(?<![+\-.][0-9])",
             rf"(?=[0-9 \-]{{12}})(?=(?:[ \-]?[0-9]){{12}})(?:[0-9]*(?:[ \-][0-9]+)+|(?<=[2-6])[0-9]{{12,18}})"
             rf"{_NOT_BEFORE}"),
    # ###-##-#### or a bare ###-##-#### without dashes; which of them count is decided in _ssn_ok.
    "SSN": (r"(?<!-[0-9])", rf"[0-9]{{2}}(?:-[0-9]{{2}}-|[0-9]{{2}})[0-9]{{4}}{_NOT_BEFORE}"),
    # The version words are looked at only where an address can start.
    "IPV4": (rf"(?<!\.[0-9])(?=[0-9]{{0,2}}\.[0-9])(?i:{_NOT_AFTER_VERSION_WORD})",
             r"[0-9]{0,2}(?:\.[0-9]{1,3}){3}(?![\w]|\.[0-9])"),
    "NANP": (r"(?<![+\-.][0-9])",
             rf"(?:(?<=1)[ .\-]{_NANP_AREA}|[0-9]{{2}}[ .\-])[0-9]{{3}}[ .\-][0-9]{{4}}{_NOT_BEFORE}"),
    # National numbers, for trunk-0 regions.
    "TRUNK0": (r"(?<![+\-.][0-9])", rf"(?<=0)[0-9]{{1,4}}{_TRUNK0_GROUPS}{_NOT_BEFORE}"),
    "BARE": (r"(?<![+\-.][0-9])", rf"[0-9]{{9,14}}{_NOT_BEFORE}"),  # strict mode's bare phone runs
}


def _heads(names: tuple[str, ...]) -> str:
    """What comes after the first digit of every candidate of the DIGIT_RUNS `names` (SSN, IPV4 and NANP
    always among them), factored by the next character so that most digits fail it in a step or two."""
    after_digit = [r"[0-9][ .\-][0-9]",  # SSNs and NANP numbers start with 3 digits and a separator
                   r"[0-9]?\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]",  # IPv4 with a 2 or 3 digit first octet
                   r"[0-9]{7}" if "BARE" in names else r"[0-9]{7}(?![0-9])"]  # bare SSNs (and phones)
    if "TRUNK0" in names:
        after_digit.append(r"(?<=0[0-9])[0-9]{0,3}[ .\-][0-9]")
    heads = [rf"[0-9](?:{'|'.join(after_digit)})",
             r"\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]",  # IPv4 with a 1 digit first octet (not "3.11.7")
             r"(?<![+\-.]1)(?<=1)[ .\-](?:\(|[0-9]{3})"]  # NANP with a leading 1
    if "CARD" in names:  # 12 more digits, in one run of 13-19 starting with 2-6, or in groups (cheap tests first)
        heads.append(r"(?<![+\-.][0-9])(?=[0-9]*[ \-][0-9]|(?<=[2-6])[0-9]{12,18}(?![0-9]))(?=[0-9 \-]{12})"
                     r"(?:[ \-]?[0-9]){12}")
    return "|".join(heads)


# The longest candidate of the bounded DIGIT_RUNS (all but CARD) and what their guards read after it.
_LONGEST_BOUNDED_RUN = 64
_LONG_RUN = 10  # digits in a row that the scan passes over in one match (see _digit_run_scanner)


@lru_cache(maxsize=16)
def _digit_run_scanner(names: tuple[str, ...], first_tests: bool = True) -> re.Pattern:
    """One pattern for the DIGIT_RUNS `names` (SSN, IPV4 and NANP always among them): each rest in a lookahead
    with a named group, the match failing unless one of them matched, and going on over a CARD run if there is
    one.

    Digit-dense prose (dates, amounts, versions) makes the regex engine stop at every digit; one scan does that
    once for all of these detectors instead of once each, and only runs where some candidate matches reach
    Python. What their candidates start with is checked first, as one lookahead, so the short numbers of prose
    (years, amounts, "room 415,") and runs of short groups ("1 1 1") cost a step or two each. A CARD run is
    unbounded, so the scan resumes after it (as CARD's own finditer would; the lookahead at each of its groups
    would make "1 1 1 ..." quadratic) and the others look inside it apart (_digit_run_candidates). Otherwise the
    match takes the rest of the digits (none of them starts a run), and a run of _LONG_RUN digits or more is
    matched without a candidate (no group set) so the engine need not stop at each of its digits (a failed
    start at each digit costs more than the match object: order numbers and other long runs of prose).
    """
    # The first tests reject most non-candidates at once: what follows the first digit, after a dash only an
    # IPv4 address can start, and every candidate has 9 digits in a row or a separator and a digit (or "(") right
    # after its first run of digits, which the prose numbers ("2025 ", "6,400,000", "18%") do not.
    # (Every candidate passes them, so where the prefilter has already picked the positions, they are left out:
    # `first_tests` false.)
    parts = [rf"(?=[0-9 .\-])(?=(?<!-[0-9])|[0-9]{{0,2}}\.)(?=[0-9]{{0,7}}[ .\-][0-9(]|[0-9]{{8}})"
             rf"(?={_heads(names)})"] if first_tests else []  # lookaheads: no backtracking
    for name in names:
        guard, rest = DIGIT_RUNS[name]
        parts.append(rf"(?:{guard}(?=(?P<{name}>{rest}))|)")
    none = "(?!)"
    for name in reversed(names):
        none = f"(?({name})|{none})"
    parts.append(none)
    parts.append("(?(CARD)(?P=CARD)|[0-9]*)" if "CARD" in names else "[0-9]*")
    pattern = re.compile(rf"[0-9](?<!\w[0-9])(?:{''.join(parts)}|[0-9]{{{_LONG_RUN - 1},}})")
    assert pattern.groups == len(names)  # _judge_runs reads the groups by position
    return pattern


# -- the prefilter of long texts -------------------------------------------------------------------
# In digit-dense prose the regex engine stops at every digit and tests every run start against the heads above,
# about 25 ms a megabyte before any candidate reaches Python. Hyperscan (Intel's automaton-based matcher, C)
# reads a megabyte in a few milliseconds and reports where each pattern below matches, and the scan above is
# then tried at those positions only. Each pattern is a superset of what its DIGIT_RUNS entry matches, written
# without lookarounds, which Hyperscan lacks: the character before the first digit is part of the match (and
# stands for the guards, the `(?<!\w[0-9])` of every candidate included), the character after the candidate too
# where its rest ends in _NOT_BEFORE; the other guards are left to the regex. Hyperscan reports one start per
# end, the leftmost; two starts of one pattern share an end only in NANP's `1 415 555 2671` (the "1" and the
# "415"), and there the "1" is a candidate exactly when the "415" would be one (and skipped, as inside it), as
# long as the character before each reads as the regex engine reads it (_candidate_starts). So every position
# where the scan can match with a group set, and finditer would look, is reported, the spans found are the same
# as the regex scan's alone (the tests compare the two on random and adversarial texts), and only the work
# between candidates is saved.
_D = "[0-9]"
_SEP = r"[ .\-]"
_AFTER = r"(?:[^0-9A-Za-z_\-]|$)"  # _NOT_BEFORE without its ".digit" case
_AFTER_RUN_START = r"[^0-9A-Za-z_+\-.]"  # the guard (?<![+\-.][0-9]) and (?<!\w[0-9])
PREFILTERS = {
    "SSN": rf"[^0-9A-Za-z_\-]{_D}{{3}}(?:-{_D}{{2}}-|{_D}{{2}}){_D}{{4}}{_AFTER}",
    "IPV4": rf"[^0-9A-Za-z_.]{_D}{{1,3}}(?:\.{_D}{{1,3}}){{3}}(?:[^0-9A-Za-z_]|$)",
    "NANP": rf"{_AFTER_RUN_START}(?:1{_SEP}(?:\({_D}{{3}}\){_SEP}?|{_D}{{3}}{_SEP})|{_D}{{3}}{_SEP})"
            rf"{_D}{{3}}{_SEP}{_D}{{4}}{_AFTER}",
    "TRUNK0": rf"{_AFTER_RUN_START}0{_D}{{1,4}}{_SEP}{_D}{{2}}",
    "BARE": rf"{_AFTER_RUN_START}{_D}{{10,15}}{_AFTER}",
    # 13-19 digits in one run starting with 2-6, or 13 digits with single spaces or dashes between some of them
    # and at least one separator in the run: written out by where the first separator falls (after k digits).
    "CARD": rf"{_AFTER_RUN_START}(?:[2-6]{_D}{{12,18}}{_AFTER}|{_D}{{13,}}[ \-]{_D}|{_D}{{12}}[ \-]{_D}|"
            + "|".join(rf"{_D}{{{k}}}[ \-]{_D}(?:[ \-]?{_D}){{{12 - k}}}" for k in range(1, 12)) + ")",
}
# Below this many characters the regex scan costs less than the call into Hyperscan is worth (about 1 ms at
# 32 KB), and short texts never pay for compiling the patterns (0.1-0.2 s, once per process and detector set).
PREFILTER_MIN_CHARS = 32_768
# Each reported position costs a call into Python (about 1 us); where candidates come denser than one per _DENSE
# characters, beyond _DENSE_SLACK reports (runs of digit groups, "1 1 1 ...": one report per group), the regex
# scan, which passes over a run in one match, is cheaper, so the prefilter gives up as soon as it sees that.
_DENSE = 128
_DENSE_SLACK = 256


@lru_cache(maxsize=1)
def _hyperscan():
    """The hyperscan module, imported with the first long text (a server start would pay 20-30 ms for it), or
    None where it has no wheel: the regex scan alone gives the same spans, more slowly."""
    try:
        import hyperscan
    except ImportError:
        return None
    return hyperscan


@lru_cache(maxsize=8)
def _prefilter_database(names: tuple[str, ...]):
    """The compiled PREFILTERS of `names`, or None where Hyperscan cannot run (no wheel, a CPU without SSSE3)."""
    hyperscan = _hyperscan()
    if hyperscan is None:
        return None
    database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    try:
        database.compile(expressions=[PREFILTERS[name].encode() for name in names], ids=list(range(len(names))),
                         elements=len(names), flags=hyperscan.HS_FLAG_SOM_LEFTMOST)
    except hyperscan.error:
        return None
    return database


_NOT_ASCII_BEFORE_DIGIT_RE = re.compile(r"[^\x00-\x7f](?=[0-9])")
_scratch = threading.local()  # Hyperscan's scratch space serves one scan at a time: one per thread and database


def _candidate_starts(names: tuple[str, ...], text: str) -> list[int] | None:
    """Where a candidate of the DIGIT_RUNS `names` may start in `text`, in order: a superset of the positions
    where _digit_run_scanner(names) matches with a group set. None where the prefilter does not help: no
    Hyperscan, a text too short, or candidates too dense."""
    if len(text) < PREFILTER_MIN_CHARS:
        return None
    database = _prefilter_database(names)
    if database is None:
        return None
    # One byte per character, so offsets carry over. A character that is not ASCII matters to the patterns only
    # right before a digit, where it must read as the regex engine reads it: "a" if it is a word character (the
    # guards), "?" if not. (As "?" throughout, a letter glued to "1 415 555 2671" would make that "1" the leftmost
    # start of the NANP pattern, and Hyperscan reports one start per end: the "415", the real candidate's start,
    # would go unreported.) The space in front stands for the start of the text, so a match's start is its first
    # digit's offset in `text`.
    shape = b" " + text.encode("ascii", "replace")
    if not text.isascii():
        shape = bytearray(shape)
        for m in _NOT_ASCII_BEFORE_DIGIT_RE.finditer(text):
            if m.group().isalnum():  # what \w matches beyond ASCII
                shape[m.start() + 1] = 0x61
    starts: list[int] = []
    add = starts.append

    def found(_id, start, end, _flags, _context):
        add(start)
        return len(starts) > end / _DENSE + _DENSE_SLACK  # true ends the scan

    hyperscan = _hyperscan()
    scratches = _scratch.__dict__.setdefault("by_names", {})
    try:
        scratch = scratches.get(names)
        if scratch is None:
            scratch = scratches[names] = hyperscan.Scratch(database)
        database.scan(shape, match_event_handler=found, scratch=scratch)
    except hyperscan.error:  # ScanTerminated (too dense) or a failure of the library: the regex scan serves
        return None
    return sorted(set(starts))


def _scan_matches(names: tuple[str, ...], text: str):
    """The matches of _digit_run_scanner(names).finditer(text) that set a group; for a long text, from the
    scanner tried only where the prefilter says a candidate may start."""
    starts = _candidate_starts(names, text)
    if starts is None:
        for m in _digit_run_scanner(names).finditer(text):
            if m.lastindex is not None:
                yield m
        return
    match = _digit_run_scanner(names, first_tests=False).match
    resume = 0  # where finditer would go on: no match starts inside the previous one
    for start in starts:
        if start < resume:
            continue
        m = match(text, start)
        if m is None:
            continue
        resume = m.end()
        if m.lastindex is not None:
            yield m
