"""Tool filtering (the SEP's example 6): how relevant is each offered tool to the context?

The context is returned unchanged; the verdict is in metadata:
`relevantTools` (every tool scoring at least `minScore`, best first, ties in
the order given) and `suggestedToolSet` (the names of the first `maxTools` of
them).

Scoring, an IDF-weighted coverage of the tool's terms by the query:
- A tool's terms: its name split on `_`, `-`, `.`, spaces and camelCase
  ("search_documents", "getStockData"), counted with weight 2, and the words of
  its description with weight 1; all through `textutil.tokenize` (stop words
  dropped, Snowball-stemmed). A term in both counts once, with weight 2.
  Words that say little about what a tool is for (`GENERIC_WORDS`: get, set,
  list, fetch, data, info, ...) weigh 0.5 wherever they appear.
- The query: the tokenised text of the context's text blocks.
- Each tool term t is matched with strength 1.0 if the query has t itself;
  otherwise, if k distinct query words share a synonym group with t
  (`SYNONYMS` below: "notes" and "meeting" for "documents", "find" for
  "search"), with strength 1 - (1 - 0.6)^k (0.6 for one, 0.84 for two, ...);
  else 0.
- IDF over the offered tools, `log(1 + T / n_t)` (T tools, n_t of them with the
  term), so a term every tool has ("search") says less than one only this tool
  has ("documents").
- score = sum(weight_t * idf_t * strength_t) / sum(weight_t * idf_t),
  rounded to 3 decimals: the idf-weighted share of the tool's vocabulary the
  query touches, from 0 to 1.

Why not BM25 here (as retrieval uses): a tool is a document of two to twenty
words and a handful of tools is the whole corpus, where BM25's scores are
unbounded and only comparable within one query, so `minScore` could not be a
fixed number; normalising by the best tool (as retrieval does) would give the
top tool 1.0 even when nothing is relevant. A coverage score is bounded and
absolute: a tool sharing nothing with the query scores 0 whatever else is offered.
"""

from __future__ import annotations

import math
import re

from ..limits import checkpoint
from . import MiddlewareSpec
from .textutil import check_context, text_of, tokenize

SYNONYM_STRENGTH = 0.6
NAME_WEIGHT, DESCRIPTION_WEIGHT, GENERIC_WEIGHT = 2.0, 1.0, 0.5
GENERIC_WORDS = frozenset(tokenize("get set list fetch data info information tool run do create update delete make use "
                                   "item items result results value values object objects api"))

# Groups of words people use for the same kind of tool. A word may be in several groups.
SYNONYMS: dict[str, tuple[str, ...]] = {
    "documents": ("document", "doc", "docs", "file", "files", "note", "notes", "meeting", "minutes", "report",
                  "memo", "spec", "wiki", "page", "drive", "folder", "brief"),
    "email": ("email", "mail", "inbox", "message", "messages", "thread", "reply", "sender", "newsletter"),
    "calendar": ("calendar", "meeting", "meetings", "event", "events", "schedule", "appointment", "agenda",
                 "invite", "today", "tomorrow", "availability"),
    "search": ("search", "find", "look", "lookup", "locate", "retrieve", "query", "where", "fetch", "get", "show"),
    "send": ("send", "forward", "reply", "share", "deliver", "notify", "post", "write"),
    "calculate": ("calculate", "compute", "sum", "total", "add", "multiply", "divide", "percent", "percentage",
                  "math", "average", "convert", "arithmetic"),
    "weather": ("weather", "forecast", "rain", "temperature", "sunny", "snow", "wind", "umbrella"),
    "stock": ("stock", "stocks", "shares", "portfolio", "ticker", "price", "investment", "invest", "equity"),
    "news": ("news", "article", "articles", "headline", "headlines", "press", "recent"),
    "contacts": ("contact", "contacts", "phone", "address", "person", "people", "colleague", "directory"),
    "tasks": ("task", "tasks", "todo", "reminder", "reminders", "ticket", "tickets", "deadline", "assign"),
    "code": ("code", "repository", "repo", "commit", "bug", "function", "pull", "branch", "build"),
    "location": ("map", "maps", "location", "direction", "directions", "route", "distance", "nearby", "travel"),
    "translate": ("translate", "translation", "language", "french", "spanish", "german"),
}
_GROUPS: dict[str, set[str]] = {}  # stemmed word -> stemmed words it is a synonym of (itself excluded)
for _members in SYNONYMS.values():
    _stems = {s for word in _members for s in tokenize(word)}
    for _stem in _stems:
        _GROUPS.setdefault(_stem, set()).update(_stems - {_stem})
del _members, _stems, _stem

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")

