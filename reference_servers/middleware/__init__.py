"""Context middleware a team would deploy, as pure functions `(context, arguments) -> result`.

Every middleware is a plain function `fn(context: list[dict], arguments: dict) -> dict`
that answers `{"content": [content blocks], "metadata": {...}}` (the Context
Middleware SEP's MiddlewareInvokeResult). It never mutates what it is given:
text blocks it changes are copied, every other block (image, audio, resource,
resource_link, or a type it does not know) is passed through as the very same
object. Arguments that are wrong beyond what the JSON Schema can say raise
`ValueError` with a message meant for the caller; the server turns that into a
JSON-RPC invalid-params error.

Each module exposes `DEFINITION` (pii/ also `RESTORATION`), a `MiddlewareSpec`
with the name, description and JSON Schema (draft 2020-12, `type: object`) that
`middleware/list` shows. `ALL` lists them in the order a server offers them;
`augment.AUGMENTATIONS` offers the same functions in the augmentation shape of
MCP PR #142 (`AugmentationSpec`).

| module        | middleware                          |
|---------------|-------------------------------------|
| pii/          | pii_redaction, pii_restoration      |
| moderation.py | content_moderation                  |
| retrieval.py  | document_retrieval (corpus.json)    |
| timestamp.py  | timestamp_injector                  |
| tool_filter.py| tool_filter                         |
| memory.py     | MemoryStore for the RetrieveMemories preprocessor tool (not a middleware) |
| augment.py    | AUGMENTATIONS                       |
| textutil.py   | text blocks, the ranking tokenizer, BM25 with Lucene's IDF |
"""

from __future__ import annotations

from typing import Callable

# One definition of what a middleware is, shared with the server (reference_servers.core); the names here are
# the ones the middleware modules declare themselves with.
from ..core import AugmentationDef as AugmentationSpec
from ..core import MiddlewareDef as MiddlewareSpec

Fn = Callable[[list, dict], dict]

# The submodules import the names above, so they are imported after them.
from . import moderation, pii, retrieval, timestamp, tool_filter  # noqa: E402
from .augment import AUGMENTATIONS  # noqa: E402

ALL: list[MiddlewareSpec] = [
    pii.DEFINITION,
    pii.RESTORATION,
    moderation.DEFINITION,
    retrieval.DEFINITION,
    timestamp.DEFINITION,
    tool_filter.DEFINITION,
]
MIDDLEWARE = ALL  # the name the reference server's app imports
BY_NAME: dict[str, MiddlewareSpec] = {spec.name: spec for spec in ALL}

__all__ = ["ALL", "AUGMENTATIONS", "BY_NAME", "MIDDLEWARE", "AugmentationSpec", "MiddlewareSpec"]
