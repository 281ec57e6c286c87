"""Document retrieval (RAG without the model deciding; the SEP's example 4), ranked with BM25.

Ranking is rank_bm25's BM25Okapi over title and text, tokenised by lowercase
word characters with a small English stop-word list. Relevance is the BM25
score divided by the best score for the query, so the top document has
relevance 1.0 and `minRelevance` means "at least this fraction of the best
match". Documents scoring 0 (no shared term) are never returned.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

from rank_bm25 import BM25Okapi

DEFAULT_CORPUS = Path(__file__).with_name("corpus.json")
STOP = frozenset("a an and are as at be by for from has have how i in is it its me my of on or our so that the "
                 "their them they this to was we were what when where which who will with you your".split())
SOURCES = ("internal_docs", "email", "wiki")

SCHEMA = {
    "type": "object",
    "properties": {
        "maxResults": {"type": "integer", "minimum": 1, "maximum": 20, "default": 3},
        "minRelevance": {"type": "number", "minimum": 0, "maximum": 1, "default": 0,
                         "description": "score relative to the best match for the query"},
        "sources": {"type": "array", "items": {"type": "string"}, "description": "only documents from these sources"},
        "corpus": {"type": "string", "description": "path to another corpus JSON file of the same shape"},
    },
    "additionalProperties": False,
}


def tokens(text: str) -> list[str]:
    return [t for t in re.findall(r"[a-z0-9]+", text.lower()) if t not in STOP]


class Index:
    def __init__(self, documents: list[dict]):
        self.documents = documents
        self.bm25 = BM25Okapi([tokens(d["title"] + " " + d["text"]) for d in documents])

    def search(self, query: str, max_results: int = 3, min_relevance: float = 0.0, sources=None) -> list[dict]:
        terms = tokens(query)
        if not terms:
            return []
        scores = self.bm25.get_scores(terms)
        ranked = sorted(((s, i) for i, s in enumerate(scores) if s > 0), key=lambda p: (-p[0], p[1]))
        if sources:
            ranked = [(s, i) for s, i in ranked if self.documents[i]["source"] in sources]
        if not ranked:
            return []
        best = ranked[0][0]
        hits = []
        for score, i in ranked:
            relevance = round(float(score / best), 3)
            if relevance < min_relevance:
                break
            hits.append({**self.documents[i], "relevance": relevance})
            if len(hits) == max_results:
                break
        return hits


@lru_cache(maxsize=8)
def index_for(path: str) -> Index:
    try:
        documents = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot read corpus {path}: {exc}") from None
    if not isinstance(documents, list) or not all(isinstance(d, dict) and {"id", "title", "text", "source"} <= set(d)
                                                  for d in documents):
        raise ValueError(f"corpus {path}: a list of {{id, title, source, text, date?}} objects, please")
    return Index(documents)


def query_of(context: list[dict]) -> str:
    return "\n".join(b["text"] for b in context if b.get("type") == "text" and isinstance(b.get("text"), str))


_default = {"corpus": str(DEFAULT_CORPUS)}


def use_default_corpus(path: str) -> None:
    """The corpus searched when a call names none (the deployment's configuration)."""
    index_for(path)  # fail at start-up, not at the first query
    _default["corpus"] = path


def retrieve(context: list[dict], arguments: dict) -> list[dict]:
    index = index_for(arguments.get("corpus") or _default["corpus"])
    return index.search(query_of(context), arguments.get("maxResults", 3), arguments.get("minRelevance", 0.0),
                        arguments.get("sources"))


def document_retrieval(context: list[dict], arguments: dict) -> dict:
    hits = retrieve(context, arguments)
    metadata = {"sources": [{"id": h["id"], "title": h["title"], "source": h["source"], "relevance": h["relevance"]}
                            for h in hits]}
    if not hits:
        return {"content": context, "metadata": metadata}
    body = "\n\n".join(f"# {h['title']} ({h.get('date', 'undated')})\n{h['text']}" for h in hits)
    block = {"type": "text", "text": f"[Retrieved Documents]\n\n{body}\n\n---"}
    return {"content": [block] + context, "metadata": metadata}
