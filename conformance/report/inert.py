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
import re
import unicodedata

_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}
_HIDDEN = frozenset(("Cc", "Cf", "Zl", "Zp", "Cs"))
# Every ASCII punctuation character: CommonMark lets each be backslash-escaped, and an escaped one is text.
_PUNCTUATION = re.compile(r"""([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~])""")


def _shown(char: str) -> str:
    return _NAMED.get(char) or f"⟨U+{ord(char):04X}⟩"


class _Table(dict):
    """str.translate's table: a character's visible form, or the character itself, worked out the first time
    translate meets it and kept (no scan of all of Unicode up front: that took 80 ms a run)."""

    def __init__(self, keep: str) -> None:
        super().__init__()
        self.keep = keep

    def __missing__(self, code: int) -> int | str:
        char = chr(code)
        self[code] = shown = _shown(char) if char not in self.keep and unicodedata.category(char) in _HIDDEN else code
        return shown


@functools.cache
def _table(keep: str = "") -> _Table:
    return _Table(keep)


def visible(text: str, keep: str = "") -> str:
    """`text` with each control or format character (except those in `keep`) written out visibly."""
    text = str(text)
    probe = text
    for char in keep:
        probe = probe.replace(char, " ")
    if probe.isprintable():  # the common case, at C speed: nothing hidden (isprintable is False for each class)
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
