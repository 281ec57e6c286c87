"""Server role, profile `context-middleware` (the Context Middleware SEP).

The server advertises `contextMiddleware`, lists middleware with
`middleware/list` and runs one with `middleware/invoke {name, arguments,
context}` -> `{content, metadata?}`. Black-box checks apply to every listed
middleware (shapes; real middleware without required arguments is invoked on
a short text context); fixture checks pin behaviour down: identity over every
content type, uppercase on text only, strict argument validation.

When the server does not advertise the capability, the suite sends both
methods anyway and expects them rejected (-32601): advertisement and behaviour
must agree.
"""

from __future__ import annotations

from ..client.content import EMBEDDED_BLOCK, IMAGE_BLOCK, PASS_THROUGH_CONTEXT, TEXT_BLOCK, blocks
from ..client.recording import Recording
from ..client.session import ConnectionPlan, Session
from ..core.judging import canonical_sorted, short
from ..core.model import NotObserved, Violation, check
from .common import (
    context_probes,
    judge_list_result,
    judge_shapes,
    malformed_check,
    require_errors,
    require_result,
    shape_violations,
    unadvertised_check,
    unknown_name_check,
    wire_check,
)

PROFILE = "context-middleware"
CAPABILITY = "contextMiddleware"
IDENTITY, UPPERCASE, STRICT = "conformance_identity", "conformance_uppercase", "conformance_strict_args"
UNKNOWN = "conformance_no_such_middleware"
MAX_REAL = 10
REAL_CONTEXT = [{"type": "text", "text": "Conformance probe: what is on the calendar today?"}]
UPPERCASE_INPUT: list[dict] = [{"type": "text", "text": "Hello, World"}, IMAGE_BLOCK,
                   {"type": "text", "text": "second block, mixed Case"}, EMBEDDED_BLOCK]


HOW_TO_CLAIM = "advertise capabilities.contextMiddleware in the initialize result"


def claimer(rec: Recording) -> str | None:
    return f"capabilities.{CAPABILITY} is advertised" if CAPABILITY in rec.capabilities else None


def invoke(session: Session, label: str, name: str, context, arguments=None, **extra):
    params = {"name": name, "context": context}
    if arguments is not None:
        params["arguments"] = arguments
    params.update(extra)
    return session.send(label, "middleware/invoke", params)


async def driver(session: Session, rec: Recording) -> None:
    rec.listing["middleware"] = await session.list_all("middleware/list", "middleware", "middleware/list")
    # Every invocation is independent of the others (middleware is stateless): all at once.
    calls = []
    if rec.listed("middleware", IDENTITY):
        calls.append(invoke(session, "invoke conformance_identity", IDENTITY, blocks(*PASS_THROUGH_CONTEXT), {}))
    if rec.listed("middleware", UPPERCASE):
        calls.append(invoke(session, "invoke conformance_uppercase", UPPERCASE, blocks(*UPPERCASE_INPUT), {}))
    if rec.listed("middleware", STRICT):
        calls.append(invoke(session, "invoke strict valid", STRICT, blocks(TEXT_BLOCK), {"mode": "a"}))
        calls.append(invoke(session, "invoke strict invalid", STRICT, blocks(TEXT_BLOCK), {"mode": "c"}))
        calls.append(invoke(session, "invoke strict missing", STRICT, blocks(TEXT_BLOCK), {}))
    calls += context_probes(session, rec, method="middleware/invoke", kind="middleware", verb="invoke",
                            unknown=UNKNOWN, fallback=IDENTITY, not_array="not an array", real_context=REAL_CONTEXT,
                            max_real=MAX_REAL)
    await session.together(*calls)


async def unclaimed_driver(session: Session, rec: Recording) -> None:
    await session.together(session.send("unadvertised middleware/list", "middleware/list", {}),
                           invoke(session, "unadvertised middleware/invoke", IDENTITY, blocks(TEXT_BLOCK), {}))


@check("context-middleware/server/capability-advertised",
       does="reads capabilities from the initialize result",
       must="a server offering context middleware advertises capabilities.contextMiddleware as an object")
def capability_advertised(rec: Recording):
    require_result(rec, "initialize")
    if CAPABILITY not in rec.capabilities:
        raise Violation("capabilities.contextMiddleware is absent", expected={CAPABILITY: {}},
                        actual=rec.capabilities)
    judge_shapes(shape_violations("capabilities", rec.capabilities, "capabilities"), "contextMiddleware: {}")


@check("context-middleware/server/list-result-valid",
       does="sends middleware/list and validates the result against schemas/middleware-list-result.json",
       must="middleware/list returns {middleware: MiddlewareDefinition[]} with unique names and object inputSchemas")
def list_result_valid(rec: Recording):
    return judge_list_result(rec, "middleware/list", "middleware", "middleware-list-result",
                             "{middleware: [{name, description?, inputSchema?}]}", "middleware")


@check("context-middleware/server/invoke-result-valid",
       does="validates every middleware/invoke result it received (fixtures and real middleware) "
            "against schemas/middleware-invoke-result.json",
       must="middleware/invoke returns {content: Content[], metadata?: object}")
