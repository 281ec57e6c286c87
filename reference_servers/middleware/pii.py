"""PII redaction and exact restoration (the SEP's examples 1 and 2).

Detectors (each a regular expression plus a validity test, so look-alikes are
not redacted):
- EMAIL: RFC 5322's common subset (local@domain.tld).
- PHONE: international (+CC …) and North American formats with separators;
  dates (2025-10-04, 10/04/2025), versions and plain numbers are not phones.
  `strict` adds bare runs of 10-15 digits.
- SSN: US ###-##-####, area not 000/666/9xx, group not 00, serial not 0000;
  any ###-##-#### right after the word "SSN" (what the text calls an SSN is
  treated as one). `strict` adds bare 9-digit runs passing the SSA rules.
- CARD: 13-19 digits, optionally grouped by spaces or dashes, Luhn-valid.
- IPV4: dotted quad, each octet 0-255.

Handles are `[TYPE_N]`, numbered per type in order of first appearance; the
same value always gets the same handle, also across calls when the caller
passes the previous map back as `redactions`.

Exact round trip: text that already looks like a handle (`[EMAIL_1]` typed by
a user) would be ambiguous after redaction, so such text is itself redacted,
as a LITERAL handle whose value is the original text. Restoration replaces
every known handle by its value in one left-to-right pass (values are never
rescanned), so redaction followed by restoration gives the input back byte
for byte.

Hand-written rather than a library: the PII libraries on the registry either
download models at run time (not possible here) or detect far broader
categories with heuristics that cannot promise the exact round trip.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

HANDLE = re.compile(r"\[([A-Z][A-Z0-9]*)_(\d+)\]")

EMAIL = re.compile(r"(?<![\w.+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,24}(?![\w-])")
IPV4 = re.compile(r"(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?![\d.])")
SSN = re.compile(r"(?<![\d-])(\d{3})-(\d{2})-(\d{4})(?![\d-])")
# A number the text itself calls an SSN is redacted even where the SSA would never issue it (the SEP's
# own example, 987-65-4321, is in the 9xx range).
SSN_LABELLED = re.compile(r"(?i)\b(?:ssn|social security(?: number| no\.?)?)\b[\s:#]*(?:(?:is|was|of)\s+)?(\d{3}-\d{2}-\d{4})(?![\d-])")
SSN_BARE = re.compile(r"(?<![\d-])(\d{3})(\d{2})(\d{4})(?![\d-])")
CARD = re.compile(r"(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])")
PHONE_INTL = re.compile(r"(?<![\w+])\+\d{1,3}(?:[ .-]?\(?\d{1,4}\)?){2,5}(?!\d)")
PHONE_NANP = re.compile(r"(?<![\w+])(?:\(\d{3}\)\s?|\d{3}[-.\s])\d{3}[-.\s]\d{4}(?![\d-])")
PHONE_BARE = re.compile(r"(?<![\w+-])\d{10,15}(?![\d-])")

ORDER = ("LITERAL", "EMAIL", "CARD", "SSN", "PHONE", "IPV4")


@dataclass(frozen=True)
class Match:
    start: int
    end: int
    kind: str

    @property
    def length(self) -> int:
        return self.end - self.start


def luhn_ok(digits: str) -> bool:
    total, parity = 0, len(digits) % 2
    for i, ch in enumerate(digits):
        d = int(ch)
        if i % 2 == parity:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def ssn_ok(area: str, group: str, serial: str) -> bool:
    return area not in ("000", "666") and not area.startswith("9") and group != "00" and serial != "0000"


def _phone_digits_ok(text: str) -> bool:
    digits = re.sub(r"\D", "", text)
    return 7 <= len(digits) <= 15


def find(text: str, strict: bool = False) -> list[Match]:
    """Every PII span, overlaps resolved: longest first, then earliest, then by ORDER."""
    found: list[Match] = [Match(m.start(), m.end(), "LITERAL") for m in HANDLE.finditer(text)]
    found += [Match(m.start(), m.end(), "EMAIL") for m in EMAIL.finditer(text)]
    for m in CARD.finditer(text):
        digits = re.sub(r"\D", "", m.group())
        if 13 <= len(digits) <= 19 and luhn_ok(digits) and _card_grouping_ok(m.group()):
            found.append(Match(m.start(), m.end(), "CARD"))
    found += [Match(m.start(), m.end(), "SSN") for m in SSN.finditer(text) if ssn_ok(*m.groups())]
    found += [Match(m.start(1), m.end(1), "SSN") for m in SSN_LABELLED.finditer(text)]
    if strict:
        found += [Match(m.start(), m.end(), "SSN") for m in SSN_BARE.finditer(text) if ssn_ok(*m.groups())]
    for pattern in (PHONE_INTL, PHONE_NANP):
        found += [Match(m.start(), m.end(), "PHONE") for m in pattern.finditer(text) if _phone_digits_ok(m.group())]
    if strict:
        found += [Match(m.start(), m.end(), "PHONE") for m in PHONE_BARE.finditer(text)]
    for m in IPV4.finditer(text):
        if all(0 <= int(part) <= 255 and (part == "0" or not part.startswith("0")) for part in m.group().split(".")):
            found.append(Match(m.start(), m.end(), "IPV4"))
    found.sort(key=lambda m: (-m.length, m.start, ORDER.index(m.kind)))
    taken = bytearray(len(text))  # 1 where a chosen match lies: overlap tests stay linear in the text
    chosen: list[Match] = []
    for match in found:
        if taken.find(1, match.start, match.end) < 0:
            taken[match.start:match.end] = b"\x01" * match.length
            chosen.append(match)
    return sorted(chosen, key=lambda m: m.start)


def _card_grouping_ok(text: str) -> bool:
    """Cards are written as one run or in groups of 4 (Amex 4-6-5): not arbitrary digit soup."""
    groups = re.split(r"[ -]", text)
    if len(groups) == 1:
        return True
    return all(len(g) in (4, 5, 6) for g in groups[:-1]) and 1 <= len(groups[-1]) <= 6


class HandleMap:
    """Value <-> handle, numbered per type; seeded from a previous map to continue a session."""

    def __init__(self, existing: dict[str, str] | None = None):
        self.by_handle: dict[str, str] = {}
        self.by_value: dict[tuple[str, str], str] = {}
        self.counters: dict[str, int] = {}
        for handle, value in (existing or {}).items():
            m = re.fullmatch(r"([A-Z][A-Z0-9]*)_(\d+)", handle)
            if not m or not isinstance(value, str):
                raise ValueError(f"redactions: {handle!r} is not a handle like EMAIL_1 mapped to a string")
            self._add(m.group(1), int(m.group(2)), value)

    def _add(self, kind: str, number: int, value: str) -> str:
        handle = f"{kind}_{number}"
        self.by_handle[handle] = value
        self.by_value[(kind, value)] = handle
        self.counters[kind] = max(self.counters.get(kind, 0), number)
        return handle

    def handle_for(self, kind: str, value: str) -> str:
        known = self.by_value.get((kind, value))
        if known:
            return known
        return self._add(kind, self.counters.get(kind, 0) + 1, value)


def redact_text(text: str, handles: HandleMap, strict: bool = False) -> tuple[str, dict[str, int]]:
    out, last, counts = [], 0, {}
    for match in find(text, strict):
        value = text[match.start:match.end]
        out.append(text[last:match.start])
        out.append(f"[{handles.handle_for(match.kind, value)}]")
        counts[match.kind] = counts.get(match.kind, 0) + 1
        last = match.end
    out.append(text[last:])
    return "".join(out), counts


def restore_text(text: str, redactions: dict[str, str]) -> tuple[str, int]:
    restored = 0

    def swap(m: re.Match) -> str:
        nonlocal restored
        handle = f"{m.group(1)}_{m.group(2)}"
        if handle in redactions:
            restored += 1
            return redactions[handle]
        return m.group(0)

    return HANDLE.sub(swap, text), restored


REDACTION_SCHEMA = {
    "type": "object",
    "properties": {
        "aggressiveness": {"type": "string", "enum": ["standard", "strict"], "default": "standard",
                           "description": "strict also redacts bare 9-digit SSNs and bare 10-15 digit phone numbers"},
        "redactions": {"type": "object", "additionalProperties": {"type": "string"},
                       "description": "the map a previous call returned, to keep handles stable across a session"},
    },
    "additionalProperties": False,
}
RESTORATION_SCHEMA = {
    "type": "object",
    "properties": {"redactions": {"type": "object", "additionalProperties": {"type": "string"},
                                  "description": "handle -> original value, as pii_redaction returned it"}},
    "required": ["redactions"],
    "additionalProperties": False,
}


def pii_redaction(context: list[dict], arguments: dict) -> dict:
    strict = arguments.get("aggressiveness", "standard") == "strict"
    handles = HandleMap(arguments.get("redactions"))
    counts: dict[str, int] = {}
    for block in context:
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            block["text"], found = redact_text(block["text"], handles, strict)
            for kind, n in found.items():
                counts[kind] = counts.get(kind, 0) + n
    return {"content": context, "metadata": {"redactions": dict(handles.by_handle), "counts": counts}}


def pii_restoration(context: list[dict], arguments: dict) -> dict:
    redactions = arguments["redactions"]
    total = 0
    for block in context:
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            block["text"], n = restore_text(block["text"], redactions)
            total += n
    return {"content": context, "metadata": {"restored": total}}
