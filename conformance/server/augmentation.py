"""Server role, profile `augmentation` (PR #142, the predecessor of context middleware).

Shapes follow the PR's schema diff (the catalog's `PR #142 schema diff` rows): `augmentation/list`
-> `{augmentations: [{name, description?, inputSchema}]}`, `augmentation/augment
{name, context: Content[], arguments?}` -> `{content: AugmentedContent[], hint?,
metadata?}` with `AugmentedContent = {content, properties?}`. The PR's prose
examples disagree (a single context object, `contents`); the catalog records
that ambiguity and the suite sends the schema's shape.

The PR's schema also names `notifications/augmentation/list_changed` and the
capability's `listChanged`. The fixture `conformance_list_toggle` (fixture
contract version 4) changes the list when invoked: it adds
`conformance_transient` when absent and removes it when present. The suite
invokes it twice (so the list ends as it began), lists after each change and
waits up to NOTIFY_WAIT seconds for each notification: a server that sends
it does so as it changes the list, so the wait ends at once; only a server
that never sends it costs the whole wait. Notifications are judged per
change (one after the addition, one after the removal; one sent before the
first change counts for none), and between the two toggles the suite
augments with `conformance_transient`, which must answer `{content: []}`.
"""

from __future__ import annotations

import anyio

from ..client.content import AUGMENT_CONTENT_TYPES, TEXT_BLOCK, blocks
from ..client.recording import Recording
from ..client.session import ConnectionPlan, Session
from ..core.judging import canonical_sorted, short
from ..core.model import NotApplicable, NotObserved, Violation, check
from .common import (
    context_probes,
    judge_list_result,
    judge_shapes,
    malformed_check,
    require_result,
    shape_violations,
    unadvertised_check,
    unknown_name_check,
    wire_check,
)

PROFILE = "augmentation"
CAPABILITY = "augmentation"
IDENTITY, PREPEND = "conformance_identity", "conformance_prepend_note"
UNKNOWN = "conformance_no_such_augmentation"
TOGGLE, TRANSIENT = "conformance_list_toggle", "conformance_transient"  # fixture contract version 4
LIST_CHANGED = "notifications/augmentation/list_changed"
NOTIFY_WAIT = 2.0  # seconds to wait for a notification after each change
REAL_CONTEXT = [{"type": "text", "text": "Conformance probe: what changed in the Q4 plan?"}]
MAX_REAL = 10


HOW_TO_CLAIM = "advertise capabilities.augmentation in the initialize result"


def claimer(rec: Recording) -> str | None:
    return f"capabilities.{CAPABILITY} is advertised" if CAPABILITY in rec.capabilities else None


def augment(session: Session, label: str, name: str, context, arguments=None):
    params = {"name": name, "context": context}
    if arguments is not None:
        params["arguments"] = arguments
    return session.send(label, "augmentation/augment", params)


async def driver(session: Session, rec: Recording) -> None:
    rec.listing["augmentations"] = await session.list_all("augmentation/list", "augmentations", "augmentation/list")
    # Every augmentation request is independent of the others: all at once.
    calls = []
    if rec.listed("augmentations", IDENTITY):
        calls.append(augment(session, "augment conformance_identity", IDENTITY, blocks(*AUGMENT_CONTENT_TYPES), {}))
    if rec.listed("augmentations", PREPEND):
        calls.append(augment(session, "augment conformance_prepend_note", PREPEND, blocks(TEXT_BLOCK), {}))
    calls += context_probes(session, rec, method="augmentation/augment", kind="augmentations", verb="augment",
                            unknown=UNKNOWN, fallback=IDENTITY, not_array=42, real_context=REAL_CONTEXT,
                            max_real=MAX_REAL)
    await session.together(*calls)
    if rec.listed("augmentations", TOGGLE):  # after every other call: the list changes under nobody
        for step in ("add", "remove"):
            seen = len(list_changed_notes(session.conn.wire))
            await augment(session, f"augment {TOGGLE} {step}", TOGGLE, blocks(TEXT_BLOCK), {})
            with anyio.move_on_after(NOTIFY_WAIT):
                while len(list_changed_notes(session.conn.wire)) == seen:
                    await anyio.sleep(0.02)
            rec.listing[f"augmentations after {step}"] = await session.list_all(
                "augmentation/list", "augmentations", f"augmentation/list after {step}")
            if step == "add":  # while listed, the transient augmentation answers like any other
                await augment(session, f"augment {TRANSIENT}", TRANSIENT, blocks(TEXT_BLOCK), {})


