"""Gateway role, transparency: every profile's fields and methods come through a proxy unchanged.

DESIGN.md §Gateway contract: the suite plays the upstream (conformance/gateway/upstream.py, every
fixture, correct) and the downstream client. A gateway must pass each profile's fields and methods
through unchanged, or refuse a method cleanly (not advertised, answered -32601); it must never
advertise and then drop, and never leave a request hanging.

Theory of operation
-------------------
- Recording first (`record_gateway`): one connection per profile, concurrently, each with its own
  gateway process and its own upstream, whose log of received messages is attached to the recording
  (`rec.upstream`). The connection starts as in the server role (initialize, tools/list, reused from
  conformance/server/recording.py); then the profile's driver sends its requests. Gateways may rename
  what they aggregate (Gatekit serves `conformance_echo` as `fixture__conformance_echo`), so drivers
  and judges find fixtures by name suffix and use the name the gateway lists.
- Judging second: small pure functions over the recording. The suite's upstream offers every profile,
  so every profile is claimed; what the gateway does not let through is a failure, "not observed"
  when the suite could not even see it.
- A middleware or augmentation method refused cleanly leaves nothing to compare: the comparison
  checks then skip, naming the refusal (capability-forwarded-or-refused judges the refusal itself).
"""

from __future__ import annotations

import json
import tempfile
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio

from ..model import NotApplicable, NotObserved, Violation, check
from ..server.common import (
    AUDIO_BLOCK,
    EMBEDDED_BLOCK,
    EVERY_CONTENT_TYPE,
    IMAGE_BLOCK,
    TEXT_BLOCK,
    blocks,
    canonical,
    short,
    text_of,
)
from ..server.common import judge_wire as common_judge_wire
from ..server.execution_requirements import GATED, SATISFIED
from ..server.recording import Recording, Session, record
from ..targets import TargetUnavailable
from .launch import SpecFactory, background, gateway_factory, upstream_for

PROFILES = ("preprocessor-tools", "execution-requirements", "context-middleware", "augmentation")
# What the upstream fixture server sends, as the fixture contract fixes it. Stated here rather than
# imported from upstream.py: the checks judge against the contract, not against one implementation.
UPSTREAM_CAPABILITIES = {"tools": {}, "contextMiddleware": {}, "augmentation": {"listChanged": False}}
PREPEND_NOTE = {"content": [{"content": {"type": "text", "text": "NOTE"}}], "hint": "prepend"}
QUERY = "gateway transparency probe: ümlauts \u2713"
ECHO_TEXT = "Echo through the gateway, mixed Case \u2713"
UNMET = ("conformance_gated_unmet", "conformance_gated_mixed", "conformance_gated_case")
SEPARATORS = "_.-/:"


# ------------------------------------------------------------------------------------------ fixture lookup

def find_named(items, name: str) -> dict | None:
    """The item called `name`, or else one whose name ends with it after a separator (a gateway's prefix)."""
    items = [i for i in items or () if isinstance(i, dict) and isinstance(i.get("name"), str)]
    for item in items:
        if item["name"] == name:
            return item
    for item in items:
        full = item["name"]
        if full.endswith(name) and full[-len(name) - 1] in SEPARATORS:
            return item
    return None


def listed_name(items, name: str) -> str:
    """The name to call a fixture by through the gateway (its own name when the gateway lists nothing)."""
    item = find_named(items, name)
    return item["name"] if item else name


def upstream_received(rec: Recording) -> list:
    return getattr(rec, "upstream", None) or []


def upstream_requests(rec: Recording, method: str, name: str) -> list[dict]:
    """Requests of `method` for fixture `name` that reached the upstream, in order."""
    return [m for m in upstream_received(rec) if isinstance(m, dict) and m.get("method") == method
            and isinstance(m.get("params"), dict) and m["params"].get("name") == name]


def failed(ex) -> bool:
    return ex.has_error or (ex.has_result and isinstance(ex.result, dict) and ex.result.get("isError") is True)


def error_text(ex) -> str:
    if ex.has_error:
        return canonical(ex.error)
    return text_of(ex.result) + canonical((ex.result or {}).get("structuredContent"))


def tools_of(rec: Recording) -> list[dict]:
    rec.ex("tools/list")
    if rec.tools is None:
        raise NotObserved(f"tools/list through the gateway returned no result ({rec.ex('tools/list').outcome_text()})")
    return rec.tools


