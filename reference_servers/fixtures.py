"""The conformance fixtures every profile's checks drive (the fixture contract).

Tools: conformance_memories (preprocessor), conformance_echo, the gated tools
and conformance_side_effects. Middleware: conformance_identity,
conformance_uppercase, conformance_strict_args. Augmentations:
conformance_identity, conformance_prepend_note. Guarded tools (contract
version 5, on a server that offers interceptors): conformance_guarded_echo and
conformance_guarded_failing, which the server runs through its own
interceptors as their invoker (`register_guarded`).
"""

from __future__ import annotations

from typing import Any, Callable

from .core import App, AugmentationDef, JsonRpcError, MiddlewareDef, Session, ToolDef

SATISFIED = "conformance:satisfied"
SATISFIED_V2 = "conformance:caf\u00e9"  # NFC; contract version 2's non-ASCII satisfied string
GATED = {
    "conformance_gated_ok": ["conformance:satisfied"],
    "conformance_gated_unmet": ["conformance:unsatisfied"],
    "conformance_gated_mixed": ["conformance:satisfied", "conformance:unsatisfied"],
    "conformance_gated_case": ["Conformance:Satisfied"],
    # Fixture contract version 2: near misses of satisfied strings (docs/fixture-contract.md).
    "conformance_gated_unicode_ok": ["conformance:caf\u00e9"],
    "conformance_gated_nfd": ["conformance:cafe\u0301"],
    "conformance_gated_confusable": ["conformance:s\u0430tisfied"],
    "conformance_gated_space": ["conformance:satisfied "],
}
EMPTY_OBJECT = {"type": "object", "properties": {}, "additionalProperties": False}


def text(value: str) -> list[dict]:
    return [{"type": "text", "text": value}]


async def memories(args: dict, session: Session) -> list[dict]:
    return text(f"conformance memories for: {args['query']}")


async def echo(args: dict, session: Session) -> list[dict]:
    return text(args["text"])


async def gated_body(args: dict, session: Session) -> list[dict]:
    session.gated_runs += 1
    return text("ran")


async def side_effects(args: dict, session: Session) -> list[dict]:
    return text(str(session.gated_runs))


def identity(context: list[dict], arguments: dict) -> dict:
    return {"content": context}


def uppercase(context: list[dict], arguments: dict) -> dict:
    changed = 0
    for block in context:
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            upper = block["text"].upper()
            changed += upper != block["text"]
            block["text"] = upper
    return {"content": context, "metadata": {"changed": changed}}


def strict_args(context: list[dict], arguments: dict) -> dict:
    return {"content": context, "metadata": {"mode": arguments["mode"]}}


def augment_identity(context: list[dict], arguments: dict) -> dict:
    return {"content": [{"content": block} for block in context]}


def prepend_note(context: list[dict], arguments: dict) -> dict:
    return {"content": [{"content": {"type": "text", "text": "NOTE"}}], "hint": "prepend"}


def nothing_augmented(context: list[dict], arguments: dict) -> dict:
    return {"content": []}