def list_changed_notes(wire) -> list:
    """The list_changed notifications the target sent, in order."""
    return [event for event in wire if event.direction == "in" and isinstance(event.message, dict)
            and event.message.get("method") == LIST_CHANGED and "id" not in event.message]


async def unclaimed_driver(session: Session, rec: Recording) -> None:
    await session.together(session.send("unadvertised augmentation/list", "augmentation/list", {}),
                           augment(session, "unadvertised augmentation/augment", IDENTITY, blocks(TEXT_BLOCK), {}))


@check("augmentation/server/capability-advertised",
       does="reads capabilities from the initialize result",
       must="a server offering augmentation advertises capabilities.augmentation as an object")
def capability_advertised(rec: Recording):
    require_result(rec, "initialize")
    if CAPABILITY not in rec.capabilities:
        raise Violation("capabilities.augmentation is absent", expected={CAPABILITY: {}}, actual=rec.capabilities)
    judge_shapes(shape_violations("capabilities", rec.capabilities, "capabilities"), "augmentation: {listChanged?}")


@check("augmentation/server/list-result-valid",
       does="sends augmentation/list (following nextCursor) and validates it against "
            "schemas/augmentation-list-result.json",
       must="augmentation/list returns {augmentations: [{name, description?, inputSchema}]}, names unique")
def list_result_valid(rec: Recording):
    return judge_list_result(rec, "augmentation/list", "augmentations", "augmentation-list-result",
                             "{augmentations: [{name, description?, inputSchema}]}", "augmentation(s)")


@check("augmentation/server/augment-result-valid",
       does="validates every augmentation/augment result it received against schemas/augment-result.json",
       must="augmentation/augment returns {content: AugmentedContent[], hint?: string, metadata?: object}")
def augment_result_valid(rec: Recording):
    labels = [label for label in rec.exchanges if label.startswith("augment ") and rec.exchanges[label].has_result]
    if not labels:
        raise NotObserved("no augmentation/augment returned a result")
    problems = []
    for label in labels:
        problems += shape_violations("augment-result", rec.cite(label).result, label)
    judge_shapes(problems, "{content: [{content, properties?}], hint?, metadata?}")
    return f"{len(labels)} result(s) valid"


@check("augmentation/server/identity-returns-context",
       does="augments with conformance_identity on a block of each content type the PR allows, two of them adjacent "
            "text blocks, with annotations and _meta",
       must="conformance_identity returns each context block, unchanged, as one AugmentedContent",
       needs=(f"augmentations:{IDENTITY}",))
def identity_returns_context(rec: Recording):
    ex = rec.cite("augment conformance_identity")
    result = require_result(rec, "augment conformance_identity")
    sent = ex.request["params"]["context"]
    got = [item.get("content") if isinstance(item, dict) else item for item in result.get("content") or ()]
    if canonical_sorted(got) != canonical_sorted(sent):
        raise Violation("the augmented content is not the context", expected=[{"content": b} for b in sent],
                        actual=result.get("content"))


@check("augmentation/server/prepend-note-hint",
       does="augments with conformance_prepend_note",
       must="conformance_prepend_note returns one text block NOTE with hint \"prepend\"",
       needs=(f"augmentations:{PREPEND}",))
def prepend_note_hint(rec: Recording):
    result = require_result(rec, "augment conformance_prepend_note")
    want = {"content": [{"content": {"type": "text", "text": "NOTE"}}], "hint": "prepend"}
    # What the contract fixes of a block is its type and text: the base protocol's optional members of a content
    # block (`_meta`, `annotations`) may ride along.
    got = {"content": [{"content": {k: v for k, v in block.items() if k in ("type", "text")}
                        if isinstance(block := (i or {}).get("content"), dict) else block}
                       for i in result.get("content") or () if isinstance(i, dict)], "hint": result.get("hint")}
    if canonical_sorted(got) != canonical_sorted(want):
        raise Violation("not one NOTE block with hint prepend", expected=want, actual=short(result))


@check("augmentation/server/list-changed-notified",
       does=f"invokes {TOGGLE} twice (it adds {TRANSIENT} to the augmentation list, then removes it), lists after "
            f"each change and waits up to {NOTIFY_WAIT:g} s for {LIST_CHANGED}",
       must=f"a server that advertises augmentation.listChanged: true sends {LIST_CHANGED} when its list of "
            "augmentations changes",
       needs=(f"augmentations:{TOGGLE}@4",))
