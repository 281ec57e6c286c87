"""Server role, profile `interceptors` (SEP-2624 "Interceptors").

The server advertises `capabilities.extensions["io.modelcontextprotocol/interceptors"]
= {supportedEvents}`, lists interceptors with `interceptors/list {event?}` and
runs one with `interceptor/invoke {name, event, phase, payload, config?}`,
which answers a ValidationResult (`valid`, ...) or a MutationResult
(`modified`, `payload`). Method names are the ones of the SEP's "JSON-RPC
Methods" section; the other spellings in its prose are `disputed` catalog rows.

Black-box checks apply to every listed interceptor (shapes; real interceptors
are invoked on their first hook with a small payload); fixture checks pin the
behaviour down (docs/fixture-contract.md): a validator that rejects a
marker string, an uppercasing mutator, an audit-mode wildcard validator, a
response-only validator and an interceptor that always fails.

Chain semantics (ordering, fail-open/closed, audit never blocking, override
narrowing) belong to the invoker, not to a server: they are host rows of the
catalog.
"""

from __future__ import annotations

from ..core.model import NotObserved, Violation, check
from .common import (
    canonical_sorted,
    judge_list_result,
    judge_shapes,
    malformed_check,
    rejected_unlike,
    require_error,
    require_result,
    shape_violations,
    short,
    unadvertised_check,
    unknown_name_check,
    wire_check,
)
from .recording import Recording
from .session import Plan, Session

PROFILE = "interceptors"
EXTENSION_ID = "io.modelcontextprotocol/interceptors"
LIST, INVOKE = "interceptors/list", "interceptor/invoke"
VALIDATOR, UPPERCASE, AUDIT = "conformance_validator", "conformance_uppercase", "conformance_audit"
RESPONSE_ONLY, FAILING = "conformance_response_only", "conformance_failing"
UNKNOWN = "conformance_no_such_interceptor"
EVENT, RESPONSE_ONLY_EVENT, OTHER_EVENT = "tools/call", "resources/read", "custom/conformanceProbe"
INVALID_MARKER = "conformance:invalid"
MAX_REAL = 10
# Labels of the well-formed invocations of listed fixtures (malformed and unknown-name probes excluded).
FIXTURE_INVOCATIONS = ("invoke validator ", "invoke uppercase ", "invoke audit ", "invoke response-only ",
                       "invoke failing")

# What the fixture contract fixes about each fixture's declaration.
FIXTURES = {
    VALIDATOR: {"type": "validation", "hooks": [{"events": [EVENT], "phase": "request"}],
                "configSchema": {"type": "object", "properties": {"strict": {"type": "boolean"}},
                                 "additionalProperties": False}},
    UPPERCASE: {"type": "mutation", "hooks": [{"events": [EVENT], "phase": "request"},
                                              {"events": [EVENT], "phase": "response"}]},
    AUDIT: {"type": "validation", "mode": "audit", "failOpen": True,
            "hooks": [{"events": ["*"], "phase": "request"}, {"events": ["*"], "phase": "response"}]},
    RESPONSE_ONLY: {"type": "validation", "hooks": [{"events": [RESPONSE_ONLY_EVENT], "phase": "response"}]},
    FAILING: {"type": "mutation", "hooks": [{"events": [EVENT], "phase": "request"}]},
}
# Fixtures whose declaration leaves the policy defaults alone: mode active, failOpen false.
DEFAULT_POLICY = (VALIDATOR, UPPERCASE, RESPONSE_ONLY, FAILING)


def tool_call(location: str) -> dict:
    return {"method": "tools/call", "params": {"name": "get_weather", "arguments": {"location": location}}}


CLEAN_PAYLOAD = tool_call("Paris")
INVALID_PAYLOAD = {"method": "tools/call", "params": {"name": "get_weather",
                                                      "arguments": {"location": f"Paris {INVALID_MARKER}"}}}