def register(app: App, profiles: set[str]) -> None:
    if "preprocessor-tools" in profiles:
        app.add_tool(ToolDef("conformance_memories", "Conformance fixture: a preprocessor returning memories for a query.",
                             {"type": "object", "properties": {"query": {"type": "string", "description":
                                                                           "The user input to match against memories"}},
                              "required": ["query"]}, memories, {"preprocessor": True}))
        app.add_tool(ToolDef("conformance_echo", "Conformance fixture: returns its text unchanged.",
                             {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}, echo))
    if "execution-requirements" in profiles:
        app.satisfied.update((SATISFIED, SATISFIED_V2))
        for name, requirements in GATED.items():
            app.add_tool(ToolDef(name, f"Conformance fixture: gated by {', '.join(requirements)}; counts its runs.",
                                 EMPTY_OBJECT, gated_body, {"execution": {"requirements": list(requirements)}}))
        app.add_tool(ToolDef("conformance_side_effects",
                             "Conformance fixture: how many times a gated tool's body has run in this session.",
                             EMPTY_OBJECT, side_effects))
    if "context-middleware" in profiles:
        app.add_middleware(MiddlewareDef("conformance_identity", "Conformance fixture: returns the context unchanged.",
                                         {"type": "object", "properties": {}}, identity))
        app.add_middleware(MiddlewareDef("conformance_uppercase",
                                         "Conformance fixture: uppercases text blocks; metadata.changed counts them.",
                                         {"type": "object", "properties": {}}, uppercase))
        app.add_middleware(MiddlewareDef("conformance_strict_args",
                                         "Conformance fixture: requires mode \"a\" or \"b\", returns the context.",
                                         {"type": "object", "properties": {"mode": {"type": "string", "enum": ["a", "b"]}},
                                          "required": ["mode"], "additionalProperties": False}, strict_args))
    if "augmentation" in profiles:
        app.add_augmentation(AugmentationDef("conformance_identity",
                                             "Conformance fixture: each context block as one augmented content.",
                                             {"type": "object", "properties": {}}, augment_identity))
        # Fixture contract version 4: each invocation adds conformance_transient to the session's list or removes it.
        app.add_list_toggle(AugmentationDef("conformance_list_toggle",
                                            "Conformance fixture (contract version 4): adds conformance_transient to "
                                            "this session's augmentation list, or removes it.",
                                            {"type": "object", "properties": {}}, nothing_augmented),
                            AugmentationDef("conformance_transient",
                                            "Conformance fixture: listed between two conformance_list_toggle calls.",
                                            {"type": "object", "properties": {}}, nothing_augmented))
        app.add_augmentation(AugmentationDef("conformance_prepend_note",
                                             "Conformance fixture: one text block NOTE to prepend.",
                                             {"type": "object", "properties": {}}, prepend_note))


# -- fixture contract version 5: tools the server guards with its own interceptors (SEP-2624) --------------------------
# tool -> the interceptors its chain runs, by phase. The request phase is the receiving side (validate, then mutate),
# the response phase the sending side (mutate, then validate); conformance_audit observes the result on its way out.
# conformance_uppercase does not guard the response: it would uppercase the content blocks' `type` as well.
GUARDS = {
    "conformance_guarded_echo": {"request": ["conformance_validator", "conformance_uppercase", "conformance_audit"],
                                 "response": ["conformance_audit"]},
    "conformance_guarded_failing": {"request": ["conformance_failing"], "response": ["conformance_audit"]},
}
TEXT_ARGUMENT = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}


def guard_with(registry: Any, names: dict[str, list[str]]) -> Callable[[str, Any], Any]:
    """The tool guard (core.ToolDef.guard) that runs `names[phase]` of `registry` as this server's chain."""
    from .interceptor_chain import ChainEntry, chain_error, run_chain

    def guard(phase: str, payload: Any) -> Any:
        entries = [ChainEntry(registry.items[name], registry) for name in names.get(phase, ())]
        outcome = run_chain(entries, "tools/call", phase, payload, invoker="server")
        if outcome["decision"] == "deny":
            err = chain_error(outcome)
            raise JsonRpcError(err.code, err.message, err.data)
        return outcome["finalPayload"]

    return guard


def register_guarded(app: App) -> None:
    """The guarded tools, on the interceptors `app.interceptors` already holds (their fixtures among them)."""
    descriptions = {"conformance_guarded_echo": "returns its text as the chain passed it (validated, then uppercased)",
                    "conformance_guarded_failing": "returns its text, behind the always failing mutation"}
    for name, names in GUARDS.items():
        app.add_tool(ToolDef(name, f"Conformance fixture (contract version 5): {descriptions[name]}.", TEXT_ARGUMENT,
                             echo, guard=guard_with(app.interceptors, names)))
