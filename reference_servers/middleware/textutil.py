"""Helpers shared by the middleware: text blocks, the ranking tokenizer, BM25 with a non-negative IDF.

Tokenizer (`tokenize`), used by retrieval, tool filtering and the memory
store's fallback ranker:
1. Unicode NFKC normalisation and `str.casefold()` (so "Ｑ４" and "q4", "Straße"
   and "strasse" meet);
2. words are maximal runs of Unicode letters and digits (`[^\\W_]+`), so
   "Q4-planning" gives "q4", "planning" and "search_email" gives "search", "email";
3. English stop words (the short list `STOP_WORDS` below) are dropped;
4. each word is stemmed with the Snowball English stemmer (`snowballstemmer`),
   so "meetings"/"meeting" and "planning"/"planned" match.

Detection views (`detection_view`, `fold_confusables`): PII and moderation
look at a normalised copy of the text so that invisible characters (soft
hyphen, zero-width space/joiners, word joiner, BOM, bidi controls), fullwidth
forms and digits of other scripts (Arabic-Indic, Devanagari, fullwidth, ...)
cannot hide a value or a word; moderation also maps Cyrillic and Greek letters
drawn like Latin ones to those (`HOMOGLYPHS`, the single-letter cases of
Unicode TR39's confusables for these scripts, hand-picked: the libraries that
carry the whole table either transliterate, "ѕ" -> "dz", or only detect).
The bytes a middleware returns are never normalised.

`LuceneBM25` is Okapi BM25 as rank_bm25's `BM25Okapi` computes it (k1 1.5,
b 0.75, the same term-frequency saturation and length normalisation) with one
change: the IDF of a term is Lucene's `log(1 + (N - n + 0.5) / (n + 0.5))`.
The classic Robertson-Spärck Jones IDF that BM25Okapi uses is zero or negative
for a term found in half the documents or more, so on a small corpus (two
documents, or a handful of tool descriptions) an exact match can score 0 or
below and vanish. Lucene's form is always positive and ranks the same way
otherwise. It is written out here (a score is one sum) rather than built on
rank_bm25, which needs numpy: importing it took a tenth of a second of every
server start, to rank corpora of a few dozen documents.
`tests/unit/middleware/test_bm25.py` holds it to rank_bm25's scores.
"""

from __future__ import annotations

import bisect
import math
import re
import unicodedata
from collections import Counter
from functools import lru_cache

import snowballstemmer

STOP_WORDS = frozenset("""
a about above after again all also am an and any are as at be because been before being below between both but by
can could did do does doing down during each few for from further had has have having he her here hers herself him
himself his how i if in into is it its itself just me more most my myself no nor not now of off on once only or other
our ours ourselves out over own same she should so some such than that the their theirs them themselves then there
these they this those through to too under until up very was we were what when where which while who whom why will
with would you your yours yourself yourselves
""".split())

_WORD = re.compile(r"[^\W_]+")
_stemmer = snowballstemmer.stemmer("english")


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    return _stemmer.stemWord(word)


def words(text: str) -> list[str]:
    """Normalised words (steps 1-2 of the tokenizer), stop words kept, not stemmed."""
    return _WORD.findall(unicodedata.normalize("NFKC", text).casefold())


def tokenize(text: str) -> list[str]:
    """The ranking tokenizer described in the module docstring."""
    return [_stem(w) for w in words(text) if w not in STOP_WORDS]


INVISIBLE = "\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u2064" \
            "\u2066-\u206f\ufeff"
