"""Gateway role, profile `augmentation`: the capability, augmentation/list and augmentation/augment pass through."""

from __future__ import annotations

from ..client.content import AUGMENT_CONTENT_TYPES, TEXT_BLOCK, blocks
from ..client.session import ConnectionPlan
from ..core.judging import canonical_sorted
from ..core.model import Violation, check
from .common import UNKNOWN_KEY, claimer, extras, received, require_mark, run_mark, wire_check
from .methods import Methods
from .recording import TransparencyRecording

PROFILE = "augmentation"
PREPEND_NOTE = {"content": [{"content": {"type": "text", "text": "NOTE"}}], "hint": "prepend"}

# Blocks the augmentation schema allows in a context (no resource_link), two texts adjacent (merging them is a
# change), with annotations and _meta: the identity probe the server role sends too.
AUGMENT_CONTEXT = blocks(*AUGMENT_CONTENT_TYPES)

AUGMENTATION = Methods("augmentation", "augmentation", "augmentation/list", "augmentations", "augmentation/augment",
                       {"conformance_identity": {"arguments": {}, "context": AUGMENT_CONTEXT},
                        "conformance_prepend_note": {"arguments": {}, "context": blocks(TEXT_BLOCK)}})
AUGMENTATION.register("augmentation/gateway/capability-forwarded-or-refused",
                      "augmentation/gateway/augment-params-arrive-unchanged")


def augment_fields(rec: TransparencyRecording, fixture: str) -> dict:
    """What the upstream adds to an augment result: metadata, _meta, an unknown key, and properties on each item
    (its relevance, and an unknown key), item by item (the identity's items follow its context, in order)."""
    count = len(AUGMENTATION.calls[fixture]["context"]) if fixture == "conformance_identity" else 1
    properties = {"relevance": 0.5, UNKNOWN_KEY: {"run": run_mark(rec)}}
    return {**extras(rec), "metadata": {"run": run_mark(rec)},
            "content": {str(i): {"properties": properties} for i in range(count)}}


AUGMENTATION.register_optional("augmentation/gateway/optional-fields-arrive-unchanged", augment_fields)


@check("augmentation/gateway/augment-every-content-type-unchanged",
       does="augments through the gateway with conformance_identity (text, image, audio, embedded resource) "
            "and conformance_prepend_note",
       must="augmentation/augment results come back unchanged: content items and hint as the upstream sent them")
def augment_every_content_type_unchanged(rec: TransparencyRecording):
    identity = AUGMENTATION.result_of(rec, "conformance_identity")
    received(rec, "augmentation/augment", "conformance_identity")
    # Each item's block is compared; its properties (the upstream's relevance) are optional-fields-arrive-unchanged's.
    want = [{"content": b} for b in AUGMENTATION.calls["conformance_identity"]["context"]]
    if canonical_sorted(_blocks(identity.get("content"))) != canonical_sorted(want):
        raise Violation("the identity augmentation's content arrives changed", expected=want,
                        actual=identity.get("content"))
    note = AUGMENTATION.result_of(rec, "conformance_prepend_note")
    received(rec, "augmentation/augment", "conformance_prepend_note")
    got = {k: _blocks(note.get(k)) if k == "content" else note.get(k) for k in PREPEND_NOTE}
    if canonical_sorted(got) != canonical_sorted(PREPEND_NOTE):
        raise Violation("conformance_prepend_note's result arrives changed", expected=PREPEND_NOTE, actual=got)
    for fixture, result in (("conformance_identity", identity), ("conformance_prepend_note", note)):
        metadata = result.get("metadata")
        require_mark(rec, f"{fixture}'s metadata.run", metadata.get("run") if isinstance(metadata, dict) else None)
    return "identity content and the prepend hint came back unchanged, from this run's upstream"


def _blocks(items):
    """AugmentedContent items without their properties: what the block comparison looks at."""
    if not isinstance(items, list):
        return items
    return [{"content": item.get("content")} if isinstance(item, dict) else item for item in items]


wire_check("augmentation/gateway/wire-messages-valid")
driver = AUGMENTATION.driver  # the list and call requests (methods.py)
PLAN = ConnectionPlan(claimer, driver)