def fixture_tool(rec: Recording, name: str) -> dict:
    tool = find_named(tools_of(rec), name)
    if tool is None:
        raise Violation(f"the gateway does not list the upstream's tool {name} (under any prefix)",
                        expected=f"a tool named {name} or ending in _{name}",
                        actual=[t.get("name") for t in rec.tools if isinstance(t, dict)][:20])
    return tool


def claimer(rec: Recording) -> str:
    return "the suite's upstream fixture server offers this profile, and the gateway stands in front of it"


def judge_wire(rec: Recording) -> str:
    return common_judge_wire(rec, peer="gateway")


def wire_check(profile: str) -> None:
    check(f"{profile}/gateway/wire-messages-valid",
          does="validates every message the gateway sent on this profile's connection",
          must="every message a gateway sends is valid JSON-RPC 2.0 and valid MCP")(judge_wire)


# ------------------------------------------------------------------------------------------ preprocessor-tools

async def preprocessor_driver(session: Session, rec: Recording) -> None:
    tools = rec.tools or ()
    await session.call_tool("call conformance_memories", listed_name(tools, "conformance_memories"), {"query": QUERY})
    await session.call_tool("call conformance_echo", listed_name(tools, "conformance_echo"), {"text": ECHO_TEXT})


@check("preprocessor-tools/gateway/flag-passes-through",
       does="lists tools through the gateway and reads conformance_memories (preprocessor: true upstream) "
            "and conformance_echo (no flag)",
       must="the gateway passes a tool's \"preprocessor\": true through unchanged, and adds it to no other tool")
def flag_passes_through(rec: Recording):
    memories, echo = fixture_tool(rec, "conformance_memories"), fixture_tool(rec, "conformance_echo")
    if memories.get("preprocessor") is not True:
        raise Violation(f"{memories['name']} arrives without \"preprocessor\": true",
                        expected={"preprocessor": True}, actual=short(memories))
    if "preprocessor" in echo:
        raise Violation(f"{echo['name']} arrives with a preprocessor field its upstream never sent",
                        expected="no preprocessor field", actual=short(echo))
    return f"{memories['name']} keeps preprocessor: true"


@check("preprocessor-tools/gateway/tool-calls-pass-through",
       does="calls conformance_memories (with a query) and conformance_echo through the gateway",
       must="calls to a preprocessor tool and an ordinary tool reach the upstream and their results come back")
def tool_calls_pass_through(rec: Recording):
    fixture_tool(rec, "conformance_memories")
    for label, want in (("call conformance_memories", QUERY), ("call conformance_echo", ECHO_TEXT)):
        ex = rec.ex(label)
        if ex.failure:
            raise Violation(f"{label}: {ex.failure}", expected="a result", actual=ex.failure)
        if failed(ex):
            raise Violation(f"{label} failed through the gateway", expected=f"a result containing {want!r}",
                            actual=ex.response)
        if want not in text_of(ex.result):
            raise Violation(f"{label}: the upstream's text did not come back", expected=want,
                            actual=short(ex.result))
    return "both calls came back with the upstream's text"


# ------------------------------------------------------------------------------------------ execution-requirements

async def requirements_driver(session: Session, rec: Recording) -> None:
    for name in GATED:
        await session.call_tool(f"call {name}", listed_name(rec.tools, name), {})


@check("execution-requirements/gateway/requirements-pass-through",
       does="lists tools through the gateway and reads execution.requirements of the four gated fixtures",
       must="the gateway passes Tool.execution.requirements through unchanged: every string exact, in order")
def requirements_pass_through(rec: Recording):
    wrong = {}
    for name, want in GATED.items():
        tool = fixture_tool(rec, name)
        execution = tool.get("execution")
        got = execution.get("requirements") if isinstance(execution, dict) else None
        if got != want:
            wrong[tool["name"]] = got if execution is not None else "(no execution field)"
    if wrong:
        raise Violation(f"{len(wrong)} gated tool(s) arrive with different requirements",
                        expected={n: GATED[n] for n in GATED}, actual=wrong)
    return "all four requirement lists arrive as the upstream declared them"


@check("execution-requirements/gateway/satisfied-call-passes",
       does="calls conformance_gated_ok, whose requirement the upstream satisfies, through the gateway",
       must="a gated call whose requirements are satisfied goes through and succeeds")