_INVISIBLE_RE = re.compile(f"[{INVISIBLE}]+")
# An at sign written percent-encoded (`%40`, as in a URI) or as an HTML character reference (`&#64;`, `&#x40;`,
# `&commat;`): the view reads it as "@" (the first character replaced, the rest dropped like invisible ones), so an
# address written with it is found, and its handle's value is the text as written.
_ENCODED_AT = r"%40|&#0*64;|&#[xX]0*40;|&commat;"
_HIDDEN_RE = re.compile(f"(?P<at>{_ENCODED_AT})|[{INVISIBLE}]+")
# Every non-ASCII decimal digit (they come in runs of ten from a zero; all below U+20000), as one character class,
# so the regex engine scans for them in C instead of trying a lookahead at every position.
_ZEROS = [c for c in range(0x80, 0x20000) if unicodedata.decimal(chr(c), None) == 0]
# Every space separator (Unicode Zs: no-break, narrow no-break, thin, ideographic, ...) reads as a space, every dash
# (Pd: en dash, non-breaking hyphen, ...) and the minus sign as "-": a number written with them is still a number.
# Written out (Unicode 14, this Python's unicodedata): enumerating the code space at import took a quarter of a
# second of every process start. tests/unit/middleware/test_pii_unicode_separators.py enumerates the categories
# from unicodedata and fails when a Unicode version adds to them.
SPACES = "\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000"
DASHES = ("\u058a\u05be\u1400\u1806\u2010\u2011\u2012\u2013\u2014\u2015\u2e17\u2e1a\u2e3a\u2e3b\u2e40\u2e5d"
          "\u301c\u3030\u30a0\ufe31\ufe32\ufe58\ufe63\uff0d\U00010ead\u2212")  # the last: the minus sign
_WIDE_OR_DIGIT_RE = re.compile("[\uff01-\uff5e" + "".join(f"{chr(z)}-{chr(z + 9)}" for z in _ZEROS)
                               + re.escape(SPACES + DASHES) + "]")
HOMOGLYPHS = str.maketrans(
    "аеорсухіјѕԁһӏԛԝАВЕЗКМНОРСТХУІЈЅԌԚԜ"  # Cyrillic
    "αβεικνορτυχΑΒΕΖΗΙΚΜΝΟΡΤΥΧ",  # Greek
    "aeopcyxijsdhlqwABEZKMHOPCTXYIJSGQW"
    "aBeiKvoptuxABEZHIKMNOPTYX")


# Fullwidth forms and every script's decimal digits as ASCII, a table for str.translate, which rewrites a run in C
# (a regex callback per character cost a text of other scripts' digits several microseconds per digit).
_ASCII_FORMS = {**{c: chr(c - 0xFEE0) for c in range(0xFF01, 0xFF5F)},
                **{z + d: str(d) for z in _ZEROS for d in range(10)},
                **{ord(c): " " for c in SPACES}, **{ord(c): "-" for c in DASHES}}


@lru_cache(maxsize=1)
def _ascii_forms_table() -> str:
    """_ASCII_FORMS as a string indexed by code point, every other character itself (a code point past its end
    is unmapped too): str.translate reads it without hashing, 25-40% faster than the dict on a text of other
    scripts' digits, for 0.5 MB made on the first text that needs it."""
    return "".join([_ASCII_FORMS.get(c, chr(c)) for c in range(max(_ASCII_FORMS) + 1)])


# Runs of non-ASCII characters, with the short ASCII gaps between them (a space, a dash): a phone number written
# in another script's digits is one run, not one per digit group (each run costs a few steps in Python).
_NON_ASCII_RE = re.compile(r"[^\x00-\x7f](?:[\x00-\x7f]{0,8}[^\x00-\x7f])*")


def ascii_forms(text: str) -> str:
    """Fullwidth forms and non-ASCII digits as ASCII; only the non-ASCII runs are looked at (mostly-ASCII text
    is scanned by a simple class, much faster than the big one). A text that is a quarter non-ASCII or more
    (its UTF-8 has that many more bytes than characters, counted in C) is translated whole: finding its runs
    would cost as much as the translation."""
    if len(text.encode("utf-8", "surrogatepass")) - len(text) > len(text) // 4:
        return text.translate(_ascii_forms_table())
    pieces, last = [], 0
    for m in _NON_ASCII_RE.finditer(text):
        run = m.group()
        if _WIDE_OR_DIGIT_RE.search(run):
            pieces.append(text[last:m.start()])
            pieces.append(run.translate(_ascii_forms_table()))
            last = m.end()
    if not pieces:
        return text
    pieces.append(text[last:])
    return "".join(pieces)


