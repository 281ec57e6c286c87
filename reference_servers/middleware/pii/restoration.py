"""Restoration: each handle of the map back to its value, exactly, and handles inside URLs kept (see the
package docstring, "Escaping" and "Handles in URLs stay handles")."""

from __future__ import annotations

import bisect
import itertools
import operator
import re

from ...limits import LimitExceeded, output_allowance
from ...limits import current as current_call
from .handles import HANDLE_RE

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
    """`text` with each handle of `redactions` replaced by its value (see the package docstring), and how many
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