def satisfied_call_passes(rec: Recording):
    fixture_tool(rec, "conformance_gated_ok")
    ex = rec.ex("call conformance_gated_ok")
    if ex.failure:
        raise Violation(f"conformance_gated_ok: {ex.failure}", expected="a successful result", actual=ex.failure)
    if failed(ex):
        raise Violation("the satisfied call failed through the gateway", expected="a result without isError",
                        actual=ex.response)


@check("execution-requirements/gateway/unmet-error-passes-through",
       does="calls the three gated fixtures with an unmet requirement through the gateway and reads the errors",
       must="an unmet-requirement failure comes back as a failure naming each unmet requirement string exactly")
def unmet_error_passes_through(rec: Recording):
    wrong = {}
    for name in UNMET:
        fixture_tool(rec, name)
        ex = rec.ex(f"call {name}")
        unmet = [s for s in GATED[name] if s != SATISFIED]
        if ex.failure:
            raise Violation(f"{name}: {ex.failure}", expected=f"a failure naming {unmet}", actual=ex.failure)
        if not failed(ex):
            wrong[name] = f"succeeded: {short(ex.response, 150)}"
        elif not all(s in error_text(ex) for s in unmet):
            wrong[name] = error_text(ex)[:200]
    if wrong:
        raise Violation("unmet-requirement errors do not come back naming the requirement exactly",
                        expected={n: [s for s in GATED[n] if s != SATISFIED] for n in wrong}, actual=wrong)
    return "each unmet call failed, naming its unmet requirement(s)"


# ------------------------------------------------------------------------------------------ middleware and augmentation

class Methods:
    """What context-middleware and augmentation share: a capability, a list method, a call method."""

    def __init__(self, profile, capability, list_method, list_key, call_method, calls):
        self.profile, self.capability = profile, capability
        self.list_method, self.list_key, self.call_method = list_method, list_key, call_method
        self.calls = calls  # label -> (fixture name, params without name)

    def label(self, fixture: str) -> str:
        return f"{self.call_method} {fixture}"

    async def driver(self, session: Session, rec: Recording) -> None:
        kind = self.list_key
        rec.listing[kind] = await session.list_all(self.list_method, self.list_key, self.list_method)
        for fixture, params in self.calls.items():
            await session.send(self.label(fixture), self.call_method,
                               {"name": listed_name(rec.listing.get(kind), fixture), **json.loads(json.dumps(params))})

    def refused(self, rec: Recording) -> str | None:
        """Why the comparison checks do not apply: the gateway refuses the profile (not advertised, errors)."""
        if self.capability in rec.capabilities:
            return None
        exchanges = [rec.ex(self.list_method)] + [rec.ex(self.label(f)) for f in self.calls]
        if all(ex.has_error for ex in exchanges):
            return (f"the gateway does not advertise {self.capability} and refuses its methods "
                    f"(capability-forwarded-or-refused judges how)")
        return None

    def judge_forwarded(self, rec: Recording) -> str:
        methods = [(self.list_method, rec.ex(self.list_method))] + \
                  [(self.call_method, rec.ex(self.label(f))) for f in self.calls]
        if self.capability not in rec.capabilities:
            for method, ex in methods:
                if ex.failure:
                    raise Violation(f"{self.capability} is not advertised, and {method} was not refused: "
                                    f"{ex.failure}", expected="a JSON-RPC error, code -32601", actual=ex.failure)
                if ex.has_result:
                    raise Violation(f"the gateway answers {method} but does not advertise {self.capability}: "
                                    f"the upstream's capability was dropped",
                                    expected={self.capability: UPSTREAM_CAPABILITIES[self.capability]},
                                    actual=rec.capabilities)
                code = (ex.error or {}).get("code")
                if code != -32601:
                    raise Violation(f"{self.capability} is not advertised, and {method} was answered code {code} "
                                    f"instead of -32601 Method not found", expected=-32601, actual=ex.error)
            return f"refused cleanly: {self.capability} not advertised, its methods answered -32601"
        upstream = UPSTREAM_CAPABILITIES[self.capability]
        got = rec.capabilities[self.capability]
        changed = {k: got.get(k) if isinstance(got, dict) else got for k in upstream
                   if not isinstance(got, dict) or got.get(k) != upstream[k]}
        if not isinstance(got, dict) or changed:
            raise Violation(f"capabilities.{self.capability} arrives changed", expected=upstream, actual=got)
        for method, ex in methods:
            if ex.failure:
                raise Violation(f"{self.capability} is advertised, but {method}: {ex.failure}",
                                expected=f"{method} forwarded and answered", actual=ex.failure)
            if not ex.has_result:
                raise Violation(f"{self.capability} is advertised, but {method} was answered with an error",
                                expected="the upstream's result", actual=ex.error)
        missing = [f for f in self.calls if find_named(rec.listing.get(self.list_key), f) is None]
        if missing:
            raise Violation(f"{self.list_method} through the gateway does not list the upstream's {missing}",
                            expected=missing, actual=short(rec.ex(self.list_method).result))
        return f"{self.capability} advertised; {self.list_method} and {self.call_method} forwarded"

    def result_of(self, rec: Recording, fixture: str) -> dict:
        reason = self.refused(rec)
        if reason:
            raise NotApplicable(reason)
        ex = rec.ex(self.label(fixture))
        if ex.failure:
            raise NotObserved(f"{self.call_method} of {fixture}: {ex.failure}")
        if not ex.has_result or not isinstance(ex.result, dict):
            raise NotObserved(f"{self.call_method} of {fixture} was answered with an error ({short(ex.error)})")
        return ex.result

    def judge_params(self, rec: Recording) -> str:
        reason = self.refused(rec)
        if reason:
            raise NotApplicable(reason)
        for fixture, sent in self.calls.items():
            rec.ex(self.label(fixture))
            arrived = upstream_requests(rec, self.call_method, fixture)
            if not arrived:
                raise NotObserved(f"the upstream never received {self.call_method} for {fixture}",
                                  expected=sent, actual=[m.get("method") for m in upstream_received(rec)
                                                         if isinstance(m, dict)])
            params = arrived[-1]["params"]
            differs = {k: params.get(k, "(missing)") for k in sent if params.get(k) != sent[k]}
            added = sorted(set(params) - set(sent) - {"name", "_meta"})
            if differs or added:
                raise Violation(f"{self.call_method} params for {fixture} arrived upstream changed",
                                expected=sent, actual={**differs, **{k: params[k] for k in added}})
        return f"{self.call_method} params arrived upstream exactly as sent"


