"""Content moderation with a transparent, deterministic lexicon scorer (the SEP's example 3).

Categories (the `policies` argument; unknown names are a ValueError):
violence, harassment, self_harm, hate, sexual, illicit.

How a text is scored
1. The text of all text blocks is joined, NFKC-normalised, invisible
   characters (soft hyphen, zero-width characters, ...) are dropped, Cyrillic
   and Greek letters drawn like Latin ones read as those (`kіll` with a
   Cyrillic і is `kill`; textutil.fold_confusables), curly apostrophes become
   `'` and runs of whitespace become one space. This is for scoring only: the
   content returned is the content given. Non-text blocks (images,
   audio, resources) are not scanned: a lexicon cannot read them.
2. Each category has rules (`LEXICON` below): a flag name, a weight in (0, 1]
   and a case-insensitive regular expression matched on word boundaries, so
   "skill" never matches "kill". A rule counts once however often it matches.
3. A category's score is the noisy-OR of the weights of its matching rules,
   `1 - prod(1 - w)`: one strong rule is enough, several weak ones add up, the
   score never exceeds 1. Scores are rounded to 3 decimals.
4. A category is flagged when its score is > 0 and >= `threshold` (default 0.3).
   Severity follows the highest flagged score: < 0.5 low, < 0.8 medium,
   >= 0.8 high; "none" when nothing is flagged. `allow` is false only for high.
5. `flags` lists the names of the rules that matched in flagged categories, in
   lexicon order, each once (several categories share "potential_harm_seeking").

Negation is not handled ("I would never kill ...") on purpose: in the
categories where it matters most, self-harm above all, a negated mention still
deserves a second look, and a scorer that can be talked out of a flag by
adding "not" is easy to game.

When something is flagged, a warning text block `[MODERATION WARNING: ...]` is
put before the context (`warning: "block"`, the default), so the original
blocks stay byte for byte as they were; `warning: "inline"` instead prefixes
the first text block with the warning and a blank line, which is the SEP's
example 3 exactly; `warning: "none"` leaves the content alone and reports in
metadata only.

A lexicon is crude next to a classifier model, but every decision can be
explained by pointing at a rule, the same input always gets the same verdict,
and it needs no model download. The interface (policies, threshold, flags,
severity, allow, scores) is what a model-based moderator would offer too.
"""

from __future__ import annotations

import math
import re

from ..limits import checkpoint
from . import MiddlewareSpec
from .textutil import check_context, fold_confusables, is_text, text_of

HARM_VERBS = r"hurt|harm|injure|attack|beat up|poison|kill|murder|stab|shoot|strangle"
HARASS_VERBS = r"hurt|upset|humiliate|embarrass|bully|harass|insult|intimidate|torment|scare"
ASKING = r"how (?:(?:can|do|could|would|should|might|will) (?:i|we|one|you|someone) |to |best to )"

