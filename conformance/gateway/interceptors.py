"""Gateway role, profile `interceptors` (SEP-2624): the extension, interceptors/list and interceptor/invoke pass through.

The upstream offers the five interceptor fixtures of docs/fixture-contract.md under
`capabilities.extensions["io.modelcontextprotocol/interceptors"]`. Through the gateway the suite
lists them (once whole, once filtered by `event: "resources/read"`), invokes `conformance_validator`
on a payload with two offending strings (nested, in an array) with `config`, `timeoutMs` and `context`,
`conformance_uppercase` on a payload of every JSON type, and `conformance_failing`, whose answer is a
JSON-RPC error. A gateway either passes all of it through, or refuses it cleanly (the extension not
advertised, both methods answered -32601); it never advertises the extension and drops a method,
never answers a method it does not advertise, and never rewrites a definition, a param or a result.
What an interceptor is for is judged in the server and host roles; here only transparency is.
"""

from __future__ import annotations

from typing import Any

from ..client.recording import Recording
from ..client.session import ConnectionPlan, Session
from ..core.judging import canonical_sorted, find_named, short, uppercased
from ..core.model import NotApplicable, NotObserved, Violation, check
from .common import (
    INTERCEPTORS_EXTENSION,
    claimer,
    dropped,
    extras,
    listed_name,
    optional_fields,
    received,
    run_mark,
    wire_check,
)
from .methods import Methods
from .recording import TransparencyRecording

PROFILE = "interceptors"
REQUEST = {"events": ["tools/call"], "phase": "request"}
# The five fixtures' definitions as the fixture contract declares them, and the priorityHint the suite's
# upstream gives conformance_uppercase (stated here, not imported from upstream.py: the checks judge against
# the contract). A gateway may add fields (a description) but must change none of these.
DEFINITIONS: dict[str, dict[str, Any]] = {
    "conformance_validator": {"type": "validation", "hooks": [REQUEST],
                              "configSchema": {"type": "object", "properties": {"strict": {"type": "boolean"}},
                                               "additionalProperties": False}},
    "conformance_uppercase": {"type": "mutation", "hooks": [REQUEST, {"events": ["tools/call"], "phase": "response"}],
                              "priorityHint": {"request": -100, "response": 100}},
    "conformance_audit": {"type": "validation", "hooks": [{"events": ["*"], "phase": "request"},
                                                          {"events": ["*"], "phase": "response"}],
                          "mode": "audit", "failOpen": True},
    "conformance_response_only": {"type": "validation", "hooks": [{"events": ["resources/read"], "phase": "response"}]},
    "conformance_failing": {"type": "mutation", "hooks": [REQUEST]},
}
FILTER_EVENT = "resources/read"
FILTERED = ["conformance_audit", "conformance_response_only"]  # what the filter must leave, in any order
CONTEXT = {"timestamp": "2026-01-02T03:04:05Z", "traceId": "gateway-trace-\u2713", "principal": {"type": "service",
                                                                                                  "id": "mcpx"}}
VALIDATOR_PAYLOAD = {"method": "tools/call", "params": {"name": "conformance_echo", "arguments": {
    "text": "conformance:invalid first", "list": ["fine", {"deep": "conformance:invalid second \u00e9"}]}}}
UPPERCASE_PAYLOAD = {"method": "tools/call", "params": {"name": "conformance_echo", "arguments": {
    "text": "mixed Case \u00e9\u00e8 \u2713", "number": 1.5, "flag": True, "nothing": None,
    "list": ["a", {"keyStays": "b"}]}}}
INTERCEPTORS = Methods(
    "interceptors", f'extensions["{INTERCEPTORS_EXTENSION}"]', "interceptors/list", "interceptors",
    "interceptor/invoke",
    {"conformance_validator": {"event": "tools/call", "phase": "request", "payload": VALIDATOR_PAYLOAD,
                               "config": {"strict": True}, "timeoutMs": 10000, "context": CONTEXT},
     "conformance_uppercase": {"event": "tools/call", "phase": "request", "payload": UPPERCASE_PAYLOAD}},
    extension=INTERCEPTORS_EXTENSION)