MIXED_PAYLOAD = {"method": "tools/call", "params": {"name": "Get_Weather", "arguments": {
    "location": "Paris, France", "units": ["Metric", "kelvin"], "days": 3, "exact": True, "note": None}}}
UPPER_PAYLOAD = {"result": {"summary": "ALREADY UPPER 42", "codes": ["A-1", "B-2"], "count": 2, "final": True}}
REAL_PAYLOAD = {"method": "tools/call", "params": {"name": "conformance_probe",
                                                   "arguments": {"text": "What is on the calendar today?"}}}


def extension(rec: Recording):
    extensions = rec.capabilities.get("extensions")
    return extensions.get(EXTENSION_ID) if isinstance(extensions, dict) else None


HOW_TO_CLAIM = f"advertise capabilities.extensions[\"{EXTENSION_ID}\"] in the initialize result"


def claimer(rec: Recording) -> str | None:
    if extension(rec) is not None:
        return f'capabilities.extensions["{EXTENSION_ID}"] is advertised'
    return None


def invoke(session: Session, label: str, name: str, event: str, phase: str, payload, **extra):
    return session.send(label, INVOKE, {"name": name, "event": event, "phase": phase, "payload": payload, **extra})


def first_hook(item: dict) -> tuple[str, str] | None:
    for hook in item.get("hooks") or ():
        if isinstance(hook, dict) and hook.get("phase") in ("request", "response") and hook.get("events"):
            event = hook["events"][0]
            return (EVENT if event == "*" else event), hook["phase"]
    return None


def real_interceptors(rec: Recording) -> list[dict]:
    """Listed interceptors that are not fixtures and need no configuration (black-box probes)."""
    out = []
    for item in rec.listing.get("interceptors") or ():
        if not isinstance(item, dict) or not isinstance(item.get("name"), str) or item["name"].startswith("conformance_"):
            continue
        schema = item.get("configSchema")
        if isinstance(schema, dict) and schema.get("required"):
            continue
        if first_hook(item) is not None:
            out.append(item)
    return out


async def driver(session: Session, rec: Recording) -> None:
    rec.listing["interceptors"] = await session.list_all(LIST, "interceptors", LIST)
    await session.send("list filtered", LIST, {"event": RESPONSE_ONLY_EVENT})
    if rec.listed("interceptors", VALIDATOR):
        await invoke(session, "invoke validator clean", VALIDATOR, EVENT, "request", CLEAN_PAYLOAD)
        await invoke(session, "invoke validator invalid", VALIDATOR, EVENT, "request", INVALID_PAYLOAD)
        await invoke(session, "invoke validator good config", VALIDATOR, EVENT, "request", CLEAN_PAYLOAD,
                     config={"strict": True})
        await invoke(session, "invoke validator bad config", VALIDATOR, EVENT, "request", CLEAN_PAYLOAD,
                     config={"strict": "yes"})
    if rec.listed("interceptors", UPPERCASE):
        await invoke(session, "invoke uppercase request", UPPERCASE, EVENT, "request", MIXED_PAYLOAD)
        await invoke(session, "invoke uppercase response", UPPERCASE, EVENT, "response", MIXED_PAYLOAD)
        await invoke(session, "invoke uppercase unchanged", UPPERCASE, EVENT, "response", UPPER_PAYLOAD)
    if rec.listed("interceptors", AUDIT):
        await invoke(session, "invoke audit any event", AUDIT, OTHER_EVENT, "response", CLEAN_PAYLOAD)
    if rec.listed("interceptors", RESPONSE_ONLY):
        await invoke(session, "invoke response-only response", RESPONSE_ONLY, RESPONSE_ONLY_EVENT, "response",
                     {"contents": [{"uri": "file:///conformance/probe.txt", "text": "probe"}]})
        await invoke(session, "invoke response-only request", RESPONSE_ONLY, RESPONSE_ONLY_EVENT, "request",
                     {"method": RESPONSE_ONLY_EVENT, "params": {"uri": "file:///conformance/probe.txt"}})
    if rec.listed("interceptors", FAILING):
        await invoke(session, "invoke failing", FAILING, EVENT, "request", CLEAN_PAYLOAD)
    await invoke(session, "invoke unknown", UNKNOWN, EVENT, "request", CLEAN_PAYLOAD)
    target = VALIDATOR if rec.listed("interceptors", VALIDATOR) else next(
        (i.get("name") for i in rec.listing.get("interceptors") or () if isinstance(i, dict)), VALIDATOR)
    await session.send("invoke without phase", INVOKE, {"name": target, "event": EVENT, "payload": CLEAN_PAYLOAD})
    await session.send("invoke unknown phase", INVOKE, {"name": target, "event": EVENT, "phase": "middle",
                                                        "payload": CLEAN_PAYLOAD})
    await session.send("invoke without payload", INVOKE, {"name": target, "event": EVENT, "phase": "request"})
    for item in real_interceptors(rec)[:MAX_REAL]:
        event, phase = first_hook(item)
        await invoke(session, f"invoke real {item['name']}", item["name"], event, phase, REAL_PAYLOAD)