SCHEMA = {
    "type": "object",
    "properties": {
        "availableTools": {
            "type": "array",
            "description": "the tools to choose from: names, or objects with a name and optional description "
                           "(MCP Tool objects work; other fields are ignored)",
            "items": {"anyOf": [
                {"type": "string", "minLength": 1},
                {"type": "object", "properties": {"name": {"type": "string", "minLength": 1},
                                                  "description": {"type": "string"}},
                 "required": ["name"]},
            ]},
        },
        "maxTools": {"type": "integer", "minimum": 1, "default": 5, "description": "size of suggestedToolSet"},
        "minScore": {"type": "number", "minimum": 0, "maximum": 1, "default": 0.2,
                     "description": "tools scoring below this are not relevant"},
    },
    "required": ["availableTools"],
    "additionalProperties": False,
}


def tool_terms(name: str, description: str = "") -> dict[str, float]:
    """Stemmed term -> weight (name words 2, description words 1, generic words 0.5)."""
    terms: dict[str, float] = {}
    for word in tokenize(description):
        terms[word] = DESCRIPTION_WEIGHT
    for word in tokenize(_CAMEL.sub(" ", name).replace("_", " ").replace("-", " ").replace(".", " ")):
        terms[word] = NAME_WEIGHT
    for word in GENERIC_WORDS & terms.keys():
        terms[word] = GENERIC_WEIGHT
    return terms


def _normalise_tools(tools) -> list[tuple[str, str]]:
    if not isinstance(tools, list):
        raise ValueError("availableTools must be a list of tool names or {name, description?} objects")
    out, seen = [], set()
    for tool in tools:
        checkpoint()
        if isinstance(tool, str):
            name, description = tool, ""
        elif isinstance(tool, dict) and isinstance(tool.get("name"), str):
            name, description = tool["name"], tool.get("description") or ""
            if not isinstance(description, str):
                raise ValueError(f"tool {name!r}: description must be a string")
        else:
            raise ValueError("each entry of availableTools must be a name or an object with a string name")
        if not name.strip():
            raise ValueError("tool names must not be empty")
        if name in seen:
            raise ValueError(f"tool {name!r} is listed twice in availableTools")
        seen.add(name)
        out.append((name, description))
    return out


def score_tools(query: str, tools) -> list[dict]:
    """Every tool with its score, best first (ties in the order given)."""
    tools = _normalise_tools(tools)
    query_terms = set(tokenize(query))
    support: dict[str, int] = {}  # term -> how many distinct query words it is a synonym of
    for word in query_terms:
        for term in _GROUPS.get(word, ()):
            support[term] = support.get(term, 0) + 1
    vocabularies = [checkpoint() or tool_terms(name, description) for name, description in tools]
    df: dict[str, int] = {}
    for terms in vocabularies:
        for term in terms:
            df[term] = df.get(term, 0) + 1
    scored = []
    for (name, _), terms in zip(tools, vocabularies):
        checkpoint()
        total = matched = 0.0
        for term, weight in terms.items():
            mass = weight * math.log(1 + len(tools) / df[term])
            total += mass
            if term in query_terms:
                matched += mass
            elif term in support:
                matched += mass * (1 - (1 - SYNONYM_STRENGTH) ** support[term])
        scored.append({"name": name, "score": round(matched / total, 3) if total else 0.0})
    order = sorted(range(len(scored)), key=lambda i: (-scored[i]["score"], i))
    return [scored[i] for i in order]


def tool_filter(context: list[dict], arguments: dict) -> dict:
    check_context(context)
    max_tools = arguments.get("maxTools", 5)
    if isinstance(max_tools, bool) or not isinstance(max_tools, int) or max_tools < 1:
        raise ValueError("maxTools must be a positive integer")
    min_score = arguments.get("minScore", 0.2)
    if isinstance(min_score, bool) or not isinstance(min_score, (int, float)) or not 0 <= min_score <= 1:
        raise ValueError("minScore must be a number from 0 to 1")
    if "availableTools" not in arguments:
        raise ValueError("availableTools (the tool names or definitions to choose from) is required")
    ranked = score_tools(text_of(context), arguments["availableTools"])
    relevant = [r for r in ranked if r["score"] > 0 and r["score"] >= min_score]
    return {"content": list(context),
            "metadata": {"relevantTools": relevant, "suggestedToolSet": [r["name"] for r in relevant[:max_tools]]}}


DEFINITION = MiddlewareSpec(
    "tool_filter",
    "Score how relevant each of availableTools is to the context (IDF-weighted coverage of the tool's name and "
    "description, with a small synonym map); the context is unchanged, metadata has relevantTools and "
    "suggestedToolSet.",
    SCHEMA, tool_filter)