FILTER_LABEL = f"interceptors/list event={FILTER_EVENT}"
FAILING_LABEL = "interceptor/invoke conformance_failing"

INTERCEPTORS.register("interceptors/gateway/capability-forwarded-or-refused",
                      "interceptors/gateway/invoke-params-arrive-unchanged")
COMPAT = {"minProtocol": "2025-06-18", "maxProtocol": "2025-11-25"}  # what the upstream sends on every definition
DURATION_MS = 0.5  # the durationMs of every interceptor/invoke result the upstream sends


def invoke_fields(rec: TransparencyRecording, fixture: str) -> dict:
    """What the upstream adds to an interceptor/invoke result: durationMs, info, _meta, an unknown key, and on a
    failed validation its suggestions."""
    fields = {**extras(rec), "durationMs": DURATION_MS, "info": {"run": run_mark(rec)}}
    if fixture == "conformance_validator":
        fields["suggestions"] = [{"path": "$", "value": run_mark(rec)}]
    return fields


def judge_optional(rec: TransparencyRecording) -> str:
    """The Methods judge, plus what only interceptor definitions carry: version and compat, on all five."""
    done = INTERCEPTORS.judge_optional(rec, invoke_fields)
    listed = rec.listing.get("interceptors")
    problems = []
    for name in DEFINITIONS:
        item = find_named(listed, name)
        if item is None:
            raise NotObserved(f"interceptors/list through the gateway does not list {name}")
        problems += optional_fields({**extras(rec), "version": "1.0.0", "compat": COMPAT}, item,
                                    f"interceptors/list {name}")
    if problems:
        dropped(problems)
    return done + "; version and compat of every definition too"


check("interceptors/gateway/optional-fields-arrive-unchanged",
      does="reads the five definitions through interceptors/list and the interceptor/invoke results, which the "
           "upstream sends with version, compat, durationMs, info, suggestions, _meta and an unknown key, each "
           "carrying the run's mark where free",
      must="every optional and unknown field of interceptors/list items and interceptor/invoke results arrives "
           "unchanged")(judge_optional)


async def driver(session: Session, rec: Recording) -> None:
    await INTERCEPTORS.driver(session, rec)
    rec.listing["interceptors filtered"] = await session.list_all("interceptors/list", "interceptors", FILTER_LABEL,
                                                                  {"event": FILTER_EVENT})  # every page
    await session.send(FAILING_LABEL, "interceptor/invoke",
                       {"name": listed_name(rec.listing.get("interceptors"), "conformance_failing"),
                        "event": "tools/call", "phase": "request", "payload": {"method": "tools/call"}})


@check("interceptors/gateway/list-passes-through",
       does="lists interceptors through the gateway, whole and filtered by event resources/read, and compares "
            "the five fixtures' definitions with the fixture contract",
       must="interceptors/list comes through unchanged: every definition's type, hooks, mode, failOpen, "
            "priorityHint and configSchema as the upstream declared them, and the event filter forwarded")
def list_passes_through(rec: TransparencyRecording):
    reason = INTERCEPTORS.refused(rec)
    if reason:
        raise NotApplicable(reason)
    ex = rec.cite("interceptors/list")
    listed = rec.listing.get("interceptors")
    if listed is None:
        raise Violation("interceptors/list through the gateway returned no list", expected="the upstream's five "
                        "fixtures", actual=ex.outcome_text())
    received(rec, "interceptors/list")
    received(rec, "interceptors/list", want={"event": FILTER_EVENT})
    problems = []
    for name, declared in DEFINITIONS.items():
        item = find_named(listed, name)
        if item is None:
            problems.append(f"{name} is not listed")
            continue
        if run_mark(rec) not in str(item.get("description")):
            problems.append(f"{name}.description {short(item.get('description', '(missing)'))} does not carry this "
                            f"run's upstream mark {run_mark(rec)}: not the definition the upstream sent")
        for key in ("type", "hooks", "mode", "failOpen", "priorityHint", "configSchema"):
            if canonical_sorted(item.get(key)) != canonical_sorted(declared.get(key)):
                problems.append(f"{name}.{key}: {short(item.get(key, '(missing)'))}, the upstream declared "
                                f"{short(declared.get(key, '(missing)'))}")
    filtered = rec.cite(FILTER_LABEL)
    if filtered.failure or not filtered.has_result or not isinstance(filtered.result, dict):
        problems.append(f"interceptors/list with event {FILTER_EVENT}: {filtered.outcome_text()}")
    else:
        items = rec.listing.get("interceptors filtered") if isinstance(filtered.result.get("interceptors"), list) \
            else None
        names = sorted(n for n in DEFINITIONS if find_named(items or [], n))
        if names != FILTERED:
            problems.append(f"interceptors/list with event {FILTER_EVENT} lists {names}: the filter did not reach "
                            f"the upstream unchanged")
    if problems:
        raise Violation("interceptors/list arrives changed", expected={**DEFINITIONS, FILTER_LABEL: FILTERED},
                        actual=problems)
    return f"{len(DEFINITIONS)} definitions and the event filter came through unchanged"


