"""Content moderation: a transparent, deterministic lexicon scorer (the SEP's example 3).

Each policy category has weighted patterns (word-boundary regular expressions).
A category's score is the sum of the weights of distinct patterns found, capped
at 1. Flags name what matched; severity follows the highest score; `allow` is
false only for a high-severity flag. When flagged, a warning block is put
before the context, so the model sees the warning and the original text.

A lexicon is crude next to a classifier model, but it is explainable,
reproducible and needs no model download; the interface is what a model-based
moderator would offer too.
"""

from __future__ import annotations

import re

# category -> [(flag, weight, pattern)]
LEXICON: dict[str, list[tuple[str, float, str]]] = {
    "violence": [
        ("potential_harm_seeking", 0.45, r"\bhow (?:can|do|could|would) i (?:hurt|harm|injure|attack)\b"),
        ("weapon_mention", 0.3, r"\b(?:gun|rifle|knife|bomb|explosive)s?\b"),
        ("violent_intent", 0.6, r"\b(?:kill|murder|stab|shoot)\b"),
    ],
    "harassment": [
        ("potential_harm_seeking", 0.45, r"\bhurt (?:someone|somebody|him|her|them)(?:'s)? feelings\b"),
        ("insult", 0.35, r"\b(?:idiot|stupid|loser|worthless)\b"),
        ("intimidation", 0.5, r"\b(?:threaten|intimidate|bully)\b"),
    ],
    "self_harm": [
        ("self_harm_risk", 0.8, r"\b(?:kill myself|end my life|hurt myself|self[- ]harm)\b"),
    ],
    "hate": [
        ("dehumanizing_language", 0.7, r"\b(?:vermin|subhuman)\b"),
    ],
    "sexual": [
        ("explicit_content", 0.6, r"\b(?:explicit|pornographic|nsfw)\b"),
    ],
    "illicit": [
        ("illicit_request", 0.6, r"\b(?:make|cook|synthesi[sz]e) (?:meth|drugs|explosives)\b"),
        ("fraud", 0.5, r"\b(?:launder money|steal (?:a |an )?identit(?:y|ies)|credit card fraud)\b"),
    ],
}
CATEGORIES = tuple(LEXICON)
COMPILED = {cat: [(flag, weight, re.compile(p, re.I)) for flag, weight, p in rows] for cat, rows in LEXICON.items()}

SCHEMA = {
    "type": "object",
    "properties": {
        "policies": {"type": "array", "items": {"type": "string", "enum": list(CATEGORIES)}, "uniqueItems": True,
                     "description": "categories to check (default: all)"},
        "threshold": {"type": "number", "minimum": 0, "maximum": 1, "default": 0.3,
                      "description": "a category scoring at least this is flagged"},
    },
    "additionalProperties": False,
}


def severity(score: float) -> str:
    if score >= 0.75:
        return "high"
    if score >= 0.4:
        return "medium"
    if score > 0:
        return "low"
    return "none"


def score_text(text: str, policies) -> tuple[dict[str, float], list[str]]:
    scores, flags = {}, []
    for category in policies:
        total = 0.0
        for flag, weight, pattern in COMPILED[category]:
            if pattern.search(text):
                total += weight
                if flag not in flags:
                    flags.append(flag)
        scores[category] = round(min(total, 1.0), 3)
    return scores, flags


def content_moderation(context: list[dict], arguments: dict) -> dict:
    policies = arguments.get("policies") or list(CATEGORIES)
    threshold = arguments.get("threshold", 0.3)
    text = "\n".join(b["text"] for b in context if b.get("type") == "text" and isinstance(b.get("text"), str))
    scores, flags = score_text(text, policies)
    flagged = {c: s for c, s in scores.items() if s >= threshold}
    top = max(flagged.values(), default=0.0)
    level = severity(top) if flagged else "none"
    metadata = {"flags": flags if flagged else [], "severity": level, "allow": level != "high", "scores": scores}
    if flagged:
        reason = "may seek harmful advice" if "potential_harm_seeking" in flags else \
            f"may violate {', '.join(sorted(flagged))} policy"
        context = [{"type": "text", "text": f"[MODERATION WARNING: This query {reason}]"}] + context
    return {"content": context, "metadata": metadata}