async def unclaimed_driver(session: Session, rec: Recording) -> None:
    await session.send(f"unadvertised {LIST}", LIST, {})
    await invoke(session, f"unadvertised {INVOKE}", VALIDATOR, EVENT, "request", CLEAN_PAYLOAD)


def listed_type(rec: Recording, name: str):
    item = rec.listed("interceptors", name)
    return item.get("type") if item else None


def invoke_results(rec: Recording) -> list[str]:
    return [label for label, ex in rec.exchanges.items() if label.startswith("invoke ") and ex.has_result]


@check("interceptors/server/capability-advertised",
       does="reads capabilities from the initialize result",
       must=f'a server offering interceptors advertises capabilities.extensions["{EXTENSION_ID}"] '
            "with supportedEvents: string[]")
def capability_advertised(rec: Recording):
    require_result(rec, "initialize")
    value = extension(rec)
    if value is None:
        raise Violation(f'capabilities.extensions["{EXTENSION_ID}"] is absent',
                        expected={"extensions": {EXTENSION_ID: {"supportedEvents": ["tools/call"]}}},
                        actual=rec.capabilities)
    judge_shapes(shape_violations("interceptor-capability", value, "interceptors capability"), "{supportedEvents: []}")


@check("interceptors/server/supported-events-cover-hooks",
       does="compares the events of every listed hook with the advertised supportedEvents",
       must="supportedEvents names every event a listed interceptor hooks (or \"*\")")
def supported_events_cover_hooks(rec: Recording):
    value = extension(rec)
    if not isinstance(value, dict) or not isinstance(value.get("supportedEvents"), list):
        raise NotObserved("no supportedEvents list was advertised")
    require_result(rec, LIST)
    supported = set(value["supportedEvents"])
    hooked = {e for item in rec.listing.get("interceptors") or () if isinstance(item, dict)
              for hook in item.get("hooks") or () if isinstance(hook, dict)
              for e in hook.get("events") or () if isinstance(e, str)}
    missing = sorted(hooked - supported) if "*" not in supported else []
    if missing:
        raise Violation("listed interceptors hook events supportedEvents does not name", expected=sorted(hooked),
                        actual=sorted(supported))
    return f"{len(hooked)} hooked event(s) covered"


@check("interceptors/server/list-result-valid",
       does="sends interceptors/list and validates the result against schemas/interceptor-list-result.json",
       must="interceptors/list returns {interceptors: Interceptor[]} with unique names, a type, hooks with a "
            "phase, mode active|audit and a boolean failOpen")
def list_result_valid(rec: Recording):
    return judge_list_result(rec, LIST, "interceptors", "interceptor-list-result",
                             "{interceptors: [{name, type, hooks: [{events, phase}], mode?, failOpen?, ...}]}",
                             "interceptor(s)")