# Blocks the augmentation schema allows in a context (no resource_link), with annotations and _meta.
AUGMENT_CONTEXT = blocks(TEXT_BLOCK, IMAGE_BLOCK, AUDIO_BLOCK, EMBEDDED_BLOCK)

MIDDLEWARE = Methods("context-middleware", "contextMiddleware", "middleware/list", "middleware", "middleware/invoke",
                     {"conformance_identity": {"arguments": {}, "context": blocks(*EVERY_CONTENT_TYPE)}})
AUGMENTATION = Methods("augmentation", "augmentation", "augmentation/list", "augmentations", "augmentation/augment",
                       {"conformance_identity": {"arguments": {}, "context": AUGMENT_CONTEXT},
                        "conformance_prepend_note": {"arguments": {}, "context": blocks(TEXT_BLOCK)}})


for _m in (MIDDLEWARE, AUGMENTATION):
    check(f"{_m.profile}/gateway/capability-forwarded-or-refused",
          does=f"reads capabilities.{_m.capability} through the gateway and sends {_m.list_method} and "
               f"{_m.call_method} either way",
          must=f"the gateway forwards {_m.capability} and its methods, or refuses them cleanly: not advertised "
               f"and answered -32601; never advertised-but-dropped, never left hanging")(_m.judge_forwarded)
    check(f"{_m.profile}/gateway/{'invoke' if _m is MIDDLEWARE else 'augment'}-params-arrive-unchanged",
          does=f"reads the upstream's log of received messages for the {_m.call_method} requests the suite sent",
          must=f"{_m.call_method} params (context blocks with annotations and _meta, arguments) reach the "
               f"upstream exactly as the client sent them")(_m.judge_params)


@check("context-middleware/gateway/invoke-every-content-type-unchanged",
       does="invokes conformance_identity through the gateway with one block of every content type "
            "(text, image, audio, resource_link, embedded resource; annotations and _meta on some)",
       must="the middleware/invoke result comes back unchanged: the upstream's content, block for block, field for field")
