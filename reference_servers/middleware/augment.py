"""The same functions offered through `augmentation/augment` (PR #142's shape), with the hint each implies.

An augmentation answers `{content: [{content, properties?}], hint, metadata?}`:
retrieval prepends one AugmentedContent per document (with its relevance),
redaction replaces the context, moderation says safe or unsafe, the timestamp
is prepended, and tool relevance filters (one entry per relevant tool).
"""

from __future__ import annotations

from . import moderation, pii, retrieval, timestamp, tool_filter


def wrap(blocks: list[dict]) -> list[dict]:
    return [{"content": block} for block in blocks]


def augment_retrieval(context, arguments):
    hits = retrieval.retrieve(context, arguments)
    return {"content": [{"content": {"type": "text", "text": f"# {h['title']} ({h.get('date', 'undated')})\n{h['text']}"},
                         "properties": {"relevance": h["relevance"], "title": h["title"], "source": h["source"]}}
                        for h in hits], "hint": "prepend"}


def augment_redaction(context, arguments):
    result = pii.pii_redaction(context, arguments)
    return {"content": wrap(result["content"]), "hint": "replace", "metadata": result["metadata"]}


def augment_restoration(context, arguments):
    result = pii.pii_restoration(context, arguments)
    return {"content": wrap(result["content"]), "hint": "replace", "metadata": result["metadata"]}


def augment_moderation(context, arguments):
    result = moderation.content_moderation(context, arguments)
    flagged = bool(result["metadata"]["flags"])
    warning = result["content"][:1] if flagged else []
    return {"content": wrap(warning), "hint": "safe" if result["metadata"]["allow"] and not flagged else "unsafe",
            "metadata": result["metadata"]}


def augment_timestamp(context, arguments):
    result = timestamp.timestamp_injector(context, arguments)
    return {"content": wrap(result["content"][:1]), "hint": "prepend", "metadata": result["metadata"]}


def augment_tool_relevance(context, arguments):
    result = tool_filter.tool_filter(context, arguments)
    return {"content": [{"content": {"type": "text", "text": r["name"]}, "properties": {"relevance": r["score"]}}
                        for r in result["metadata"]["relevantTools"]],
            "hint": "filter", "metadata": result["metadata"]}
