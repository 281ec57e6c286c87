"""Tool filtering (the SEP's example 6): how relevant is each offered tool to the context?

Each tool is a small document (its name split on _ and -, plus its
description, plus synonyms of those words from a short map), ranked with BM25
against the context; scores are normalised by the best one, as in retrieval.
The context is returned unchanged; the verdict is in metadata.
"""

from __future__ import annotations

import re

from rank_bm25 import BM25Okapi

from .retrieval import tokens

# Words people use for what tools name differently.
SYNONYMS = {
    "documents": "notes files docs meeting report spec brief", "document": "notes file doc meeting",
    "email": "mail inbox message sent reply", "calendar": "meeting schedule event today tomorrow appointment",
    "calculate": "sum total compute math percent", "send": "reply forward mail", "search": "find look lookup",
    "weather": "forecast rain temperature", "stock": "portfolio market shares price", "news": "articles headlines",
}

SCHEMA = {
    "type": "object",
    "properties": {
        "availableTools": {"type": "array", "items": {"anyOf": [
            {"type": "string"},
            {"type": "object", "properties": {"name": {"type": "string"}, "description": {"type": "string"}},
             "required": ["name"]}]}},
        "maxTools": {"type": "integer", "minimum": 1, "default": 5},
        "minScore": {"type": "number", "minimum": 0, "maximum": 1, "default": 0.2},
    },
    "required": ["availableTools"],
    "additionalProperties": False,
}


def tool_document(tool) -> list[str]:
    name, description = (tool, "") if isinstance(tool, str) else (tool["name"], tool.get("description", ""))
    words = tokens(re.sub(r"[_\-]", " ", name) + " " + description)
    expanded = list(words)
    for word in words:
        expanded += SYNONYMS.get(word, "").split()
    return expanded


def score_tools(query: str, tools: list) -> list[dict]:
    names = [t if isinstance(t, str) else t["name"] for t in tools]
    terms = tokens(query)
    if not tools or not terms:
        return [{"name": n, "score": 0.0} for n in names]
    scores = BM25Okapi([tool_document(t) or ["_"] for t in tools]).get_scores(terms)
    best = float(max(scores)) if max(scores) > 0 else 1.0
    ranked = sorted(zip(names, scores), key=lambda p: (-p[1], names.index(p[0])))
    return [{"name": n, "score": round(float(max(s, 0.0) / best), 3)} for n, s in ranked]


def tool_filter(context: list[dict], arguments: dict) -> dict:
    from .retrieval import query_of

    ranked = score_tools(query_of(context), arguments["availableTools"])
    relevant = [r for r in ranked if r["score"] >= arguments.get("minScore", 0.2) and r["score"] > 0]
    suggested = [r["name"] for r in relevant[: arguments.get("maxTools", 5)]]
    return {"content": context, "metadata": {"relevantTools": relevant, "suggestedToolSet": suggested}}
