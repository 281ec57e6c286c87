"""Gateway role, profile `context-middleware`: the capability, middleware/list and middleware/invoke pass through."""

from __future__ import annotations

from ..client.content import PASS_THROUGH_CONTEXT, blocks
from ..client.session import ConnectionPlan
from ..core.judging import canonical_sorted
from ..core.model import Violation, check
from .common import claimer, extras, received, require_mark, run_mark, wire_check
from .methods import Methods
from .recording import TransparencyRecording

PROFILE = "context-middleware"

MIDDLEWARE = Methods("context-middleware", "contextMiddleware", "middleware/list", "middleware", "middleware/invoke",
                     {"conformance_identity": {"arguments": {}, "context": blocks(*PASS_THROUGH_CONTEXT)}})

MIDDLEWARE.register("context-middleware/gateway/capability-forwarded-or-refused",
                    "context-middleware/gateway/invoke-params-arrive-unchanged")
MIDDLEWARE.register_optional("context-middleware/gateway/optional-fields-arrive-unchanged",
                             lambda rec, fixture: {**extras(rec), "metadata": {"run": run_mark(rec)}})


@check("context-middleware/gateway/invoke-every-content-type-unchanged",
       does="invokes conformance_identity through the gateway with a block of every content type "
            "(text, image, audio, resource_link, embedded resource; two text blocks adjacent; annotations and _meta "
            "on some)",
       must="the middleware/invoke result comes back unchanged: the upstream's content, block for block, field for field")
def invoke_every_content_type_unchanged(rec: TransparencyRecording):
    result = MIDDLEWARE.result_of(rec, "conformance_identity")
    received(rec, "middleware/invoke", "conformance_identity")
    want = MIDDLEWARE.calls["conformance_identity"]["context"]
    if canonical_sorted(result.get("content")) != canonical_sorted(want):
        raise Violation("the identity middleware's content arrives changed", expected=want, actual=result.get("content"))
    metadata = result.get("metadata")
    require_mark(rec, "the identity middleware's metadata.run", metadata.get("run") if isinstance(metadata, dict) else None)
    return f"{len(want)} blocks came back unchanged, from this run's upstream"


wire_check("context-middleware/gateway/wire-messages-valid")
driver = MIDDLEWARE.driver  # the list and call requests (methods.py)
PLAN = ConnectionPlan(claimer, driver)