# category -> [(flag, weight, pattern)]; patterns are matched case-insensitively on word boundaries.
LEXICON: dict[str, list[tuple[str, float, str]]] = {
    "violence": [
        ("potential_harm_seeking", 0.45, rf"{ASKING}(?:{HARM_VERBS})"),
        ("threat", 0.8, r"i(?:'m| am)? (?:going to|gonna|will|'ll) (?:kill|hurt|shoot|stab|murder|beat up) "
                        r"(?:you|him|her|them)"),
        ("violent_act", 0.35, r"kill(?:s|ed|ing)?|murder(?:s|ed|ing)?|stab(?:s|bed|bing)?|shoot(?:s|ing)?|"
                              r"strangl(?:e|es|ed|ing)|assault(?:s|ed|ing)?|massacre|behead(?:ed|ing)?|tortur(?:e|ed|ing)"),
        ("harm_language", 0.2, r"hurt(?:s|ing)?|harm(?:s|ed|ing)?|injur(?:e|es|ed|ing)|attack(?:s|ed|ing)?|"
                               r"punch(?:es|ed|ing)?"),
        ("weapon_mention", 0.25, r"guns?|rifles?|pistols?|knives|knife|machetes?|bombs?|explosives?|grenades?"),
    ],
    "harassment": [
        ("potential_harm_seeking", 0.45, rf"{ASKING}(?:{HARASS_VERBS})"),
        ("threat", 0.8, r"i(?:'m| am)? (?:going to|gonna|will|'ll) (?:kill|hurt|ruin|destroy|expose) "
                        r"(?:you|him|her|them)"),
        ("emotional_harm", 0.25, r"hurt (?:someone's|somebody's|someone|his|her|their|people's|my \w+'s) feelings|"
                                 r"humiliat(?:e|es|ed|ing)|ridicul(?:e|es|ed|ing)|mock(?:s|ed|ing)?"),
        ("bullying", 0.45, r"bull(?:y|ies|ied|ying)|harass(?:es|ed|ing|ment)?|intimidat(?:e|es|ed|ing)|"
                           r"stalk(?:s|ed|ing)?|dox(?:x)?(?:es|ed|ing)?|make (?:his|her|their) life (?:hell|miserable)"),
        ("insult", 0.3, r"idiots?|morons?|losers?|stupid|worthless|pathetic|imbeciles?"),
    ],
    "self_harm": [
        ("self_harm_intent", 0.85, r"kill myself|end my life|take my own life|hurt myself|harm myself|cut myself|"
                                   r"(?:want|wanna) to die|self[- ]harm(?:ing)?"),
        ("suicide_mention", 0.5, r"suicid(?:e|al)"),
        ("overdose_mention", 0.35, r"overdos(?:e|es|ed|ing)"),
    ],
    "hate": [
        ("dehumanizing_language", 0.7, r"(?:are|is) (?:vermin|subhuman|parasites|cockroaches|animals|filth)|subhuman"),
        ("supremacist_language", 0.7, r"white power|master race|racial purity|ethnic cleansing"),
        ("exclusion", 0.5, r"go back to (?:your|their) (?:own )?country|"
                           r"(?:should|must) (?:all )?be (?:deported|exterminated|wiped out|eliminated)"),
        ("hate_expression", 0.4, r"i (?:hate|despise) (?:all|every) \w+"),
    ],
    "sexual": [
        ("sexual_minors", 1.0, r"(?:child|minor|underage|kid)s? (?:porn\w*|sexual\w*|nudes?|naked)"),
        ("explicit_content", 0.6, r"porn\w*|nsfw|xxx|explicit sex\w*"),
        ("nudity", 0.35, r"nudes?|naked"),
        ("sexual_term", 0.2, r"sex|sexual(?:ly)?|erotic\w*"),
    ],
    "illicit": [
        ("drug_manufacture", 0.7, r"(?:make|making|cook|cooking|synthesi[sz]e|manufacture|produce) "
                                  r"(?:meth|methamphetamine|fentanyl|heroin|cocaine|lsd|mdma)"),
        ("weapon_manufacture", 0.7, r"(?:make|making|build|building|assemble) (?:a |an )?"
                                    r"(?:bomb|pipe bomb|explosive|ghost gun|silencer)"),
        ("fraud", 0.5, r"launder(?:ing)? money|money laundering|credit card fraud|identity theft|"
                       r"steal (?:someone's |a |an )?identit(?:y|ies)|counterfeit\w*|phishing"),
        ("hacking", 0.45, r"hack(?:ing)? into|crack(?:ing)? (?:a |the |their |his |her )?password|"
                          r"steal(?:ing)? (?:passwords|credentials|credit cards)|bypass(?:ing)? (?:the )?(?:paywall|drm)"),
        ("tax_evasion", 0.4, r"evad(?:e|ing) taxes|tax evasion"),
        ("drug_purchase", 0.35, r"buy(?:ing)? (?:drugs|meth|cocaine|heroin|fentanyl)"),
    ],
}
CATEGORIES = tuple(LEXICON)
_COMPILED = {category: [(flag, weight, re.compile(rf"\b(?:{pattern})\b", re.IGNORECASE))
                        for flag, weight, pattern in rules]
             for category, rules in LEXICON.items()}
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "\uff07": "'"})