@check("interceptors/gateway/invoke-results-unchanged",
       does="invokes conformance_validator (two offending strings), conformance_uppercase (every JSON type) and "
            "conformance_failing through the gateway",
       must="interceptor/invoke answers come back unchanged: the validation result with one message per violation, "
            "the mutation result with the upstream's payload, the failure as the upstream's JSON-RPC error")
def invoke_results_unchanged(rec: TransparencyRecording):
    validation = INTERCEPTORS.result_of(rec, "conformance_validator")
    mutation = INTERCEPTORS.result_of(rec, "conformance_uppercase")
    for fixture in ("conformance_validator", "conformance_uppercase", "conformance_failing"):
        received(rec, "interceptor/invoke", fixture)
    problems = []
    want_validation = {"interceptor": "conformance_validator", "type": "validation", "phase": "request",
                       "valid": False, "severity": "error"}
    got = {k: validation.get(k, "(missing)") for k in want_validation}
    if canonical_sorted(got) != canonical_sorted(want_validation):
        problems.append(f"conformance_validator: {short(got)}")
    messages = validation.get("messages")
    if not isinstance(messages, list) or len(messages) != 2 or \
            not all(isinstance(m, dict) and m.get("severity") == "error" and isinstance(m.get("message"), str)
                    for m in messages):
        problems.append(f"conformance_validator messages: {short(messages)} (the upstream sends two, one per "
                        f"offending string)")
    elif not all(run_mark(rec) in m["message"] for m in messages):
        problems.append(f"conformance_validator messages: {short(messages)} do not carry this run's upstream mark "
                        f"{run_mark(rec)}: not the messages the upstream sent")
    want_mutation = {"interceptor": "conformance_uppercase", "type": "mutation", "phase": "request", "modified": True,
                     "payload": uppercased(UPPERCASE_PAYLOAD)}
    got = {k: mutation.get(k, "(missing)") for k in want_mutation}
    if canonical_sorted(got) != canonical_sorted(want_mutation):
        problems.append(f"conformance_uppercase: {short(got)}")
    failing = rec.cite(FAILING_LABEL)
    if failing.failure:
        raise NotObserved(f"interceptor/invoke of conformance_failing: {failing.failure}")
    code = (failing.error or {}).get("code") if failing.has_error else None
    data = (failing.error or {}).get("data")
    if code != -32603 or not isinstance(data, dict) or data.get("interceptor") != "conformance_failing":
        problems.append(f"conformance_failing: {short(failing.response)}")
    elif data.get("run") != run_mark(rec):
        problems.append(f"conformance_failing: error.data {short(data)} does not carry this run's upstream mark "
                        f"{run_mark(rec)}: not the error the upstream sent")
    if problems:
        raise Violation("interceptor/invoke answers arrive changed",
                        expected={"conformance_validator": {**want_validation, "messages": "two, severity error"},
                                  "conformance_uppercase": want_mutation,
                                  "conformance_failing": {"error": {"code": -32603,
                                                                    "data": {"interceptor": "conformance_failing",
                                                                             "run": run_mark(rec)}}}},
                        actual=problems)
    return "validation, mutation and failure came back as the upstream sent them"


wire_check("interceptors/gateway/wire-messages-valid")
PLAN = ConnectionPlan(claimer, driver)