def list_changed_notified(rec: Recording):
    advertised = rec.capabilities.get(CAPABILITY)
    if not isinstance(advertised, dict) or advertised.get("listChanged") is not True:
        raise NotApplicable("capabilities.augmentation.listChanged is not true: the server does not offer the "
                            "notification")
    before = {i.get("name") for i in rec.listing.get("augmentations") or () if isinstance(i, dict)}
    after = {}
    for step in ("add", "remove"):
        require_result(rec, f"augment {TOGGLE} {step}")
        require_result(rec, f"augmentation/list after {step}")
        after[step] = {i.get("name") for i in rec.listing.get(f"augmentations after {step}") or ()
                       if isinstance(i, dict)}  # every page of the re-list
    states = [TRANSIENT in before, TRANSIENT in after["add"], TRANSIENT in after["remove"]]
    if states[0] == states[1] or states[1] == states[2]:
        raise NotObserved(f"{TOGGLE} did not change the list ({TRANSIENT} listed before, after the first and after the "
                          f"second invocation: {states})", expected=f"{TRANSIENT} added, then removed",
                          actual={step: sorted(map(str, names)) for step, names in after.items()})
    # Judged per change: a notification counts for the change whose toggle was sent before it and the next one
    # not yet; one sent before the first change (after initialized, say) counts for nothing.
    starts = [rec.exchanges[f"augment {TOGGLE} {step}"].started for step in ("add", "remove")]
    notes = list_changed_notes(rec.wire)
    per_change = {step: [n for n in notes if start <= n.t < end]
                  for step, start, end in zip(("add", "remove"), starts, starts[1:] + [float("inf")])}
    missing = [step for step, got in per_change.items() if not got]
    if missing:
        early = sum(1 for n in notes if n.t < starts[0])
        raise Violation(f"no {LIST_CHANGED} after the change that {' and '.join(WHAT[s] for s in missing)} "
                        f"{TRANSIENT} (waited {NOTIFY_WAIT:g} s after each change)"
                        + (f"; {early} notification(s) came before any change, which count for none" if early else ""),
                        expected=f"one {LIST_CHANGED} after each change (added, then removed)",
                        actual={f"after {step}": [n.message for n in got] for step, got in per_change.items()})
    return f"a notification after each change ({', '.join(f'{s}: {len(g)}' for s, g in per_change.items())})"


WHAT = {"add": "added", "remove": "removed"}


@check("augmentation/server/transient-augmentation-answers",
       does=f"invokes {TOGGLE} to list {TRANSIENT}, then augments with {TRANSIENT} (one text block) while it is listed",
       must=f"{TRANSIENT}, while listed, answers {{content: []}}",
       needs=(f"augmentations:{TOGGLE}@4",))
def transient_augmentation_answers(rec: Recording):
    require_result(rec, f"augment {TOGGLE} add")
    require_result(rec, "augmentation/list after add")
    names = {i.get("name") for i in rec.listing.get("augmentations after add") or () if isinstance(i, dict)}  # every page
    if TRANSIENT not in names:
        raise NotObserved(f"{TRANSIENT} was not listed after the first invocation of {TOGGLE}",
                          expected=f"{TRANSIENT} listed", actual=sorted(map(str, names)))
    result = require_result(rec, f"augment {TRANSIENT}")
    if not isinstance(result, dict) or result.get("content") != []:  # optional members (_meta, hint) may come
        raise Violation(f"{TRANSIENT} did not answer {{content: []}}", expected={"content": []}, actual=short(result))
    return "answered {content: []} while listed"


unknown_name_check("augmentation/server/unknown-augmentation-rejected",
                   does=f"augments with a name the server never listed ({UNKNOWN})",
                   must="an unknown augmentation name is answered with a JSON-RPC error",
                   label="augment unknown", what="an unknown augmentation name")
malformed_check("augmentation/server/malformed-augment-rejected",
                does="sends augmentation/augment without context, and with a context that is a number",
                must="context is required and an array: a malformed augment is answered with a JSON-RPC error",
                cases=[("augment without context", "an augment without context"),
                       ("augment context not array", "an augment whose context is a number")])
unadvertised_check("augmentation/server/unadvertised-method-rejected",
                   does="sends augmentation/list and augmentation/augment to a server that does not advertise "
                        "augmentation",
                   methods=["augmentation/list", "augmentation/augment"], capability=CAPABILITY)


wire_check("augmentation/server/wire-messages-valid")
PLAN = ConnectionPlan(claimer, driver, unclaimed_driver)
