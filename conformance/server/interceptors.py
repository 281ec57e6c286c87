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
response-only validator, an interceptor that always fails and (fixture
contract version 3) a slow validator that a `timeoutMs` must cut short.

Timeouts are judged with margins, not stopwatches: `conformance_slow` takes
SLOW_SECONDS to finish, the suite invokes it with `timeoutMs` TIMEOUT_MS and
requires the -32000 error within ten times that, which is still far below
SLOW_SECONDS. A server that lets the fixture run to its end can only answer
after SLOW_SECONDS, however fast the machine; a server that honours the
timeout answers near TIMEOUT_MS, however loaded the machine (a tenfold
slowdown is absorbed). So the verdict does not depend on machine speed.
Cancelled means the work stops: the next request, sent as the error comes,
must be answered within the same limit, which work left running to
SLOW_SECONDS would hold up on a server that serves one request at a time.

The server as an invoker (fixture contract version 5). "Interceptors ... can
be invoked by both clients and servers": a server that guards its own tools
runs the execution model on them, receiving (validate, then mutate, then the
tool) and sending (mutate, then validate), and answers a denied chain with the
SEP's chain errors. The guarded tools make the order show on the wire:
`conformance_guarded_echo` echoes its `text` behind `conformance_validator`
(which rejects the lower-case marker) and `conformance_uppercase`. Sent the
marker in lower case, a server that validates first rejects the call; one that
mutates first hands the validator the upper-cased marker, which it no longer
recognises, and the tool echoes it upper-cased; one that never validates
echoes it as sent. Sent a clean text, the echo comes back upper-cased only if
the mutation reached the tool. `conformance_guarded_failing` sits behind
`conformance_failing` (fail-closed by default): the chain halts and the call
is answered -32603 with `failedInterceptor` and `lastValidPayload`, never with
the echo.

Known variants (conformance/server/interceptors_variants.py): a failing check's reason starts with the name of
the published variant of the SEP the recording shows; the verdict stays what the SEP says. What the suite sends
(the SEP's method names, the fixture contract's interceptors and payloads, the drivers) is in
conformance/server/interceptors_driver.py.