@check("interceptors/server/fixtures-declared",
       does="compares the listed conformance fixtures with the fixture contract (type, hooks, mode, failOpen)",
       must="each fixture is declared as the contract says; fixtures without a policy leave mode and failOpen "
            "at their defaults (active, false)",
       needs=tuple(f"interceptors:{name}" for name in FIXTURES))
def fixtures_declared(rec: Recording):
    wrong = {}
    for name, want in FIXTURES.items():
        item = rec.listed("interceptors", name) or {}
        got = {key: item.get(key) for key in want}
        if canonical_sorted(got) != canonical_sorted(want):
            wrong[name] = {"expected": want, "actual": got}
        if name in DEFAULT_POLICY and (item.get("mode", "active") != "active" or item.get("failOpen", False) is not False):
            wrong[name] = {"expected": {"mode": "active (or absent)", "failOpen": "false (or absent)"},
                           "actual": {"mode": item.get("mode"), "failOpen": item.get("failOpen")}}
    if wrong:
        raise Violation(f"fixture(s) declared differently from the contract: {', '.join(sorted(wrong))}",
                        expected={n: w["expected"] for n, w in wrong.items()},
                        actual={n: w["actual"] for n, w in wrong.items()})


@check("interceptors/server/list-filter-by-event",
       does=f"sends interceptors/list {{event: \"{RESPONSE_ONLY_EVENT}\"}}",
       must="a filtered list holds exactly the interceptors with a hook on the event or on \"*\"",
       needs=(f"interceptors:{RESPONSE_ONLY}", f"interceptors:{VALIDATOR}"))
def list_filter_by_event(rec: Recording):
    result = require_result(rec, "list filtered")
    got = result.get("interceptors") if isinstance(result, dict) else None
    if not isinstance(got, list):
        raise Violation("the filtered list has no interceptors array", expected="{interceptors: [...]}",
                        actual=short(result))
    every = rec.listing.get("interceptors") or []

    def hooks(item) -> bool:
        return any(isinstance(h, dict) and (RESPONSE_ONLY_EVENT in (h.get("events") or ()) or "*" in (h.get("events") or ()))
                   for h in item.get("hooks") or ())

    want = sorted(i.get("name") for i in every if isinstance(i, dict) and hooks(i))
    have = sorted(i.get("name") for i in got if isinstance(i, dict))
    if have != want:
        raise Violation(f"the list filtered by {RESPONSE_ONLY_EVENT} is not the interceptors hooking it",
                        expected=want, actual=have)
    return f"{len(have)} of {len(every)} interceptor(s) hook {RESPONSE_ONLY_EVENT}"


@check("interceptors/server/invoke-result-valid",
       does="validates every interceptor/invoke result it received (fixtures and real interceptors) against "
            "schemas/interceptor-invoke-result.json and the interceptor's listed type",
       must="a validator answers a ValidationResult {valid, severity?, messages?}, a mutator a MutationResult "
            "{modified, payload}")
def invoke_result_valid(rec: Recording):
    labels = invoke_results(rec)
    if not labels:
        raise NotObserved("no interceptor/invoke returned a result")
    problems = []
    for label in labels:
        ex = rec.cite(label)
        problems += shape_violations("interceptor-invoke-result", ex.result, label)
        kind = listed_type(rec, (ex.request.get("params") or {}).get("name"))
        is_validation = isinstance(ex.result, dict) and "valid" in ex.result
        if kind == "validation" and not is_validation or kind == "mutation" and is_validation:
            problems.append(f"{label}: a {kind} interceptor answered a "
                            f"{'ValidationResult' if is_validation else 'MutationResult'}")
    judge_shapes(problems, "ValidationResult {valid, ...} | MutationResult {modified, payload}")
    return f"{len(labels)} result(s) valid"


@check("interceptors/server/result-names-interceptor-and-phase",
       does="reads interceptor, type and phase from every fixture's invoke result",
       must="a result names the interceptor that produced it, its type and the phase it was invoked for",
       needs=(f"interceptors:{VALIDATOR}", f"interceptors:{UPPERCASE}"))
