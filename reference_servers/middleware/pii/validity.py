"""Validity tests of candidates (phonenumbers, stdnum, ipaddress, Luhn) and the validation budget of a call
(see the package docstring, "A bounded number of validations")."""

from __future__ import annotations

import ipaddress
import re
import threading
from functools import lru_cache

import phonenumbers
from stdnum.us import ssn as us_ssn

from .scan import _SEPARATOR_RE, DATE_SHAPE_RE

_VERSION_WORD_RE = re.compile(r"(?i)\b(?:version|release|build|ver\.?)[ \t]*:?[ \t]*$")


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