def invoke_result_valid(rec: Recording):
    labels = [label for label in rec.exchanges if label.startswith("invoke ") and rec.exchanges[label].has_result]
    if not labels:
        raise NotObserved("no middleware/invoke returned a result")
    problems = []
    for label in labels:
        problems += shape_violations("middleware-invoke-result", rec.cite(label).result, label)
    judge_shapes(problems, "{content: Content[], metadata?: object}")
    return f"{len(labels)} result(s) valid"


@check("context-middleware/server/identity-preserves-every-content-type",
       does="invokes conformance_identity on a block of every content type (text, image, audio, "
            "resource_link, embedded resource), two of them adjacent text blocks, with annotations and _meta",
       must="content passes through the identity middleware unchanged, every type and every field",
       needs=(f"middleware:{IDENTITY}",))
def identity_preserves_every_content_type(rec: Recording):
    ex = rec.cite("invoke conformance_identity")
    result = require_result(rec, "invoke conformance_identity")
    sent, got = ex.request["params"]["context"], result.get("content")
    if canonical_sorted(got) != canonical_sorted(sent):
        changed = [s.get("type") for s, g in zip(sent, got or []) if canonical_sorted(s) != canonical_sorted(g)] \
            if isinstance(got, list) and len(got) == len(sent) else "count differs"
        raise Violation(f"the context came back changed ({changed})", expected=sent, actual=got)


@check("context-middleware/server/uppercase-transforms-text",
       does="invokes conformance_uppercase on two text blocks between non-text blocks",
       must="conformance_uppercase uppercases every text block and reports metadata.changed = 2",
       needs=(f"middleware:{UPPERCASE}",))
def uppercase_transforms_text(rec: Recording):
    ex = rec.cite("invoke conformance_uppercase")
    result = require_result(rec, "invoke conformance_uppercase")
    sent, got = ex.request["params"]["context"], result.get("content")
    if not isinstance(got, list) or len(got) != len(sent):
        raise Violation("the content has a different number of blocks", expected=len(sent), actual=short(got))
    want = [b["text"].upper() for b in sent if b["type"] == "text"]
    have = [b.get("text") for b in got if isinstance(b, dict) and b.get("type") == "text"]
    if have != want:
        raise Violation("text blocks are not uppercased", expected=want, actual=have)
    changed = (result.get("metadata") or {}).get("changed") if isinstance(result.get("metadata"), dict) else None
    if changed != len(want):
        raise Violation("metadata.changed does not count the changed text blocks", expected=len(want),
                        actual=changed)


@check("context-middleware/server/uppercase-leaves-non-text-unchanged",
       does="compares the non-text blocks conformance_uppercase returned with those it was given",
       must="a middleware that transforms text leaves image and resource blocks exactly as they were",
       needs=(f"middleware:{UPPERCASE}",))
def uppercase_leaves_non_text_unchanged(rec: Recording):
    ex = rec.cite("invoke conformance_uppercase")
    got = require_result(rec, "invoke conformance_uppercase").get("content")
    sent = [b for b in ex.request["params"]["context"] if b["type"] != "text"]
    have = [b for b in got or () if isinstance(b, dict) and b.get("type") != "text"]
    if canonical_sorted(have) != canonical_sorted(sent):
        raise Violation("non-text blocks changed", expected=sent, actual=have)


@check("context-middleware/server/invalid-arguments-rejected",
       does="invokes conformance_strict_args with mode \"a\" (valid), \"c\" (not in the enum) and without mode",
       must="arguments are validated against the middleware's inputSchema: invalid ones get a JSON-RPC error",
       needs=(f"middleware:{STRICT}",))
def invalid_arguments_rejected(rec: Recording):
    ex = rec.cite("invoke strict valid")
    if not ex.has_result:
        raise NotObserved(f"valid arguments were rejected too ({ex.outcome_text()}), so a rejection shows nothing")
    return require_errors(rec, [("invoke strict invalid", "mode \"c\""), ("invoke strict missing", "missing mode")])


unknown_name_check("context-middleware/server/unknown-middleware-rejected",
                   does=f"invokes a middleware name the server never listed ({UNKNOWN})",
                   must="invoking an unknown middleware is answered with a JSON-RPC error",
                   label="invoke unknown", what="an unknown middleware name")
malformed_check("context-middleware/server/malformed-invoke-rejected",
                does="sends middleware/invoke without context, and with a context that is not an array",
                must="context: Content[] is required: a malformed invoke is answered with a JSON-RPC error",
                cases=[("invoke without context", "an invoke without context"),
                       ("invoke context not array", "an invoke whose context is a string")])
unadvertised_check("context-middleware/server/unadvertised-method-rejected",
                   does="sends middleware/list and middleware/invoke to a server that does not advertise "
                        "contextMiddleware",
                   methods=["middleware/list", "middleware/invoke"], capability=CAPABILITY)


wire_check("context-middleware/server/wire-messages-valid")
PLAN = ConnectionPlan(claimer, driver, unclaimed_driver)