def invoke_every_content_type_unchanged(rec: Recording):
    result = MIDDLEWARE.result_of(rec, "conformance_identity")
    want = MIDDLEWARE.calls["conformance_identity"]["context"]
    if canonical(result.get("content")) != canonical(want):
        raise Violation("the identity middleware's content arrives changed", expected=want, actual=result.get("content"))
    return f"{len(want)} blocks came back unchanged"


@check("augmentation/gateway/augment-every-content-type-unchanged",
       does="augments through the gateway with conformance_identity (text, image, audio, embedded resource) "
            "and conformance_prepend_note",
       must="augmentation/augment results come back unchanged: content items and hint as the upstream sent them")
def augment_every_content_type_unchanged(rec: Recording):
    identity = AUGMENTATION.result_of(rec, "conformance_identity")
    want = [{"content": b} for b in AUGMENTATION.calls["conformance_identity"]["context"]]
    if canonical(identity.get("content")) != canonical(want):
        raise Violation("the identity augmentation's content arrives changed", expected=want,
                        actual=identity.get("content"))
    note = AUGMENTATION.result_of(rec, "conformance_prepend_note")
    got = {k: note.get(k) for k in PREPEND_NOTE}
    if canonical(got) != canonical(PREPEND_NOTE):
        raise Violation("conformance_prepend_note's result arrives changed", expected=PREPEND_NOTE, actual=got)
    return "identity content and the prepend hint came back unchanged"


for _profile in PROFILES:
    wire_check(_profile)

DRIVERS = {"preprocessor-tools": preprocessor_driver, "execution-requirements": requirements_driver,
           "context-middleware": MIDDLEWARE.driver, "augmentation": AUGMENTATION.driver}


# ------------------------------------------------------------------------------------------ recording

def read_log(path: Path) -> list:
    out = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return out
    for line in lines:
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


async def record_one(spec_factory: SpecFactory, profile: str, workdir: Path, *, claimed_by_option: bool,
                     upstream: str, run_timeout: float) -> Recording:
    log = workdir / f"{profile}.upstream.jsonl"
    log.touch()
    spec = None
    try:
        async with AsyncExitStack() as stack:
            up = await stack.enter_async_context(upstream_for(log, upstream))
            spec = spec_factory(up)
            if spec.kind == "http" and spec.command:
                import shlex

                await stack.enter_async_context(background(shlex.split(spec.command), spec.env, spec.url))
            rec = await record(spec, profile, claimer, DRIVERS[profile], None,
                               claimed_by_option=claimed_by_option, run_timeout=run_timeout)
    except TargetUnavailable as exc:
        rec = Recording(profile, spec.describe() if spec else {"kind": "gateway"})
        rec.unavailable = rec.fatal = str(exc)
    rec.upstream = read_log(log)
    return rec


async def record_gateway(spec_factory: SpecFactory, profiles=PROFILES, *, claimed=frozenset(), upstream: str = "stdio",
                         run_timeout: float = 60.0, progress=None) -> dict[str, Recording]:
    """Record each profile through the gateway, concurrently, each on its own gateway and upstream.

    `spec_factory(upstream) -> TargetSpec` says how to start and reach the gateway (see
    `gateway_factory`); `upstream` is how the suite serves its fixture server: "stdio" (the gateway
    starts it from MCPX_UPSTREAM_COMMAND) or "http" (the suite runs it; MCPX_UPSTREAM_URL).
    """
    out: dict[str, Recording] = {}
    profiles = [p for p in profiles if p in PROFILES]
    with tempfile.TemporaryDirectory(prefix="mcpx-gateway-") as tmp:
        async def one(profile: str) -> None:
            out[profile] = await record_one(spec_factory, profile, Path(tmp), claimed_by_option=profile in claimed,
                                            upstream=upstream, run_timeout=run_timeout)
            if progress is not None:
                progress(out[profile], len(out), len(profiles))

        async with anyio.create_task_group() as tg:
            for profile in profiles:
                tg.start_soon(one, profile)
    return {p: out[p] for p in profiles}


def record_gateway_sync(spec_factory: SpecFactory, profiles=PROFILES, **kw: Any) -> dict[str, Recording]:
    return anyio.run(lambda: record_gateway(spec_factory, profiles, **kw))


__all__ = ["PROFILES", "gateway_factory", "record_gateway", "record_gateway_sync", "find_named"]