Chain semantics (ordering, fail-open/closed, audit never blocking, override
narrowing) belong to the invoker: they are host rows of the catalog, and
server rows only where the server invokes (the guarded tools above).
"""

from __future__ import annotations

import fnmatch
import re

from jsonschema import Draft202012Validator

from ..client.recording import Recording
from ..client.session import ConnectionPlan, Session
from ..core import schemas_loader
from ..core.judging import canonical_sorted, short, uppercased
from ..core.model import NotApplicable, NotObserved, Violation, check, following
from .common import (
    judge_list_result,
    judge_shapes,
    judge_unadvertised,
    malformed_check,
    rejected_unlike,
    require_error,
    require_result,
    shape_violations,
    unknown_name_check,
    wire_check,
)
from .interceptors_driver import (
    AFTER_TIMEOUT,
    AUDIT,
    BAD_CONFIGS,
    DEFAULT_POLICY,
    DOT_STAR,
    DOT_STAR_FILTER,
    DOT_STAR_PATTERN,
    EVENT,
    EXTENSION_ID,
    FAILING,
    FIXTURE_INVOCATIONS,
    FIXTURES,
    FIXTURES_V3,
    GUARDED_CLEAN,
    GUARDED_ECHO,
    GUARDED_FAILING,
    INVALID_MARKER,
    INVALID_PAYLOAD,
    INVOKE,
    LIST,
    MIXED_PAYLOAD,
    OTHER_EVENT,
    OVERSIZED_CHARS,
    RESPONSE_ONLY,
    RESPONSE_ONLY_EVENT,
    SLOW,
    SLOW_SECONDS,
    TIMEOUT_MARGIN,
    TIMEOUT_MS,
    UNKNOWN,
    UPPER_PAYLOAD,
    UPPERCASE,
    VALIDATOR,
    extension,
    oversized_driver,
    send_fixtures,
    unclaimed_driver,
)
from .interceptors_variants import UNADVERTISED, diagnosed, probe_spellings

PROFILE = "interceptors"
HOW_TO_CLAIM = f"advertise capabilities.extensions[\"{EXTENSION_ID}\"] in the initialize result"


def claimer(rec: Recording) -> str | None:
    if extension(rec) is not None:
        return f'capabilities.extensions["{EXTENSION_ID}"] is advertised'
    return None


async def driver(session: Session, rec: Recording) -> None:
    await send_fixtures(session, rec)
    await probe_spellings(session, rec)  # a known variant: the SEP's method not served, the other spelling is


def listed_type(rec: Recording, name: str | None):
    item = rec.listed("interceptors", name) if name is not None else None  # the suite's requests name one
    return item.get("type") if item else None


def invoke_results(rec: Recording) -> list[str]:
    return [label for label, ex in rec.exchanges.items() if label.startswith("invoke ") and ex.has_result]


def result_shape_problems(result, kind: str | None, label: str) -> list[str]:
    """Shape errors of one invoke result, judged against the ValidationResult or MutationResult branch the result's
    own `type` names (else the listed type, else what its members suggest), so a bad ValidationResult is reported
    as one, not as a MutationResult missing `modified`."""
    if isinstance(result, dict):
        own = result.get("type")
        kind = own if own in ("validation", "mutation") else kind
        if kind not in ("validation", "mutation"):
            kind = "validation" if "valid" in result else "mutation" if "modified" in result else None
    if kind is None:
        return shape_violations("interceptor-invoke-result", result, label)
    schema = schemas_loader.schemas()["interceptor-invoke-result"]
    title = "ValidationResult" if kind == "validation" else "MutationResult"
    branch = next(b for b in schema["oneOf"] if b.get("title") == title)
    derived = {**{k: v for k, v in schema.items() if k not in ("oneOf", "$id")}, "allOf": [branch]}
    errors = sorted(Draft202012Validator(derived).iter_errors(result), key=lambda e: list(map(str, e.absolute_path)))
    return [f"{label} (a {title}): at {schemas_loader.pointer(e.absolute_path)}: {e.message}" for e in errors]


@check("interceptors/server/capability-advertised",
       does="reads capabilities from the initialize result",
       must=f'a server offering interceptors advertises capabilities.extensions["{EXTENSION_ID}"] '
            "with supportedEvents: string[]")
def capability_advertised(rec: Recording):
    require_result(rec, "initialize")
    value = extension(rec)
    if value is None:
        served = rec.exchanges.get(LIST)
        named = f"{UNADVERTISED} [" if served is not None and served.has_result else ""
        if named:
            rec.cite(LIST)
        raise Violation(f'{named}capabilities.extensions["{EXTENSION_ID}"] is absent{"]" if named else ""}',
                        expected={"extensions": {EXTENSION_ID: {"supportedEvents": ["tools/call"]}}},
                        actual=rec.capabilities)
    judge_shapes(shape_violations("interceptor-capability", value, "interceptors capability"), "{supportedEvents: []}")


@check("interceptors/server/supported-events-cover-hooks",
       does="compares the events of every listed hook with the advertised supportedEvents",
       must="supportedEvents names every event a listed interceptor hooks (or \"*\"); a wildcard hook is covered "
            "by itself or by an event it matches")
@diagnosed
def supported_events_cover_hooks(rec: Recording):
    value = extension(rec)
    if not isinstance(value, dict) or not isinstance(value.get("supportedEvents"), list):
        raise NotObserved("no supportedEvents list was advertised")
    require_result(rec, LIST)
    supported = set(value["supportedEvents"])
    hooked = {e for item in rec.listing.get("interceptors") or () if isinstance(item, dict)
              for hook in item.get("hooks") or () if isinstance(hook, dict)
              for e in hook.get("events") or () if isinstance(e, str)}
    # A pattern ("*", "resources/*") is no event: it is covered by itself, or by an event it matches under a
    # glob reading (a server may list the events its wildcards reach rather than the wildcards), or when it
    # reaches no event the SEP defines (conformance_dot_star's "tools/.*" reaches none: nothing it hooks is
    # left unadvertised).
    def covered(pattern: str) -> bool:
        return any(fnmatch.fnmatchcase(s, pattern) for s in supported if isinstance(s, str)) or \
            not any(fnmatch.fnmatchcase(e, pattern) for e in SEP_EVENTS)

    missing = sorted(e for e in hooked - supported if not ((e == "*" or is_pattern(e)) and covered(e))) \
        if "*" not in supported else []
    if missing:
        raise Violation("listed interceptors hook events supportedEvents does not name", expected=sorted(hooked),
                        actual=sorted(supported))
    return f"{len(hooked)} hooked event(s) covered"


# SEP-2624 §Interceptor > Hooks: the events it defines. Any other event is custom ("SHOULD follow the
# `namespace/operation` naming convention"); any pattern other than "*" is a custom wildcard ("SHOULD follow
# glob-style conventions"). What a custom pattern matches is not defined, so only its form is judged.
SEP_EVENTS = frozenset({"tools/list", "tools/call", "prompts/list", "prompts/get", "resources/list", "resources/read",
                        "resources/subscribe", "sampling/createMessage", "elicitation/create", "roots/list",
                        "llm/completion"})
# A hook event holding one of these is a pattern, not an event name: glob's own (* ? [ ] { }) and those of
# regular expressions and SQL LIKE, which a pattern written in another convention shows.
PATTERN_CHARS = frozenset("*?[]{}()|^$+\\%")
_LITERAL = r"[^*?\[\]{}()|^$+\\%\s,]"
# Glob syntax: literal characters (a backslash escapes one), `*` or `**`, `?`, a bracket class `[...]` (`[!...]` negated) and a brace
# alternation `{a,b}` of literal alternatives. Written by hand: fnmatch accepts any string (it has no invalid
# pattern), so it cannot tell a glob from a regular expression.
GLOB = re.compile(rf"^(?:{_LITERAL}|\\.|\*\*?|\?|\[!?\]?[^\]]*\]|\{{{_LITERAL}+(?:,{_LITERAL}+)+\}})+$")
# namespace/operation: two or more non-empty segments without whitespace (the SEP's own events have this form).
NAMESPACED_EVENT = re.compile(r"^[^\s/]+(?:/[^\s/]+)+$")


def hooked_events(rec: Recording) -> dict[str, list[str]]:
    """Every string event of every listed hook -> the interceptors that hook it (the full listing)."""
    require_result(rec, LIST)
    out: dict[str, list[str]] = {}
    for item in rec.listing.get("interceptors") or ():
        if isinstance(item, dict):
            for hook in item.get("hooks") or ():
                for event in (hook.get("events") or ()) if isinstance(hook, dict) else ():
                    if isinstance(event, str) and str(item.get("name")) not in out.setdefault(event, []):
                        out[event].append(str(item.get("name")))
    return out


def is_pattern(event: str) -> bool:
    return event != "*" and any(ch in PATTERN_CHARS for ch in event)


@check("interceptors/server/custom-wildcards-glob",
       does="reads every event of every listed hook and holds those that are patterns other than \"*\" (they hold "
            "* ? [ ] { } or a regular expression's or SQL LIKE's special characters) to glob syntax",
       must="custom wildcard patterns (beyond \"*\") SHOULD follow glob-style conventions, such as \"tools/*\"")
@diagnosed
def custom_wildcards_glob(rec: Recording):
    patterns = {event: names for event, names in hooked_events(rec).items() if is_pattern(event)}
    if not patterns:
        raise NotApplicable("no listed hook uses a wildcard pattern other than \"*\"")
    off = {event: names for event, names in patterns.items() if not GLOB.match(event)}
    if off:
        raise Violation(f"{len(off)} hook pattern(s) are not glob-style: {', '.join(sorted(off))}",
                        expected="glob syntax: * ** ? [abc] [!abc] {a,b}, as in \"tools/*\"",
                        actual=[{"event": e, "interceptors": n} for e, n in sorted(off.items())])
    return f"{len(patterns)} custom pattern(s), all glob-style: {', '.join(sorted(patterns))}"


@check("interceptors/server/custom-wildcards-match-as-glob",
       does=f"lists interceptors filtered by {EVENT}; {DOT_STAR} hooks the pattern {DOT_STAR_PATTERN!r}, valid glob "
            f"syntax (a literal '.', then anything) that as a regular expression matches {EVENT}",
       must="custom wildcard patterns SHOULD follow glob-style conventions: they are matched as globs, so "
            f"{DOT_STAR_PATTERN!r} does not select {EVENT} (a server that supports no custom pattern, and matches it "
            "as a literal event name, does not select it either)",
       needs=(f"interceptors:{DOT_STAR}@6",))
@diagnosed
def custom_wildcards_match_as_glob(rec: Recording):
    declared = rec.listed("interceptors", DOT_STAR) or {}
    hooked = [e for h in declared.get("hooks") or () if isinstance(h, dict) for e in h.get("events") or ()]
    if DOT_STAR_PATTERN not in hooked:
        raise NotObserved(f"{DOT_STAR} does not hook {DOT_STAR_PATTERN!r}, so what the pattern matches was not seen",
                          expected=[{"events": [DOT_STAR_PATTERN], "phase": "request"}], actual=declared.get("hooks"))
    require_result(rec, DOT_STAR_FILTER)
    names = {i.get("name") for i in rec.listing.get("interceptors filtered by tools/call") or ()
             if isinstance(i, dict)}  # every page
    if RESPONSE_ONLY in names:  # it hooks resources/read only: the filter was not applied at all
        raise NotObserved(f"the list filtered by {EVENT} holds {RESPONSE_ONLY}, which hooks {RESPONSE_ONLY_EVENT} only: "
                          "the filter was not applied, so what the pattern matches was not seen (follows from "
                          "interceptors/server/list-filter-by-event)", actual=sorted(map(str, names)))
    if DOT_STAR in names:
        raise Violation(f"the list filtered by {EVENT} holds {DOT_STAR}, whose only hook is {DOT_STAR_PATTERN!r}: the "
                        f"pattern was matched as a regular expression (as a glob, '.' is a literal dot and "
                        f"{DOT_STAR_PATTERN!r} matches only events that start with 'tools/.')",
                        expected=f"{DOT_STAR} left out of the list filtered by {EVENT}", actual=sorted(map(str, names)))
    return f"{DOT_STAR} ({DOT_STAR_PATTERN!r}) not selected by {EVENT}: a glob (or literal) reading"


@check("interceptors/server/custom-events-namespaced",
       does="reads every event of every listed hook and holds those the SEP does not define (and that are not "
            "patterns) to the namespace/operation form",
       must="custom events SHOULD follow the namespace/operation naming convention, such as \"custom/myOperation\"")
@diagnosed
def custom_events_namespaced(rec: Recording):
    custom = {event: names for event, names in hooked_events(rec).items()
              if event != "*" and event not in SEP_EVENTS and not is_pattern(event)}
    if not custom:
        raise NotApplicable("no listed hook names an event beyond the SEP's list")
    off = {event: names for event, names in custom.items() if not NAMESPACED_EVENT.match(event)}
    if off:
        raise Violation(f"{len(off)} custom event(s) are not namespace/operation: {', '.join(sorted(off))}",
                        expected="namespace/operation, as in \"custom/myOperation\"",
                        actual=[{"event": e, "interceptors": n} for e, n in sorted(off.items())])
    return f"{len(custom)} custom event(s), all namespace/operation: {', '.join(sorted(custom))}"


@check("interceptors/server/list-result-valid",
       does="sends interceptors/list and validates the result against schemas/interceptor-list-result.json",
       must="interceptors/list returns {interceptors: Interceptor[]} with unique names, a type, hooks with a "
            "phase, mode active|audit and a boolean failOpen")
@diagnosed
def list_result_valid(rec: Recording):
    return judge_list_result(rec, LIST, "interceptors", "interceptor-list-result",
                             "{interceptors: [{name, type, hooks: [{events, phase}], mode?, failOpen?, ...}]}",
                             "interceptor(s)")


@check("interceptors/server/fixtures-declared",
       does="compares the listed conformance fixtures with the fixture contract (type, hooks, mode, failOpen)",
       must="each fixture is declared as the contract says; fixtures without a policy leave mode and failOpen "
            "at their defaults (active, false)",
       needs=tuple(f"interceptors:{name}" for name in FIXTURES))
@diagnosed
def fixtures_declared(rec: Recording):
    wrong = {}
    if LIST in rec.exchanges:
        rec.cite(LIST)
    contract = {**FIXTURES, **{name: want for name, want in FIXTURES_V3.items() if rec.listed("interceptors", name)}}
    for name, want in contract.items():
        item = rec.listed("interceptors", name) or {}
        got = {key: item.get(key) for key in want}
        if canonical_sorted(as_declared(got)) != canonical_sorted(as_declared(want)):
            wrong[name] = {"expected": want, "actual": got}
        if name in DEFAULT_POLICY and (item.get("mode", "active") != "active" or item.get("failOpen", False) is not False):
            wrong[name] = {"expected": {"mode": "active (or absent)", "failOpen": "false (or absent)"},
                           "actual": {"mode": item.get("mode"), "failOpen": item.get("failOpen")}}
    if wrong:
        raise Violation(f"fixture(s) declared differently from the contract: {', '.join(sorted(wrong))}",
                        expected={n: w["expected"] for n, w in wrong.items()},
                        actual={n: w["actual"] for n, w in wrong.items()})


def as_declared(declaration: dict) -> dict:
    """A declaration with what the SEP leaves unordered put in one order: the hook entries of an interceptor and
    the events of a hook are sets in effect (nothing says a request hook comes before a response hook)."""
    hooks = declaration.get("hooks")
    if not isinstance(hooks, list):
        return declaration
    norm = [{**h, "events": sorted(h["events"], key=str)} if isinstance(h, dict) and isinstance(h.get("events"), list)
            else h for h in hooks]
    return {**declaration, "hooks": sorted(norm, key=canonical_sorted)}


@check("interceptors/server/list-filter-by-event",
       does=f"sends interceptors/list {{event: \"{RESPONSE_ONLY_EVENT}\"}}",
       must="a filtered list holds exactly the interceptors with a hook on the event or on \"*\"; one that hooks it "
            "only through a custom pattern (\"resources/*\") may be listed or not",
       needs=(f"interceptors:{RESPONSE_ONLY}", f"interceptors:{VALIDATOR}"))
@diagnosed
def list_filter_by_event(rec: Recording):
    result = require_result(rec, "list filtered")
    got = rec.listing.get("interceptors filtered") if isinstance(result, dict) and \
        isinstance(result.get("interceptors"), list) else None  # every page of it
    if not isinstance(got, list):
        raise Violation("the filtered list has no interceptors array", expected="{interceptors: [...]}",
                        actual=short(result))
    every = [i for i in rec.listing.get("interceptors") or [] if isinstance(i, dict)]

    def events(item) -> set[str]:
        return {e for h in item.get("hooks") or () if isinstance(h, dict) for e in h.get("events") or ()
                if isinstance(e, str)}

    # SEP-2624 §Hooks: implementations MAY support wildcard patterns beyond "*" (e.g. "resources/*"), and what
    # a custom pattern matches is not defined: an interceptor reached only through one may be in the list or not.
    want = sorted((str(i.get("name")) for i in every if {RESPONSE_ONLY_EVENT, "*"} & events(i)), key=str)
    either = {str(i.get("name")) for i in every
              if str(i.get("name")) not in want and any(is_pattern(e) for e in events(i))}
    have = sorted((str(i.get("name")) for i in got if isinstance(i, dict)), key=str)
    if sorted(set(have) - either) != want:
        raise Violation(f"the list filtered by {RESPONSE_ONLY_EVENT} is not the interceptors hooking it",
                        expected=want + [f"{name} (or not: a custom pattern)" for name in sorted(either)],
                        actual=have)
    through = sorted(either & set(have))
    return (f"{len(have)} of {len(every)} interceptor(s) hook {RESPONSE_ONLY_EVENT}"
            + (f" ({', '.join(through)} through a custom pattern)" if through else ""))


@check("interceptors/server/invoke-result-valid",
       does="validates every interceptor/invoke result it received (fixtures and real interceptors) against "
            "schemas/interceptor-invoke-result.json and the interceptor's listed type",
       must="a validator answers a ValidationResult {valid, severity?, messages?}, a mutator a MutationResult "
            "{modified, payload}")
@diagnosed
def invoke_result_valid(rec: Recording):
    labels = invoke_results(rec)
    if not labels:
        raise NotObserved("no interceptor/invoke returned a result")
    problems = []
    for label in labels:
        ex = rec.cite(label)
        kind = listed_type(rec, (ex.request.get("params") or {}).get("name"))
        problems += result_shape_problems(ex.result, kind, label)
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
@diagnosed
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
       does=f"invokes {VALIDATOR} on a clean tools/call payload and on one with {INVALID_MARKER} in four strings "
            "(top level, an array, an array nested in an object in an array, a nested object)",
       must="a validator answers valid: true for a clean payload and valid: false with severity \"error\" and one "
            "error message per violation for a violating one",
       needs=(f"interceptors:{VALIDATOR}",))
@diagnosed
def validator_reports_violation(rec: Recording):
    clean = require_result(rec, "invoke validator clean")
    if clean.get("valid") is not True:
        raise Violation("a clean payload was not valid", expected={"valid": True}, actual=short(clean))
    bad = require_result(rec, "invoke validator invalid")
    messages = bad.get("messages") if isinstance(bad.get("messages"), list) else []
    errors = [m for m in messages if isinstance(m, dict) and m.get("severity") == "error"]
    if bad.get("valid") is not False or bad.get("severity") != "error" or not errors:
        raise Violation("the violation was not reported as a blocking error",
                        expected={"valid": False, "severity": "error", "messages": [{"severity": "error", "message": "..."}]},
                        actual=short(bad))
    where = violating_paths(INVALID_PAYLOAD)
    if len(errors) != len(where):
        raise Violation(f"{len(where)} strings contain {INVALID_MARKER} but {len(errors)} error message(s) came back: "
                        f"a validator reports each violation in a message of its own"
                        f"{', not several folded into one' if len(errors) < len(where) else ''}",
                        expected={"error messages": len(where), "violating strings at": where},
                        actual={"error messages": len(errors), "messages": short(messages)})
    return f"{len(errors)} violations, one error message each"


def violating_paths(value, path: str = "$") -> list[str]:
    """The JSON paths of the strings in `value` that contain the marker."""
    if isinstance(value, str):
        return [path] if INVALID_MARKER in value else []
    if isinstance(value, dict):
        return [p for key, item in value.items() for p in violating_paths(item, f"{path}.{key}")]
    if isinstance(value, list):
        return [p for i, item in enumerate(value) for p in violating_paths(item, f"{path}[{i}]")]
    return []


@check("interceptors/server/validator-does-not-modify",
       does="looks for a payload in every validation interceptor's result",
       must="a validator never returns a payload: validators do not modify what they inspect")
@diagnosed
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
@diagnosed
def mutator_transforms_payload(rec: Recording):
    want = uppercased(MIXED_PAYLOAD)
    for label in ("invoke uppercase request", "invoke uppercase response"):
        result = require_result(rec, label)
        if canonical_sorted(result.get("payload")) != canonical_sorted(want) or result.get("modified") is not True:
            raise Violation(f"{label}: the payload is not the transformed one",
                            expected={"modified": True, "payload": want},
                            actual={"modified": result.get("modified"), "payload": result.get("payload")})


@check("interceptors/server/mutator-unchanged-not-modified",
       does=f"invokes {UPPERCASE} on a payload whose strings are already upper case",
       must="a mutator that changes nothing returns the original payload with modified: false",
       needs=(f"interceptors:{UPPERCASE}",))
@diagnosed
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
@diagnosed
def wildcard_hook_any_event(rec: Recording):
    result = require_result(rec, "invoke audit any event")
    if result.get("valid") is not True:
        raise Violation("the wildcard validator did not validate the event", expected={"valid": True},
                        actual=short(result))


@check("interceptors/server/invoke-outside-hooks-rejected",
       does=f"invokes {RESPONSE_ONLY} in its hooked phase (response) and in the request phase it does not hook",
       must="an invocation for an event or phase the interceptor does not hook is answered with a JSON-RPC error",
       needs=(f"interceptors:{RESPONSE_ONLY}",))
@diagnosed
def invoke_outside_hooks_rejected(rec: Recording):
    return rejected_unlike(rec, "invoke response-only response", "invoke response-only request",
                           "an invocation in a phase the interceptor does not hook", "the hooked phase")


@check("interceptors/server/failure-is-error",
       does=f"invokes {FAILING}, which fails on every invocation",
       must="an interceptor that fails is answered with a JSON-RPC error (-32603), never a result, so the invoker "
            "can apply failOpen",
       needs=(f"interceptors:{FAILING}",))
@diagnosed
def failure_is_error(rec: Recording):
    err = require_error(rec, "invoke failing", "a failing interceptor")
    if err.get("code") != -32603:
        raise Violation(f"the failure was answered with code {err.get('code')}", expected=-32603,
                        actual=err.get("code"), level="SHOULD")
    return "answered -32603"


@check("interceptors/server/invalid-config-rejected",
       does=f"invokes {VALIDATOR} with config {{strict: true}} (valid), with an unknown key and with a wrong type "
            "(its configSchema has additionalProperties: false); invokes real interceptors with configs generated "
            "from their configSchema (unknown key, wrong type, a required key missing)",
       must="invocation config is validated against the interceptor's configSchema before it runs: an invalid "
            "config is answered with a JSON-RPC error",
       needs=(f"interceptors:{VALIDATOR}",))
@diagnosed
def invalid_config_rejected(rec: Recording):
    ok = rec.cite("invoke validator good config")
    if not ok.has_result:
        raise NotObserved(f"a valid config was rejected too ({ok.outcome_text()}), so a rejection shows nothing")
    accepted: list[dict] = []
    labels = [f"invoke validator bad config {what}" for what in BAD_CONFIGS] + \
             [label for label in rec.exchanges if label.startswith("config real ")]
    for label in labels:
        ex = rec.cite(label)
        if ex.failure:
            raise Violation(f"{label}: {ex.failure}", expected="a JSON-RPC error response", actual=ex.failure)
        if ex.has_result:
            accepted.append({"invoke": label, "config": (ex.request.get("params") or {}).get("config")})
    if accepted:
        raise Violation(f"{len(accepted)} config(s) the configSchema refuses were accepted: "
                        f"{', '.join(a['invoke'].removeprefix('invoke ') for a in accepted)}",
                        expected="a JSON-RPC error for each", actual=accepted)
    return f"{len(labels)} invalid config(s) rejected"


@check("interceptors/server/timeout-cancels",
       does=f"invokes {SLOW} (runs {SLOW_SECONDS:g} s) with timeoutMs {TIMEOUT_MS}, times the answer, then times "
            f"the next request ({VALIDATOR} on a clean payload, or ping)",
       must="an invocation that exceeds its timeoutMs is cancelled: the error comes back near timeoutMs (within "
            f"{TIMEOUT_MARGIN} times it), long before the interceptor would have finished, and its work stops: the "
            "next request is not held behind it",
       needs=(f"interceptors:{SLOW}@3",))
@diagnosed
def timeout_cancels(rec: Recording):
    ex = rec.cite("invoke slow with timeout")
    limit = TIMEOUT_MARGIN * TIMEOUT_MS / 1000
    took = f"{ex.elapsed:.2f} s" if ex.elapsed is not None else "an unknown time"
    if ex.failure:
        raise Violation(f"no answer to an invocation with timeoutMs {TIMEOUT_MS}: {ex.failure}",
                        expected=f"a JSON-RPC error within {limit:g} s", actual=ex.failure)
    if isinstance(ex.error, dict) and ex.error.get("code") in (-32601, -32602):
        raise NotObserved(f"the invocation was refused before it ran (code {ex.error.get('code')}: "
                          f"{short(ex.error.get('message'))}), so no cancellation could be observed")
    if ex.has_result:
        raise Violation(f"the invocation ran to its end and answered a result after {took} although timeoutMs was "
                        f"{TIMEOUT_MS}", expected=f"a JSON-RPC error (-32000) within {limit:g} s",
                        actual={"elapsedSeconds": ex.elapsed, "result": short(ex.result)})
    if ex.elapsed is None or ex.elapsed > limit:
        raise Violation(f"the timeout error came after {took}: timeoutMs {TIMEOUT_MS} was not applied "
                        f"(allowed: {limit:g} s; the fixture runs {SLOW_SECONDS:g} s)",
                        expected=f"an error within {limit:g} s", actual={"elapsedSeconds": ex.elapsed,
                                                                          "error": ex.error})
    # The work must stop, not only the answer come: the next request, sent when the error came, is answered within
    # the same limit. Work left running SLOW_SECONDS in all would hold it for the rest of that (over 5 s when the
    # error came within the limit), so the verdict keeps the tenfold margin.
    after = rec.exchanges.get(AFTER_TIMEOUT)
    if after is None:
        raise NotObserved("no request followed the timed-out invocation, so whether its work stopped was not seen")
    rec.cite(AFTER_TIMEOUT)
    waited = f"{after.elapsed:.2f} s" if after.elapsed is not None else "an unknown time"
    if not (after.has_result or after.has_error) or after.elapsed is None or after.elapsed > limit:
        raise Violation(f"the timeout error came after {took}, but the next request ({after.method}) waited {waited} "
                        f"for {'an' if after.has_result or after.has_error else 'no'} answer: the timed-out "
                        f"invocation went on running and the request queued behind it (allowed: {limit:g} s)",
                        expected=f"the work stopped at the timeout: the next request answered within {limit:g} s",
                        actual={"timeoutErrorSeconds": ex.elapsed, "nextRequestSeconds": after.elapsed,
                                "nextRequest": after.outcome_text()})
    return (f"cancelled: error after {took} (timeoutMs {TIMEOUT_MS}, limit {limit:g} s); the next request was "
            f"answered after {waited}")


@check("interceptors/server/timeout-error-code",
       does=f"invokes {SLOW} with timeoutMs {TIMEOUT_MS} and reads the error code",
       must="a timed-out invocation is answered with a JSON-RPC error with code -32000 (Server error)",
       needs=(f"interceptors:{SLOW}@3",))
@diagnosed
def timeout_error_code(rec: Recording):
    with following("interceptors/server/timeout-cancels"):  # no error at all: not cancelled either
        err = require_error(rec, "invoke slow with timeout", f"an invocation that exceeds timeoutMs {TIMEOUT_MS}")
    if err.get("code") != -32000:
        raise Violation(f"the timeout was answered with code {err.get('code')}", expected=-32000,
                        actual=short(err))
    return "answered -32000"


@check("interceptors/server/timeout-error-data",
       does=f"invokes {SLOW} with timeoutMs {TIMEOUT_MS} and reads the timeout error's data",
       must="a timed-out invocation's error carries data {interceptor, timeoutMs, phase}: the interceptor's name, the "
            "timeoutMs it was given and the phase it ran in (the SEP's timeout error example)",
       needs=(f"interceptors:{SLOW}@3",))
@diagnosed
def timeout_error_data(rec: Recording):
    err = require_error(rec, "invoke slow with timeout", f"an invocation that exceeds timeoutMs {TIMEOUT_MS}")
    data = err.get("data")
    want = {"interceptor": SLOW, "timeoutMs": TIMEOUT_MS, "phase": "request"}
    got = {key: data.get(key) for key in want} if isinstance(data, dict) else None
    if got != want:
        raise Violation("the timeout error's data does not name the interceptor, its timeoutMs and the phase",
                        expected={"code": -32000, "message": "Interceptor execution timeout", "data": want},
                        actual=short(err))
    return f"data names {SLOW}, timeoutMs {TIMEOUT_MS} and phase request"


@check("interceptors/server/oversized-payload-survived",
       does=f"invokes {VALIDATOR} with a payload of {OVERSIZED_CHARS // 2**20} Mi characters (after every other "
            "request of the run), then sends tools/list",
       must="a server keeps resource limits: a payload beyond what it will take is answered (a result, a JSON-RPC "
            "error naming the limit, or an HTTP 4xx such as 413) and the server goes on serving, instead of running out of memory or time",
       needs=(f"interceptors:{VALIDATOR}",))
@diagnosed
def oversized_payload_survived(rec: Recording):
    ex = rec.cite("invoke validator oversized")
    size = f"{OVERSIZED_CHARS // 2**20} Mi characters"
    if ex.has_result or ex.has_error:
        answer = (f"an error {ex.error.get('code')} ({short(ex.error.get('message'))})"
                  if isinstance(ex.error, dict) else "a result")
    elif ex.http_status and 400 <= ex.http_status < 500:  # refused by the HTTP layer (413): an answer too
        answer = f"HTTP {ex.http_status}"
    else:
        raise Violation(f"no answer to an invocation with a payload of {size}: {ex.failure}",
                        expected="a result or an error, then an answer to tools/list", actual=ex.failure)
    after = rec.cite("after oversized")
    if not (after.has_result or after.has_error):
        raise Violation(f"the server answered the {size} payload with {answer}, then stopped serving: tools/list "
                        f"got {after.outcome_text()}", expected="an answer to tools/list",
                        actual=after.outcome_text())
    return f"answered {answer} and went on serving"


# -- the server as an invoker (fixture contract version 5) --------------------------------------------------------
def last_valid_problems(data: dict, request) -> list[str]:
    """What is wrong with data.lastValidPayload of the guarded failing call: it must be the payload the failed
    mutation was given, the call as received (conformance_failing is the chain's first and only mutation), so
    `{method: "tools/call", params: {name, arguments}}` with the suite's name and arguments; other members of
    params (_meta) may come along."""
    if "lastValidPayload" not in data:
        return ["no data.lastValidPayload"]
    sent = (request or {}).get("params") or {}
    want = {"method": "tools/call", "params": {"name": sent.get("name"), "arguments": sent.get("arguments")}}
    got = data["lastValidPayload"]
    params = got.get("params") if isinstance(got, dict) else None
    if isinstance(params, dict) and got.get("method") == want["method"] and \
            {k: params.get(k) for k in ("name", "arguments")} == want["params"]:
        return []
    return [f"data.lastValidPayload is {short(got)!r}, not the payload {FAILING} was given ({want!r})"]


def echoed(result) -> str | None:
    """The text of a tool result's text blocks, joined; None when it has none."""
    blocks = result.get("content") if isinstance(result, dict) else None
    texts = [b["text"] for b in blocks or () if isinstance(b, dict) and isinstance(b.get("text"), str)]
    return "".join(texts) if texts else None


def echo_reading(text: str | None, sent: str) -> str:
    """What a guarded echo's text says about the chain the server ran before the tool."""
    if text == sent.upper():
        return "upper-cased"
    if text == sent:
        return "as sent"
    return "other"


@check("interceptors/server/invoker-rejects-invalid-call",
       does=f"calls {GUARDED_ECHO} (guarded by {VALIDATOR}, then {UPPERCASE}) with the text {INVALID_MARKER}",
       must="a server that guards its tools with interceptors validates a call it receives before it mutates it, and "
            "answers a call a validation rejects with a JSON-RPC error: the tool never runs",
       needs=(f"tool:{GUARDED_ECHO}@5", f"interceptors:{VALIDATOR}", f"interceptors:{UPPERCASE}"))
def invoker_rejects_invalid_call(rec: Recording):
    ex = rec.cite("guarded echo invalid")
    if ex.failure:
        raise Violation(f"no answer to a call the validator rejects: {ex.failure}",
                        expected="a JSON-RPC error (-32602 Interceptor validation failed)", actual=ex.failure)
    if ex.has_error:
        return f"rejected with code {ex.error.get('code') if isinstance(ex.error, dict) else ex.error}"
    text = echoed(ex.result)
    reading = echo_reading(text, INVALID_MARKER)
    if isinstance(ex.result, dict) and ex.result.get("isError") is True and reading == "other":
        raise Violation("the call was refused as a tool result with isError: true: the SEP's server answers a call "
                        "its validations reject with an error (\"Server-->>Client: Error: Validation failed\"; "
                        "§Chain Execution > Error Handling shapes it as a JSON-RPC error)",
                        expected="a JSON-RPC error", actual=short(ex.result))
    # An upper-cased echo shows the mutation ran and nothing rejected the call; whether a validation ran after it
    # (and no longer saw the marker) or none ran at all, the echo cannot tell, so the reason names both.
    why = {"upper-cased": f"the tool echoed {INVALID_MARKER.upper()}: the mutation ran and no validation rejected "
                          f"the call: either the validation ran after the mutation and no longer saw {INVALID_MARKER} "
                          "(receiving is validate, then mutate), or no validation ran",
           "as sent": f"the tool echoed {INVALID_MARKER} as sent: no validation rejected the call",
           "other": "the call was answered with a result: no validation rejected it"}[reading]
    raise Violation(why, expected="a JSON-RPC error; the tool never runs", actual=short(ex.result))


@check("interceptors/server/invoker-applies-mutations",
       does=f"calls {GUARDED_ECHO} with a clean lower-case text and reads the echo",
       must="a server that guards its tools runs their mutations once the validations pass: the tool runs on the "
            "mutated call (the text comes back upper-cased)",
       needs=(f"tool:{GUARDED_ECHO}@5", f"interceptors:{UPPERCASE}"))
def invoker_applies_mutations(rec: Recording):
    result = require_result(rec, "guarded echo clean")
    text = echoed(result)
    reading = echo_reading(text, GUARDED_CLEAN)
    if reading == "upper-cased" and result.get("isError") is not True:
        return "the tool ran on the upper-cased text"
    why = {"as sent": f"the tool echoed the text as sent: {UPPERCASE}'s mutation did not reach it",
           "upper-cased": "the call was answered as a tool error",
           "other": "the tool's answer is not the text, upper-cased"}[reading]
    raise Violation(why, expected={"content": [{"type": "text", "text": GUARDED_CLEAN.upper()}]},
                    actual=short(result))


@check("interceptors/server/invoker-validation-error-shape",
       does=f"reads the error {GUARDED_ECHO} answers to the text {INVALID_MARKER}",
       must="the error of a chain a validation rejects is -32602 with data.validationErrors, one "
            "{interceptor, severity, message} per blocking message, naming the validator",
       needs=(f"tool:{GUARDED_ECHO}@5", f"interceptors:{VALIDATOR}"))
def invoker_validation_error_shape(rec: Recording):
    with following("interceptors/server/invoker-rejects-invalid-call"):  # no error at all: that check's failure
        err = require_error(rec, "guarded echo invalid", "a call the validator rejects")
    data = err["data"] if isinstance(err.get("data"), dict) else {}
    entries = data.get("validationErrors")
    named = [e for e in entries if isinstance(e, dict) and e.get("interceptor") == VALIDATOR
             and e.get("severity") == "error" and isinstance(e.get("message"), str)] if isinstance(entries, list) else []
    problems = ([f"code {err.get('code')}, not -32602"] if err.get("code") != -32602 else []) + \
               ([] if isinstance(entries, list) else ["no data.validationErrors list"]) + \
               ([] if named or not isinstance(entries, list) else
                [f"no validationErrors entry names {VALIDATOR} with severity \"error\" and a message"])
    if problems:
        raise Violation(f"the validation failure's error: {'; '.join(problems)}",
                        expected={"code": -32602, "message": "Interceptor validation failed", "data": {
                            "validationErrors": [{"interceptor": VALIDATOR, "severity": "error", "message": "..."}]}},
                        actual=short(err))
    return f"-32602 with {len(named)} validation error(s) from {VALIDATOR}"


@check("interceptors/server/invoker-mutation-failure-error",
       does=f"calls {GUARDED_FAILING} (guarded by {FAILING}, fail-closed) and reads the answer",
       must="a mutation that fails halts the chain: the call is answered with a JSON-RPC error, -32603 with "
            "data.failedInterceptor and data.lastValidPayload (the payload the failed mutation was given), and the "
            "tool never runs",
       needs=(f"tool:{GUARDED_FAILING}@5", f"interceptors:{FAILING}"))
def invoker_mutation_failure_error(rec: Recording):
    ex = rec.cite("guarded failing")
    if ex.failure:
        raise Violation(f"no answer to a call whose mutation fails: {ex.failure}",
                        expected="a JSON-RPC error (-32603 Interceptor mutation failed)", actual=ex.failure)
    if ex.has_result:
        reading = echo_reading(echoed(ex.result), GUARDED_CLEAN)
        # The text as sent: no mutation ran at all, which invoker-applies-mutations names first when it fails too.
        with following(*(["interceptors/server/invoker-applies-mutations"] if reading == "as sent" else [])):
            raise Violation(f"the call was answered with a result{': the tool ran' if reading != 'other' else ''}: "
                            f"the chain did not halt at {FAILING}, which is fail-closed (no failOpen declared)",
                            expected="a JSON-RPC error; the tool never runs", actual=short(ex.result))
    err: dict = ex.error if isinstance(ex.error, dict) else {}
    data = err["data"] if isinstance(err.get("data"), dict) else {}
    problems = ([f"code {err.get('code')}, not -32603"] if err.get("code") != -32603 else []) + \
               ([] if data.get("failedInterceptor") == FAILING else
                [f"data.failedInterceptor is {short(data.get('failedInterceptor'))!r}, not {FAILING}"]) + \
               last_valid_problems(data, ex.request)
    if problems:
        raise Violation(f"the mutation failure's error: {'; '.join(problems)}",
                        expected={"code": -32603, "message": "Interceptor mutation failed",
                                  "data": {"failedInterceptor": FAILING, "lastValidPayload": {
                                      "method": "tools/call", "params": {"name": GUARDED_FAILING,
                                                                         "arguments": {"text": GUARDED_CLEAN}}}}},
                        actual=short(err), level="SHOULD")
    return f"halted: -32603 naming {FAILING}, with lastValidPayload"


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
@check("interceptors/server/unadvertised-method-rejected",
       does="sends interceptors/list and interceptor/invoke to a server that does not advertise interceptors",
       must="methods of a capability the server does not advertise are rejected, with -32601 Method not found",
       when="unclaimed")
def unadvertised_method_rejected(rec: Recording):
    try:
        return judge_unadvertised(rec, [LIST, INVOKE], f'extensions["{EXTENSION_ID}"]')
    except Violation as exc:
        if any(rec.exchanges[f"unadvertised {m}"].has_result for m in (LIST, INVOKE) if f"unadvertised {m}" in rec.exchanges):
            exc.reason = f"{UNADVERTISED} [{exc.reason}]"
        raise


wire_check("interceptors/server/wire-messages-valid")
PLAN = ConnectionPlan(claimer, driver, unclaimed_driver, last=oversized_driver)
