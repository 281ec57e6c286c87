"""The content the suite sends as a client: one block of every MCP content type, and the contexts built of
them that the identity fixtures (conformance_identity of context-middleware and augmentation) are sent, in the
server role and through a gateway alike."""

from __future__ import annotations

import copy

# One block of every MCP content type (2025-11-25), with annotations and _meta on
# some, so "unchanged" means unchanged to the last field.
PNG_1PX = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAwS2OUAAAAABJRU5ErkJggg==")
WAV_SILENCE = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQIAAAAAAA=="

TEXT_BLOCK = {"type": "text", "text": "Conformance probe: mixed Case text, ümlauts and emoji \u2713.",
              "annotations": {"audience": ["user"], "priority": 0.5}}
IMAGE_BLOCK = {"type": "image", "data": PNG_1PX, "mimeType": "image/png"}
AUDIO_BLOCK = {"type": "audio", "data": WAV_SILENCE, "mimeType": "audio/wav", "_meta": {"conformance/probe": 1}}
RESOURCE_LINK_BLOCK = {"type": "resource_link", "uri": "file:///conformance/probe.txt", "name": "probe.txt",
                       "mimeType": "text/plain"}
EMBEDDED_BLOCK = {"type": "resource",
                  "resource": {"uri": "file:///conformance/embedded.txt", "mimeType": "text/plain",
                               "text": "embedded resource text"}}
# A second text block, sent right after TEXT_BLOCK: a pass-through that merges adjacent text blocks modifies the
# context. It carries _meta, as IMAGE_BLOCK carries annotations, so optional fields show on more than one type.
NEXT_TEXT_BLOCK = {"type": "text", "text": "A second, adjacent text block.", "_meta": {"conformance/probe": 2}}
ANNOTATED_IMAGE_BLOCK = {**IMAGE_BLOCK, "annotations": {"audience": ["assistant"], "priority": 1}}

# What context-middleware's identity fixture is sent: every content type, two adjacent text blocks (merging
# them is a change), annotations and _meta on several blocks.
PASS_THROUGH_CONTEXT: list[dict] = [TEXT_BLOCK, NEXT_TEXT_BLOCK, ANNOTATED_IMAGE_BLOCK, AUDIO_BLOCK,
                                    RESOURCE_LINK_BLOCK, EMBEDDED_BLOCK]
# What augmentation's identity fixture is sent: the PR's context union, text, image, audio, embedded resource
# (no resource_link). Two adjacent text blocks (merging them is a change), annotations and _meta on several blocks.
AUGMENT_CONTENT_TYPES: list[dict] = [TEXT_BLOCK, NEXT_TEXT_BLOCK, ANNOTATED_IMAGE_BLOCK, AUDIO_BLOCK, EMBEDDED_BLOCK]


def blocks(*items: dict) -> list[dict]:
    return copy.deepcopy(list(items))
