"""Document retrieval: RAG without the model deciding (the SEP's example 4), ranked with BM25.

Query: the text of the context's text blocks, joined by newlines.

Ranking: Okapi BM25 as rank_bm25's BM25Okapi computes it (`textutil.LuceneBM25`:
k1 = 1.5, b = 0.75, with Lucene's always-positive IDF so exact
matches in a small corpus are not scored away), over each document's title and
text, tokenised by `textutil.tokenize` (NFKC + casefold, Unicode letter/digit
runs, English stop words dropped, Snowball English stemming). Ties are broken
by corpus order.

Relevance: a document's BM25 score divided by the best score any document of
the corpus gets for the same query, rounded to 3 decimals. So the best match
of the whole corpus has relevance 1.0, `minRelevance` means "at least this
fraction of the best match", and a document's relevance does not change with
`sources` or `maxResults`. Documents that share no term with the query (score
0) are never returned. Top-normalisation makes relevance a ranking measure,
not an absolute one: a weak best match still has relevance 1.0.

Result: when something is found, one text block is put before the original
context blocks (which follow unchanged):

    [Retrieved Documents]

    # <title> (<date, e.g. Oct 1, 2025>)
    <text>

    # <title> (<date>)
    <text>

    ---

and `metadata.sources` lists `{id, title, source, date, relevance, score}` per
document, best first (`score` is the raw BM25 score). Nothing found: the
context comes back as it was, with `sources: []`.

Corpus: `corpus.json` beside this file (32 short documents of the fictional
Bramblewood Systems, sources internal_docs, email and wiki), or the JSON file
the `corpus` argument names: a list of `{id, title, source, text, date?}`
objects, ids unique. The argument reads a file on the server's machine, so
offer this middleware only inside the trust boundary the SEP asks for (a
deployment can fix the default with `use_default_corpus`). Indexes are cached
per file, path, modification time and size, so an edited file is re-read.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from functools import lru_cache
from pathlib import Path

from . import MiddlewareSpec
from .textutil import LuceneBM25, check_context, text_of, tokenize

DEFAULT_CORPUS = Path(__file__).with_name("corpus.json")
BUNDLED_SOURCES = ("internal_docs", "email", "wiki")

SCHEMA = {
    "type": "object",
    "properties": {
        "maxResults": {"type": "integer", "minimum": 1, "maximum": 20, "default": 3,
                       "description": "at most this many documents"},
        "minRelevance": {"type": "number", "minimum": 0, "maximum": 1, "default": 0,
                         "description": "only documents whose BM25 score is at least this fraction of the best "
                                        "document's score for the query"},
        "sources": {"type": "array", "items": {"type": "string", "minLength": 1}, "uniqueItems": True,
                    "description": "only documents from these sources (the bundled corpus has internal_docs, "
                                   "email and wiki)"},
        "corpus": {"type": "string", "minLength": 1,
                   "description": "path of another corpus JSON file: a list of {id, title, source, text, date?}"},
    },
    "additionalProperties": False,
}


class Index:
    """A BM25 index over a list of documents."""

    def __init__(self, documents: list[dict]):
        self.documents = documents
        self.sources = sorted({d["source"] for d in documents})
        tokens = [tokenize(f"{d['title']}\n{d['text']}") for d in documents]
        self.bm25 = LuceneBM25(tokens) if any(tokens) else None

    def search(self, query: str, max_results: int = 3, min_relevance: float = 0.0,
               sources: list[str] | None = None) -> list[dict]:
        terms = tokenize(query)
        if not terms or self.bm25 is None:
            return []
        scores = [float(s) for s in self.bm25.get_scores(terms)]
        best = max(scores)
        if best <= 0:
            return []
        wanted = set(sources) if sources else None
        ranked = sorted((i for i, s in enumerate(scores) if s > 0), key=lambda i: (-scores[i], i))
        hits = []
        for i in ranked:
            doc = self.documents[i]
            if wanted is not None and doc["source"] not in wanted:
                continue
            relevance = round(scores[i] / best, 3)
            if relevance < min_relevance:
                break
            hits.append({**doc, "relevance": relevance, "score": round(scores[i], 4)})
            if len(hits) == max_results:
                break
        return hits


def load_documents(path: str | os.PathLike) -> list[dict]:
    try:
        documents = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"cannot read corpus {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ValueError(f"corpus {path} is not valid JSON: {exc}") from None
    if not isinstance(documents, list):
        raise ValueError(f"corpus {path} must be a JSON list of {{id, title, source, text, date?}} objects")
    seen = set()
    for n, doc in enumerate(documents):
        if not isinstance(doc, dict):
            raise ValueError(f"corpus {path}: entry {n} is not an object")
        for key in ("id", "title", "source", "text"):
            if not isinstance(doc.get(key), str):
                raise ValueError(f"corpus {path}: entry {n} needs a string {key!r}")
        if "date" in doc and not isinstance(doc["date"], str):
            raise ValueError(f"corpus {path}: entry {n} has a date that is not a string")
        if doc["id"] in seen:
            raise ValueError(f"corpus {path}: id {doc['id']!r} appears twice")
        seen.add(doc["id"])
    return documents


@lru_cache(maxsize=16)
def _index(path: str, mtime_ns: int, size: int) -> Index:
    del mtime_ns, size  # part of the cache key only
    return Index(load_documents(path))


def index_for(path: str | os.PathLike) -> Index:
    path = os.path.abspath(path)
    try:
        stat = os.stat(path)
    except OSError as exc:
        raise ValueError(f"cannot read corpus {path}: {exc.strerror or exc}") from None
    return _index(path, stat.st_mtime_ns, stat.st_size)


_default = {"corpus": str(DEFAULT_CORPUS)}
# Corpora a call may name with the `corpus` argument: the server's own, never an arbitrary path a caller
# sends (that would let anyone who can invoke middleware read files on the server).
_allowed: set[str] = {os.path.abspath(DEFAULT_CORPUS)}


def use_default_corpus(path: str | os.PathLike) -> None:
    """Search this corpus when a call names none (a deployment's configuration); fails now if it is unusable."""
    index_for(path)
    _default["corpus"] = str(path)
    _allowed.add(os.path.abspath(path))


def allow_corpus(path: str | os.PathLike) -> None:
    """Let calls name this corpus file (a deployment's configuration)."""
    index_for(path)
    _allowed.add(os.path.abspath(path))


def display_date(value: str | None) -> str:
    """'2025-10-01' -> 'Oct 1, 2025'; any other string as it is; no date -> 'undated'.

    Month names are spelled out here rather than with strftime's %b, which follows the process locale.
    """
    if not value:
        return "undated"
    try:
        day = dt.date.fromisoformat(value)
    except ValueError:
        return value
    return f"{('Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec')[day.month - 1]} " \
           f"{day.day}, {day.year}"


def retrieve(context: list[dict], arguments: dict) -> list[dict]:
    """The ranked hits (documents plus relevance and score) for a context and arguments."""
    check_context(context)
    max_results = arguments.get("maxResults", 3)
    if isinstance(max_results, bool) or not isinstance(max_results, int) or not 1 <= max_results <= 20:
        raise ValueError("maxResults must be an integer from 1 to 20")
    min_relevance = arguments.get("minRelevance", 0)
    if isinstance(min_relevance, bool) or not isinstance(min_relevance, (int, float)) or not 0 <= min_relevance <= 1:
        raise ValueError("minRelevance must be a number from 0 to 1")
    named = arguments.get("corpus")
    if named is not None and os.path.abspath(named) not in _allowed:
        raise ValueError(f"corpus {named!r} is not one this server offers")
    index = index_for(named or _default["corpus"])
    sources = arguments.get("sources")
    if sources is not None:
        if not isinstance(sources, list) or not all(isinstance(s, str) for s in sources):
            raise ValueError("sources must be a list of source names")
        unknown = sorted(set(sources) - set(index.sources))
        if unknown:
            raise ValueError(f"unknown source(s) {', '.join(unknown)}; this corpus has: {', '.join(index.sources)}")
    return index.search(text_of(context), max_results, float(min_relevance), sources)


def render(hits: list[dict]) -> str:
    body = "\n\n".join(f"# {h['title']} ({display_date(h.get('date'))})\n{h['text']}" for h in hits)
    return f"[Retrieved Documents]\n\n{body}\n\n---"


def source_entry(hit: dict) -> dict:
    entry = {"id": hit["id"], "title": hit["title"], "source": hit["source"]}
    if hit.get("date"):
        entry["date"] = hit["date"]
    entry.update(relevance=hit["relevance"], score=hit["score"])
    return entry


def document_retrieval(context: list[dict], arguments: dict) -> dict:
    hits = retrieve(context, arguments)
    metadata = {"sources": [source_entry(h) for h in hits]}
    if not hits:
        return {"content": list(context), "metadata": metadata}
    return {"content": [{"type": "text", "text": render(hits)}, *context], "metadata": metadata}


DEFINITION = MiddlewareSpec(
    "document_retrieval",
    "Put the documents most relevant to the context (BM25 over the bundled corpus, or another) before it, as a "
    "[Retrieved Documents] block; metadata.sources lists each with its relevance (score relative to the best match).",
    SCHEMA, document_retrieval)
