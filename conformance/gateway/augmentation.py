"""Gateway role, profile `augmentation`: the capability, augmentation/list and augmentation/augment pass through."""

from __future__ import annotations

from ..core.judging import canonical_sorted
from ..core.model import Violation, check
from ..server.common import AUDIO_BLOCK, EMBEDDED_BLOCK, IMAGE_BLOCK, TEXT_BLOCK, blocks
from ..server.recording import Recording
from ..server.session import Plan
from .common import claimer, wire_check
from .methods import Methods

PROFILE = "augmentation"
PREPEND_NOTE = {"content": [{"content": {"type": "text", "text": "NOTE"}}], "hint": "prepend"}

# Blocks the augmentation schema allows in a context (no resource_link), with annotations and _meta.
AUGMENT_CONTEXT = blocks(TEXT_BLOCK, IMAGE_BLOCK, AUDIO_BLOCK, EMBEDDED_BLOCK)

AUGMENTATION = Methods("augmentation", "augmentation", "augmentation/list", "augmentations", "augmentation/augment",
                       {"conformance_identity": {"arguments": {}, "context": AUGMENT_CONTEXT},
                        "conformance_prepend_note": {"arguments": {}, "context": blocks(TEXT_BLOCK)}})
AUGMENTATION.register("augmentation/gateway/capability-forwarded-or-refused",
                      "augmentation/gateway/augment-params-arrive-unchanged")


@check("augmentation/gateway/augment-every-content-type-unchanged",
       does="augments through the gateway with conformance_identity (text, image, audio, embedded resource) "
            "and conformance_prepend_note",
       must="augmentation/augment results come back unchanged: content items and hint as the upstream sent them")
def augment_every_content_type_unchanged(rec: Recording):
    identity = AUGMENTATION.result_of(rec, "conformance_identity")
    want = [{"content": b} for b in AUGMENTATION.calls["conformance_identity"]["context"]]
    if canonical_sorted(identity.get("content")) != canonical_sorted(want):
        raise Violation("the identity augmentation's content arrives changed", expected=want,
                        actual=identity.get("content"))
    note = AUGMENTATION.result_of(rec, "conformance_prepend_note")
    got = {k: note.get(k) for k in PREPEND_NOTE}
    if canonical_sorted(got) != canonical_sorted(PREPEND_NOTE):
        raise Violation("conformance_prepend_note's result arrives changed", expected=PREPEND_NOTE, actual=got)
    return "identity content and the prepend hint came back unchanged"


wire_check("augmentation/gateway/wire-messages-valid")
PLAN = Plan(claimer, AUGMENTATION.driver)