def detection_view(text: str) -> tuple[str, list[tuple[int, int]]]:
    """The text PII detection reads, and how to map its offsets back (see `original_offset`).

    Fullwidth ASCII forms and digits of every script become ASCII, every Unicode space separator a space and every
    dash and the minus sign "-" (one character each, offsets unchanged);
    invisible characters are dropped. The breaks list holds (view offset, characters dropped before it).
    """
    encoded = "%40" in text or "&" in text
    if text.isascii() and not encoded:
        return text, []
    view = ascii_forms(text) if not text.isascii() else text
    breaks, pieces, last, dropped = [], [], 0, 0
    for m in (_HIDDEN_RE if encoded else _INVISIBLE_RE).finditer(view):
        pieces.append(view[last:m.start()])
        kept = 1 if m.lastgroup == "at" else 0  # an encoded "@" stays one character of the view
        if kept:
            pieces.append("@")
        dropped += m.end() - m.start() - kept
        breaks.append((m.end() - dropped, dropped))
        last = m.end()
    if not breaks:
        return view, []
    pieces.append(view[last:])
    return "".join(pieces), breaks


def drop_invisible(text: str) -> str:
    """`text` without its invisible characters, and encoded at signs as "@": the view's offsets, the text's own
    characters otherwise."""
    if "%40" in text or "&" in text:
        return _HIDDEN_RE.sub(lambda m: "@" if m.lastgroup == "at" else "", text)
    return _INVISIBLE_RE.sub("", text)


def original_offset(breaks: list[tuple[int, int]], offset: int) -> int:
    """The offset in the original text of the view's character at `offset`."""
    i = bisect.bisect_right(breaks, (offset, float("inf"))) - 1
    return offset + (breaks[i][1] if i >= 0 else 0)


def fold_confusables(text: str) -> str:
    """NFKC, invisible characters dropped, Cyrillic/Greek look-alikes as Latin letters (for matching only)."""
    text = unicodedata.normalize("NFKC", text)
    if text.isascii():
        return text
    return _INVISIBLE_RE.sub("", text).translate(HOMOGLYPHS)


def is_text(block) -> bool:
    return isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)


def text_of(context: list) -> str:
    """The text of the context's text blocks, joined by newlines (non-text blocks are skipped)."""
    return "\n".join(block["text"] for block in context if is_text(block))


def check_context(context) -> None:
    if not isinstance(context, list) or not all(isinstance(b, dict) for b in context):
        raise ValueError("context must be a list of content blocks (objects)")


class LuceneBM25:
    """Okapi BM25 with Lucene's always-positive IDF over a tokenised corpus (see the module docstring)."""

    def __init__(self, corpus: list[list[str]], k1: float = 1.5, b: float = 0.75):
        self.k1, self.b = k1, b
        self.corpus_size = len(corpus)
        self.doc_freqs = [Counter(doc) for doc in corpus]
        self.doc_len = [len(doc) for doc in corpus]
        self.avgdl = sum(self.doc_len) / self.corpus_size if self.corpus_size else 0.0
        found_in = Counter(word for freqs in self.doc_freqs for word in freqs)
        self.idf = {word: math.log(1.0 + (self.corpus_size - n + 0.5) / (n + 0.5)) for word, n in found_in.items()}

    def get_scores(self, query: list[str]) -> list[float]:
        """One score per document, in corpus order; a word repeated in the query counts each time."""
        scores = [0.0] * self.corpus_size
        for word in query:
            idf = self.idf.get(word)
            if idf is None:
                continue
            for i, freqs in enumerate(self.doc_freqs):
                tf = freqs.get(word)
                if tf:
                    norm = self.k1 * (1 - self.b + self.b * self.doc_len[i] / self.avgdl)
                    scores[i] += idf * tf * (self.k1 + 1) / (tf + norm)
        return scores
