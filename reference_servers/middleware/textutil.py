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

`LuceneBM25` is rank_bm25's `BM25Okapi` (same k1, b, term-frequency
saturation and length normalisation) with one change: the IDF of a term is
Lucene's `log(1 + (N - n + 0.5) / (n + 0.5))`. The classic Robertson-Spärck
Jones IDF that BM25Okapi uses is zero or negative for a term found in half the
documents or more, so on a small corpus (two documents, or a handful of tool
descriptions) an exact match can score 0 or below and vanish. Lucene's form is
always positive and ranks the same way otherwise.
"""

from __future__ import annotations

import math
import re
import unicodedata
from functools import lru_cache

import snowballstemmer
from rank_bm25 import BM25Okapi

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


def is_text(block) -> bool:
    return isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)


def text_of(context: list) -> str:
    """The text of the context's text blocks, joined by newlines (non-text blocks are skipped)."""
    return "\n".join(block["text"] for block in context if is_text(block))


def check_context(context) -> None:
    if not isinstance(context, list) or not all(isinstance(b, dict) for b in context):
        raise ValueError("context must be a list of content blocks (objects)")


class LuceneBM25(BM25Okapi):
    """BM25Okapi with Lucene's always-positive IDF (see the module docstring)."""

    def _calc_idf(self, nd: dict) -> None:
        self.idf = {word: math.log(1.0 + (self.corpus_size - freq + 0.5) / (freq + 0.5)) for word, freq in nd.items()}
