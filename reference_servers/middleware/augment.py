"""The same functions offered as augmentations (MCP PR #142, `augmentation/augment`).

An augmentation answers `{"content": [AugmentedContent], "hint": str, "metadata"?: {...}}`
with `AugmentedContent = {"content": <content block>, "properties"?: {"relevance"?: number, ...}}`;
the hint tells the client what to do with it:

| augmentation        | hint               | content                                                         |
|---------------------|--------------------|-----------------------------------------------------------------|
| document_retrieval  | prepend            | one entry per retrieved document ("# title (date)\\ntext"), properties: relevance, score, id, title, source, date |
| pii_redaction       | replace            | the context's blocks, redacted; metadata.redactions as the middleware's |
| pii_restoration     | replace            | the context's blocks, restored                                  |
| content_moderation  | safe / unsafe      | one entry: the warning text when flagged, else an empty text (as PR #142's clean example); properties: status ("ok", "flagged" or "rejected"), severity, flags, scores. The hint follows `allow`: a flagged but allowed context is "safe" (status "flagged") |
| timestamp_injector  | prepend            | one entry: the "[Current time: ...]" block                      |
| tool_filter         | filter             | one entry per relevant tool, its name as text, properties.relevance = its score |

Arguments and their schemas are those of the middleware, except that
content_moderation has no `warning` argument here (the warning is always its
own entry).
"""

from __future__ import annotations

from . import AugmentationSpec, moderation, pii, retrieval, timestamp, tool_filter


def _wrap(blocks: list[dict]) -> list[dict]:
    return [{"content": block} for block in blocks]


def augment_retrieval(context: list[dict], arguments: dict) -> dict:
    hits = retrieval.retrieve(context, arguments)
    content = []
    for hit in hits:
        entry = retrieval.source_entry(hit)
        content.append({
            "content": {"type": "text", "text": f"# {hit['title']} ({retrieval.display_date(hit.get('date'))})\n"
                                                f"{hit['text']}"},
            "properties": {"relevance": entry.pop("relevance"), **entry}})
    return {"content": content, "hint": "prepend",
            "metadata": {"sources": [retrieval.source_entry(h) for h in hits]}}


def augment_redaction(context: list[dict], arguments: dict) -> dict:
    result = pii.pii_redaction(context, arguments)
    return {"content": _wrap(result["content"]), "hint": "replace", "metadata": result["metadata"]}


def augment_restoration(context: list[dict], arguments: dict) -> dict:
    result = pii.pii_restoration(context, arguments)
    return {"content": _wrap(result["content"]), "hint": "replace", "metadata": result["metadata"]}


def augment_moderation(context: list[dict], arguments: dict) -> dict:
    verdict = moderation.assess(context, arguments)
    if not verdict["categories"]:
        status, text = "ok", ""
    else:
        status, text = ("flagged" if verdict["allow"] else "rejected"), moderation.warning_text(verdict)
    properties = {"status": status, "severity": verdict["severity"], "flags": verdict["flags"],
                  "scores": verdict["scores"]}
    return {"content": [{"content": {"type": "text", "text": text}, "properties": properties}],
            "hint": "safe" if verdict["allow"] else "unsafe", "metadata": verdict}


def augment_timestamp(context: list[dict], arguments: dict, now=None) -> dict:
    result = timestamp.timestamp_injector([], arguments, now=now)
    return {"content": _wrap(result["content"]), "hint": "prepend", "metadata": result["metadata"]}


def augment_tool_relevance(context: list[dict], arguments: dict) -> dict:
    result = tool_filter.tool_filter(context, arguments)
    return {"content": [{"content": {"type": "text", "text": tool["name"]}, "properties": {"relevance": tool["score"]}}
                        for tool in result["metadata"]["relevantTools"]],
            "hint": "filter", "metadata": result["metadata"]}


MODERATION_SCHEMA = {**moderation.SCHEMA,
                     "properties": {k: v for k, v in moderation.SCHEMA["properties"].items() if k != "warning"}}

AUGMENTATIONS: list[AugmentationSpec] = [
    AugmentationSpec("document_retrieval", "Documents relevant to the context (BM25), one entry each with its "
                     "relevance; hint prepend.", retrieval.SCHEMA, augment_retrieval),
    AugmentationSpec("pii_redaction", "The context with PII replaced by typed handles; hint replace; "
                     "metadata.redactions maps handles to values.", pii.REDACTION_SCHEMA, augment_redaction),
    AugmentationSpec("pii_restoration", "The context with handles replaced by their values; hint replace.",
                     pii.RESTORATION_SCHEMA, augment_restoration),
    AugmentationSpec("content_moderation", "A moderation verdict: hint safe or unsafe, a warning entry when "
                     "flagged, scores per category.", MODERATION_SCHEMA, augment_moderation),
    AugmentationSpec("timestamp_injector", "The current time to prepend, in an IANA time zone; hint prepend.",
                     timestamp.SCHEMA, augment_timestamp),
    AugmentationSpec("tool_filter", "The relevant tools, one entry per tool name with its relevance; hint filter.",
                     tool_filter.SCHEMA, augment_tool_relevance),
]