def result_names_interceptor_and_phase(rec: Recording):
    wrong = []
    labels = [label for label in invoke_results(rec) if label.startswith(FIXTURE_INVOCATIONS)]
    for label in labels:
        ex = rec.cite(label)
        params = ex.request["params"]
        want = {"interceptor": params["name"], "type": listed_type(rec, params["name"]), "phase": params["phase"]}
        got = {key: ex.result.get(key) for key in want} if isinstance(ex.result, dict) else None
        if got != want:
            wrong.append({"invoke": label, "expected": want, "actual": got})
    if not labels:
        raise NotObserved("no fixture invocation returned a result")
    if wrong:
        raise Violation(f"{len(wrong)} result(s) do not name interceptor, type and phase", expected=wrong[0]["expected"],
                        actual=wrong)
    return f"{len(labels)} result(s) name their interceptor and phase"


@check("interceptors/server/validator-reports-violation",
       does=f"invokes {VALIDATOR} on a clean tools/call payload and on one containing {INVALID_MARKER}",
       must="a validator answers valid: true for a clean payload and valid: false with severity \"error\" and an "
            "error message for a violating one",
       needs=(f"interceptors:{VALIDATOR}",))
def validator_reports_violation(rec: Recording):
    clean = require_result(rec, "invoke validator clean")
    if clean.get("valid") is not True:
        raise Violation("a clean payload was not valid", expected={"valid": True}, actual=short(clean))
    bad = require_result(rec, "invoke validator invalid")
    messages = bad.get("messages") if isinstance(bad.get("messages"), list) else []
    if bad.get("valid") is not False or bad.get("severity") != "error" or \
            not any(isinstance(m, dict) and m.get("severity") == "error" for m in messages):
        raise Violation("the violation was not reported as a blocking error",
                        expected={"valid": False, "severity": "error", "messages": [{"severity": "error", "message": "..."}]},
                        actual=short(bad))


@check("interceptors/server/validator-does-not-modify",
       does="looks for a payload in every validation interceptor's result",
       must="a validator never returns a payload: validators do not modify what they inspect")
def validator_does_not_modify(rec: Recording):
    seen, modified = 0, []
    for label in invoke_results(rec):
        ex = rec.cite(label)
        if listed_type(rec, (ex.request.get("params") or {}).get("name")) != "validation":
            continue
        seen += 1
        if isinstance(ex.result, dict) and ("payload" in ex.result or ex.result.get("modified")):
            modified.append({"invoke": label, "payload": short(ex.result.get("payload"))})
    if not seen:
        raise NotObserved("no validation interceptor returned a result")
    if modified:
        raise Violation(f"{len(modified)} validator result(s) carry a payload", expected="no payload", actual=modified)
    return f"{seen} validator result(s), none modifies"


@check("interceptors/server/mutator-transforms-payload",
       does=f"invokes {UPPERCASE} on a tools/call payload in the request and the response phase",
       must="a mutator returns the whole transformed payload (every string value uppercased, keys and "
            "non-strings as they were) with modified: true",
       needs=(f"interceptors:{UPPERCASE}",))
def mutator_transforms_payload(rec: Recording):
    want = _upper(MIXED_PAYLOAD)
    for label in ("invoke uppercase request", "invoke uppercase response"):
        result = require_result(rec, label)
        if canonical_sorted(result.get("payload")) != canonical_sorted(want) or result.get("modified") is not True:
            raise Violation(f"{label}: the payload is not the transformed one",
                            expected={"modified": True, "payload": want},
                            actual={"modified": result.get("modified"), "payload": result.get("payload")})


