"""Real context middleware a team would deploy, as pure functions `(context, arguments) -> result`.

Each entry has a name, a description and an accurate JSON Schema for its
arguments; `MIDDLEWARE` is offered through `middleware/invoke`, `AUGMENTATIONS`
through `augmentation/augment` (same functions, PR #142's result shape).
Functions raise ValueError for arguments that are wrong beyond the schema.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from . import augment, moderation, pii, retrieval, timestamp, tool_filter


@dataclass(frozen=True)
class Spec:
    name: str
    description: str
    input_schema: dict
    fn: Callable[[list[dict], dict], dict]


MIDDLEWARE = [
    Spec("pii_redaction", "Replace emails, phone numbers, US SSNs, payment cards and IPv4 addresses with typed "
         "handles like [EMAIL_1]; metadata.redactions maps handles to values.", pii.REDACTION_SCHEMA, pii.pii_redaction),
    Spec("pii_restoration", "Put the original values back for the handles pii_redaction made.",
         pii.RESTORATION_SCHEMA, pii.pii_restoration),
    Spec("content_moderation", "Score the context against policy categories; flags, severity and allow in "
         "metadata, a warning block first when flagged.", moderation.SCHEMA, moderation.content_moderation),
    Spec("document_retrieval", "Prepend the most relevant documents of the corpus (BM25), with titles and "
         "relevance in metadata.", retrieval.SCHEMA, retrieval.document_retrieval),
    Spec("timestamp_injector", "Prepend the current time in a time zone.", timestamp.SCHEMA,
         timestamp.timestamp_injector),
    Spec("tool_filter", "Score how relevant each available tool is to the context; relevantTools and "
         "suggestedToolSet in metadata.", tool_filter.SCHEMA, tool_filter.tool_filter),
]

AUGMENTATIONS = [
    Spec("document_retrieval", "Relevant documents to prepend, each with its relevance.", retrieval.SCHEMA,
         augment.augment_retrieval),
    Spec("pii_redaction", "The context with PII replaced by handles (hint replace).", pii.REDACTION_SCHEMA,
         augment.augment_redaction),
    Spec("pii_restoration", "The context with handles restored (hint replace).", pii.RESTORATION_SCHEMA,
         augment.augment_restoration),
    Spec("content_moderation", "safe or unsafe, with a warning when flagged.", moderation.SCHEMA,
         augment.augment_moderation),
    Spec("timestamp_injector", "The current time to prepend.", timestamp.SCHEMA, augment.augment_timestamp),
    Spec("tool_filter", "The relevant tools, one entry each with its relevance (hint filter).", tool_filter.SCHEMA,
         augment.augment_tool_relevance),
]

BY_NAME = {spec.name: spec for spec in MIDDLEWARE}
