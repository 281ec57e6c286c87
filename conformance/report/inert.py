"""Text the suite did not write, made inert wherever a report shows it.

What a target says (its serverInfo, tool names, error texts, quoted in reasons) and what is read from a
results file the suite did not write is data, never markup: in Markdown (summary.md, the Action's job
summary) every ASCII punctuation character is backslash-escaped, so no heading, list, link, image, emphasis,
HTML or autolink can start; in HTML, Jinja's autoescaping does the same job. Either way a control or format
character (CR, ESC, a zero-width space, a bidi override: Unicode Cc, Cf, Zl, Zp and lone surrogates) is
shown as what it is (`\\r`, `⟨U+202E⟩`), never interpreted: a CR would start a new Markdown block, a bidi
override would reorder the text a reader sees. Only the catalog the suite ships is rendered as Markdown.
"""

from __future__ import annotations

import functools
import itertools
import re
import unicodedata

_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}
_HIDDEN = frozenset(("Cc", "Cf", "Zl", "Zp", "Cs"))
# Every ASCII punctuation character: CommonMark lets each be backslash-escaped, and an escaped one is text.
_PUNCTUATION = re.compile(r"""([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~])""")


def _shown(char: str) -> str:
    return _NAMED.get(char) or f"⟨U+{ord(char):04X}⟩"


@functools.cache
def _table(keep: str = "") -> dict[int, str]:
    """str.translate's table of every hidden character but `keep` (translate runs at C speed: 2 MB of a page's
    evidence in 10 ms). Cf characters exist only in these planes; building it takes 50 ms, once (html.py warms
    it up while the recording waits on the target)."""
    scanned = itertools.chain(range(0x20000), range(0xE0000, 0xE1000))
    return {c: _shown(chr(c)) for c in scanned if unicodedata.category(chr(c)) in _HIDDEN and chr(c) not in keep}


def visible(text: str, keep: str = "") -> str:
    """`text` with each control or format character (except those in `keep`) written out visibly."""
    text = str(text)
    if text.isprintable():  # the common case: nothing hidden (isprintable is False for every hidden class)
        return text
    return text.translate(_table(keep))


def md_text(text: str) -> str:
    """`text` as Markdown inline text that renders as exactly these characters (controls shown visibly)."""
    return _PUNCTUATION.sub(r"\\\1", visible(text))


def md_code(text: str) -> str:
    """`text` as a Markdown code span (controls shown visibly; a backtick in it cannot close the span)."""
    text = visible(text)
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if longest or text[:1] == " " and text[-1:] == " " and text.strip() else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def html_text(text: str) -> str:
    """For HTML (escaped afterwards by the template): controls shown visibly, line breaks kept (a page shows
    them as breaks at most, never as markup)."""
    return visible(text, keep="\n")