def _upper(value):
    if isinstance(value, str):
        return value.upper()
    if isinstance(value, dict):
        return {k: _upper(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_upper(v) for v in value]
    return value


@check("interceptors/server/mutator-unchanged-not-modified",
       does=f"invokes {UPPERCASE} on a payload whose strings are already upper case",
       must="a mutator that changes nothing returns the original payload with modified: false",
       needs=(f"interceptors:{UPPERCASE}",))
def mutator_unchanged_not_modified(rec: Recording):
    result = require_result(rec, "invoke uppercase unchanged")
    if result.get("modified") is not False or \
            canonical_sorted(result.get("payload")) != canonical_sorted(UPPER_PAYLOAD):
        raise Violation("an unchanged payload was reported or returned as modified",
                        expected={"modified": False, "payload": UPPER_PAYLOAD},
                        actual={"modified": result.get("modified"), "payload": result.get("payload")})


@check("interceptors/server/wildcard-hook-any-event",
       does=f"invokes {AUDIT} (hooks \"*\") for an event no list names ({OTHER_EVENT})",
       must="an interceptor hooking \"*\" is invoked for every event, custom ones included",
       needs=(f"interceptors:{AUDIT}",))
def wildcard_hook_any_event(rec: Recording):
    result = require_result(rec, "invoke audit any event")
    if result.get("valid") is not True:
        raise Violation("the wildcard validator did not validate the event", expected={"valid": True},
                        actual=short(result))


@check("interceptors/server/invoke-outside-hooks-rejected",
       does=f"invokes {RESPONSE_ONLY} in its hooked phase (response) and in the request phase it does not hook",
       must="an invocation for an event or phase the interceptor does not hook is answered with a JSON-RPC error",
       needs=(f"interceptors:{RESPONSE_ONLY}",))
def invoke_outside_hooks_rejected(rec: Recording):
    return rejected_unlike(rec, "invoke response-only response", "invoke response-only request",
                           "an invocation in a phase the interceptor does not hook", "the hooked phase")


@check("interceptors/server/failure-is-error",
       does=f"invokes {FAILING}, which fails on every invocation",
       must="an interceptor that fails is answered with a JSON-RPC error (-32603), never a result, so the invoker "
            "can apply failOpen",
       needs=(f"interceptors:{FAILING}",))
def failure_is_error(rec: Recording):
    err = require_error(rec, "invoke failing", "a failing interceptor")
    if err.get("code") != -32603:
        raise Violation(f"the failure was answered with code {err.get('code')}", expected=-32603,
                        actual=err.get("code"), level="SHOULD")
    return "answered -32603"


@check("interceptors/server/invalid-config-rejected",
       does=f"invokes {VALIDATOR} with config {{strict: true}} (valid) and {{strict: \"yes\"}} (against its configSchema)",
       must="invocation config is validated against the interceptor's configSchema before it runs: an invalid "
            "config is answered with a JSON-RPC error",
       needs=(f"interceptors:{VALIDATOR}",))
def invalid_config_rejected(rec: Recording):
    return rejected_unlike(rec, "invoke validator good config", "invoke validator bad config",
                           "a config that violates the configSchema", "a valid config")


unknown_name_check("interceptors/server/unknown-interceptor-rejected",
                   does=f"invokes an interceptor name the server never listed ({UNKNOWN})",
                   must="invoking an unknown interceptor is answered with a JSON-RPC error",
                   label="invoke unknown", what="an unknown interceptor name")
malformed_check("interceptors/server/malformed-invoke-rejected",
                does="sends interceptor/invoke without phase, with phase \"middle\", and without payload",
                must="invocation params are validated before processing: a malformed invoke is answered with a "
                     "JSON-RPC error",
                cases=[("invoke without phase", "an invoke without phase"),
                       ("invoke unknown phase", "an invoke with phase \"middle\""),
                       ("invoke without payload", "an invoke without payload")])
unadvertised_check("interceptors/server/unadvertised-method-rejected",
                   does="sends interceptors/list and interceptor/invoke to a server that does not advertise "
                        "interceptors",
                   methods=[LIST, INVOKE], capability=f'extensions["{EXTENSION_ID}"]')


wire_check("interceptors/server/wire-messages-valid")
PLAN = Plan(claimer, driver, unclaimed_driver)