SCHEMA = {
    "type": "object",
    "properties": {
        "policies": {
            "type": "array", "items": {"type": "string", "enum": list(CATEGORIES)}, "minItems": 1,
            "uniqueItems": True, "description": "categories to check (default: all of them)"},
        "threshold": {
            "type": "number", "minimum": 0, "maximum": 1, "default": 0.3,
            "description": "a category whose score is at least this (and above 0) is flagged"},
        "warning": {
            "type": "string", "enum": ["block", "inline", "none"], "default": "block",
            "description": "where the warning goes when flagged: its own first block, prefixed to the first text "
                           "block, or nowhere"},
    },
    "additionalProperties": False,
}


def normalise(text: str) -> str:
    return " ".join(fold_confusables(text).translate(_APOSTROPHES).split())


def score(text: str, policies) -> tuple[dict[str, float], dict[str, list[str]]]:
    """Per category: its score and the flags of the rules that matched."""
    text = normalise(text)
    scores, matched = {}, {}
    for category in policies:
        checkpoint()
        keep, hits = 1.0, []
        for flag, weight, pattern in _COMPILED[category]:
            if pattern.search(text):
                keep *= 1.0 - weight
                hits.append(flag)
        scores[category] = round(1.0 - keep, 3) if hits else 0.0
        matched[category] = hits
    return scores, matched


def severity_of(value: float) -> str:
    if value <= 0:
        return "none"
    return "low" if value < 0.5 else "medium" if value < 0.8 else "high"


def _policies(arguments: dict) -> list[str]:
    policies = arguments.get("policies")
    if policies is None:
        return list(CATEGORIES)
    if not isinstance(policies, list) or not policies:
        raise ValueError(f"policies must be a non-empty list of categories from: {', '.join(CATEGORIES)}")
    unknown = [p for p in policies if p not in LEXICON]
    if unknown:
        raise ValueError(f"unknown policy categor{'y' if len(unknown) == 1 else 'ies'} "
                         f"{', '.join(map(repr, unknown))}; known: {', '.join(CATEGORIES)}")
    return list(dict.fromkeys(policies))


def assess(context: list[dict], arguments: dict) -> dict:
    """The moderation verdict (the metadata of content_moderation)."""
    check_context(context)
    policies = _policies(arguments)
    threshold = arguments.get("threshold", 0.3)
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 <= threshold <= 1 \
            or math.isnan(threshold):
        raise ValueError("threshold must be a number from 0 to 1")
    scores, matched = score(text_of(context), policies)
    flagged = [c for c in policies if scores[c] > 0 and scores[c] >= threshold]
    flags = list(dict.fromkeys(flag for c in flagged for flag in matched[c]))
    level = severity_of(max((scores[c] for c in flagged), default=0.0))
    return {"flags": flags, "severity": level, "allow": level != "high", "scores": scores, "categories": flagged}


def warning_text(verdict: dict) -> str:
    if "potential_harm_seeking" in verdict["flags"]:
        reason = "This query may seek harmful advice"
    else:
        reason = f"This content may violate the {' and '.join(verdict['categories'])} " \
                 f"polic{'y' if len(verdict['categories']) == 1 else 'ies'}"
    return f"[MODERATION WARNING: {reason} (flagged: {', '.join(verdict['categories'])}; " \
           f"severity: {verdict['severity']})]"


def content_moderation(context: list[dict], arguments: dict) -> dict:
    verdict = assess(context, arguments)
    placement = arguments.get("warning", "block")
    if placement not in ("block", "inline", "none"):
        raise ValueError(f"warning must be 'block', 'inline' or 'none', not {placement!r}")
    content = list(context)
    if verdict["categories"] and placement == "block":
        content.insert(0, {"type": "text", "text": warning_text(verdict)})
    elif verdict["categories"] and placement == "inline":
        first = next((i for i, block in enumerate(content) if is_text(block)), None)
        if first is None:
            content.insert(0, {"type": "text", "text": warning_text(verdict)})
        else:
            content[first] = {**content[first], "text": f"{warning_text(verdict)}\n\n{content[first]['text']}"}
    return {"content": content, "metadata": verdict}


DEFINITION = MiddlewareSpec(
    "content_moderation",
    "Score the context's text against policy categories (violence, harassment, self_harm, hate, sexual, illicit) "
    "with a transparent weighted lexicon; metadata has flags, severity, allow and per-category scores, and a "
    "[MODERATION WARNING: ...] block is put first when something is flagged.",
    SCHEMA, content_moderation)
