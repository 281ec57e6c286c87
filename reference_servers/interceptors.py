"""Interceptors (SEP-2624): `interceptors/list` and `interceptor/invoke`, independent of any SDK release.

An `InterceptorRegistry` holds the interceptors a deployment offers and serves
the two methods for `core.App` (which the SDK adapters put on the wire). What
the SEP defines is decided here:

- discovery: `interceptors/list {event?}` returns every interceptor, or only
  those with a hook on `event` (a `"*"` hook matches every event);
- invocation: `interceptor/invoke {name, event, phase, payload, config?,
  timeoutMs?, context?}` is validated before anything runs (the SEP's "payloads
  MUST be validated before processing"): unknown names, a missing or wrong
  phase, a missing payload and an event/phase the interceptor does not hook are
  invalid params (-32602); `config` is validated against the interceptor's
  `configSchema`. A crash is -32603 "Interceptor execution failed" with
  `data: {interceptor, reason}` (the SEP's error example), never a result.
- timeouts: with `timeoutMs`, an invocation still running at the deadline is
  answered -32000 "Interceptor execution timeout" with `data: {interceptor,
  timeoutMs, phase}` (the SEP's example). Cancellation is cooperative: a body
  that waits (`wait_within_deadline`, as `conformance_slow` does) stops at the
  deadline; a body that computes is not interrupted (Python threads cannot
  be), its late result is discarded and the same error answered.
- every result names `interceptor`, `type` and `phase` (the Validator/Mutator
  interfaces) and carries `durationMs`. A validator's result never carries a
  payload: validators MUST NOT modify.
- the capability `capabilities.extensions["io.modelcontextprotocol/interceptors"]`
  lists `supportedEvents`: every event some hook names.

Invoker-side policy (overrides, chain ordering, fail-open/closed, audit mode)
is not the server's business: the server only declares defaults (`mode`,
`failOpen`, `priorityHint`). `narrow_hooks` is the one override rule the SEP
states as a MUST (narrow only, reject widening); it is here for invokers built
on this package and for the suite's own tests.

The interceptors: the conformance fixtures (fixed names, see
docs/fixture-contract.md), and three a team would deploy: `pii-redactor` (mutation) and
`pii-detector` (validation) on `reference_servers/middleware/pii/`'s public
API, `audit-logger` (validation, audit mode, fail-open), which logs each
invocation to stderr with PII redacted, and `usage-meter` (validation, audit
mode, fail-open), which counts requests per event on a custom event
(`usage/record`) and a glob (`tools/*`).
"""

from __future__ import annotations

import copy
import fnmatch
import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from jsonschema import Draft202012Validator

from .limits import LimitExceeded, checkpoint
from .middleware.pii import redact_text
from .middleware.pii.detection import find_pii
from .middleware.pii.handles import HandleMap
from .middleware.pii.validity import budgeted

log = logging.getLogger("reference_servers.interceptors")

EXTENSION_ID = "io.modelcontextprotocol/interceptors"
LIST_METHOD, INVOKE_METHOD = "interceptors/list", "interceptor/invoke"
METHODS = (LIST_METHOD, INVOKE_METHOD)
PHASES = ("request", "response")
WILDCARD = "*"
INVALID_PARAMS, INTERNAL_ERROR = -32602, -32603
TIMEOUT_ERROR = -32000  # the SEP's "Server error" code for an invocation that exceeded timeoutMs


class InterceptorError(Exception):
    """A JSON-RPC error to answer with (core.App turns it into its own JsonRpcError)."""

    def __init__(self, code: int, message: str, data: Any = None):
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


# fn(payload, event, phase, config) -> the type-specific fields of the result:
#   validation: {"valid", "severity"?, "messages"?, "info"?}   mutation: {"modified", "payload", "info"?}
Body = Callable[[Any, str, str, dict], dict]


@dataclass
class InterceptorDef:
    name: str
    type: str  # "validation" | "mutation"
    hooks: list[dict]  # [{"events": [...], "phase": "request" | "response"}]
    fn: Body
    description: str | None = None
    version: str | None = None
    mode: str | None = None  # declared default; absent means "active"
    fail_open: bool | None = None  # declared default; absent means false (fail-closed)
    priority_hint: int | dict | None = None
    config_schema: dict | None = None

    def hooks_event(self, event: str, phase: str | None = None) -> bool:
        # A hook event is a glob (fnmatch): "*" matches every event, "tools/*" every tools event (the SEP's MAY
        # "additional wildcard patterns", glob-style as it asks); an event name without glob characters matches itself.
        return any((phase is None or hook["phase"] == phase)
                   and any(fnmatch.fnmatchcase(event, pattern) for pattern in hook["events"]) for hook in self.hooks)

    def to_wire(self) -> dict:
        wire: dict = {"name": self.name, "type": self.type, "hooks": copy.deepcopy(self.hooks)}
        for key, value in (("version", self.version), ("description", self.description), ("mode", self.mode), ("failOpen", self.fail_open), ("priorityHint", self.priority_hint),
                           ("configSchema", self.config_schema)):
            if value is not None:
                wire[key] = copy.deepcopy(value)
        return wire


@dataclass
class InterceptorRegistry:
    items: dict[str, InterceptorDef] = field(default_factory=dict)

    def add(self, item: InterceptorDef) -> None:
        self.items[item.name] = item

    def __bool__(self) -> bool:
        return bool(self.items)

    def capability(self) -> dict:
        events = sorted({event for item in self.items.values() for hook in item.hooks for event in hook["events"]})
        return {"supportedEvents": events}

    def handle(self, method: str, params: Any) -> dict:
        params = {} if params is None else params
        if not isinstance(params, dict):
            raise InterceptorError(INVALID_PARAMS, "params must be an object")
        if method == LIST_METHOD:
            return self.list(params)
        return self.invoke(params)

    def list(self, params: dict) -> dict:
        event = params.get("event")
        if event is not None and not isinstance(event, str):
            raise InterceptorError(INVALID_PARAMS, "interceptors/list: event must be a string")
        return {"interceptors": [item.to_wire() for item in self.items.values()
                                 if event is None or item.hooks_event(event)]}

    def invoke(self, params: dict) -> dict:
        name, event, phase = params.get("name"), params.get("event"), params.get("phase")
        if not isinstance(name, str):
            raise InterceptorError(INVALID_PARAMS, "interceptor/invoke: name must be a string")
        item = self.items.get(name)
        if item is None:
            raise InterceptorError(INVALID_PARAMS, f"Unknown interceptor: {name}")
        if not isinstance(event, str) or not event:
            raise InterceptorError(INVALID_PARAMS, "interceptor/invoke: event must be a non-empty string")
        if phase not in PHASES:
            raise InterceptorError(INVALID_PARAMS, "interceptor/invoke: phase must be \"request\" or \"response\"")
        if "payload" not in params:
            raise InterceptorError(INVALID_PARAMS, "interceptor/invoke: payload is required")
        if not item.hooks_event(event, phase):
            raise InterceptorError(INVALID_PARAMS, f"interceptor {name} does not hook {event} in the {phase} phase",
                                   {"interceptor": name, "hooks": item.hooks})
        config = params.get("config", {})
        if not isinstance(config, dict):
            raise InterceptorError(INVALID_PARAMS, "interceptor/invoke: config must be an object")
        if item.config_schema is not None:
            problems = [e.message for e in Draft202012Validator(item.config_schema).iter_errors(config)]
            if problems:
                raise InterceptorError(INVALID_PARAMS, f"invalid config for interceptor {name}: {'; '.join(problems)}",
                                       {"interceptor": name, "errors": problems})
        timeout_ms = params.get("timeoutMs")
        if timeout_ms is not None and (isinstance(timeout_ms, bool) or not isinstance(timeout_ms, (int, float))
                                       or timeout_ms <= 0):
            raise InterceptorError(INVALID_PARAMS, "interceptor/invoke: timeoutMs must be a positive number")
        started = time.perf_counter()
        timed_out = InterceptorError(TIMEOUT_ERROR, "Interceptor execution timeout",
                                     {"interceptor": name, "timeoutMs": timeout_ms, "phase": phase})
        _deadline.at = None if timeout_ms is None else time.monotonic() + timeout_ms / 1000
        try:
            fields = item.fn(copy.deepcopy(params["payload"]), event, phase, copy.deepcopy(config))
        except DeadlineExceeded:
            raise timed_out from None
        except LimitExceeded:
            raise
        except Exception as exc:  # an interceptor's crash is the invoker's to route (failOpen), not ours to hide
            log.warning("interceptor %s failed: %s", name, exc)
            raise InterceptorError(INTERNAL_ERROR, "Interceptor execution failed",
                                   {"interceptor": name, "reason": str(exc) or type(exc).__name__}) from None
        finally:
            deadline, _deadline.at = _deadline.at, None
        if deadline is not None and time.monotonic() > deadline:  # finished, but too late: the result is void
            raise timed_out
        if item.type == "validation":  # validators MUST NOT modify: nothing payload-like leaves one
            fields = {k: v for k, v in fields.items() if k not in ("payload", "modified")}
        duration = round((time.perf_counter() - started) * 1000, 3)
        return {"interceptor": name, "type": item.type, "phase": phase, **fields, "durationMs": duration}


# -- timeouts: the deadline of the invocation running on this thread ---------------------------------------------------
class DeadlineExceeded(Exception):
    """Raised inside a body by `wait_within_deadline` when the invocation's timeoutMs runs out."""


_deadline = threading.local()  # .at: time.monotonic() deadline of the invocation running on this thread, or None


def wait_within_deadline(seconds: float) -> None:
    """Wait `seconds`, or until the current invocation's deadline, then raise DeadlineExceeded."""
    deadline = getattr(_deadline, "at", None)
    if deadline is None or time.monotonic() + seconds <= deadline:
        time.sleep(seconds)
        return
    time.sleep(max(0.0, deadline - time.monotonic()))
    raise DeadlineExceeded


# -- the one override rule the SEP states for invokers ------------------------------------------------------------
def narrow_hooks(declared: list[dict], override: list[dict]) -> list[dict]:
    """The override's hooks, after checking each is within the declared ones; ValueError names any widening.

    An override event is within a declared hook of the same phase when that hook names the event or `"*"`.
    """
    widened = []
    for hook in override:
        allowed = {e for d in declared if d["phase"] == hook["phase"] for e in d["events"]}
        widened += [f"{e} ({hook['phase']})" for e in hook["events"] if e not in allowed and WILDCARD not in allowed]
    if widened:
        raise ValueError(f"override hooks widen the declared hooks: {', '.join(widened)}")
    return copy.deepcopy(override)


# -- payload helpers -------------------------------------------------------------------------------------------------
def strings(value: Any, path: str = "$"):
    """(JSON path, string) for every string value in a JSON value, keys excluded."""
    checkpoint()  # a payload of many values: stopped between two when the call is cancelled
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from strings(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from strings(item, f"{path}[{index}]")


def _string_chars(value: Any) -> int:
    return sum(len(text) for _, text in strings(value))


def map_strings(value: Any, fn: Callable[[str], str]) -> Any:
    checkpoint()
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, dict):
        return {key: map_strings(item, fn) for key, item in value.items()}
    if isinstance(value, list):
        return [map_strings(item, fn) for item in value]
    return value


# -- conformance fixtures ----------------------------------------------------------------------------------------------
INVALID_MARKER = "conformance:invalid"
FIXTURE_EVENT = "tools/call"
RESPONSE_ONLY_EVENT = "resources/read"
FIXTURE_CONFIG = {"type": "object", "properties": {"strict": {"type": "boolean"}}, "additionalProperties": False}


def fixture_validator(payload, event, phase, config) -> dict:
    bad = [path for path, text in strings(payload) if INVALID_MARKER in text]
    if not bad:
        return {"valid": True}
    return {"valid": False, "severity": "error",
            "messages": [{"path": path, "message": f"contains {INVALID_MARKER}", "severity": "error"} for path in bad]}


def fixture_uppercase(payload, event, phase, config) -> dict:
    changed = sum(text != text.upper() for _, text in strings(payload))
    return {"modified": changed > 0, "payload": map_strings(payload, str.upper), "info": {"changed": changed}}


def fixture_audit(payload, event, phase, config) -> dict:
    return {"valid": True, "info": {"observed": f"{event} {phase}"}}


def fixture_response_only(payload, event, phase, config) -> dict:
    return {"valid": True}


def fixture_failing(payload, event, phase, config) -> dict:
    raise RuntimeError("conformance_failing always fails")


SLOW_SECONDS = 6.0  # fixture contract version 3


def fixture_slow(payload, event, phase, config) -> dict:
    wait_within_deadline(SLOW_SECONDS)
    return {"valid": True}


def register_fixtures(registry: InterceptorRegistry) -> None:
    both = [{"events": [FIXTURE_EVENT], "phase": "request"}, {"events": [FIXTURE_EVENT], "phase": "response"}]
    registry.add(InterceptorDef("conformance_validator", "validation", [{"events": [FIXTURE_EVENT], "phase": "request"}],
                                fixture_validator, f"Conformance fixture: invalid when any string contains "
                                                   f"{INVALID_MARKER}.", config_schema=FIXTURE_CONFIG))
    registry.add(InterceptorDef("conformance_uppercase", "mutation", both, fixture_uppercase,
                                "Conformance fixture: uppercases every string value of the payload.",
                                priority_hint={"request": -100, "response": 100}))
    registry.add(InterceptorDef("conformance_audit", "validation",
                                [{"events": [WILDCARD], "phase": "request"}, {"events": [WILDCARD], "phase": "response"}],
                                fixture_audit, "Conformance fixture: observes every event, never blocks.",
                                mode="audit", fail_open=True))
    registry.add(InterceptorDef("conformance_response_only", "validation",
                                [{"events": [RESPONSE_ONLY_EVENT], "phase": "response"}], fixture_response_only,
                                f"Conformance fixture: hooks {RESPONSE_ONLY_EVENT} responses only."))
    registry.add(InterceptorDef("conformance_failing", "mutation", [{"events": [FIXTURE_EVENT], "phase": "request"}],
                                fixture_failing, "Conformance fixture: fails on every invocation."))
    registry.add(InterceptorDef("conformance_slow", "validation", [{"events": [FIXTURE_EVENT], "phase": "request"}],
                                fixture_slow, f"Conformance fixture (contract version 3): takes {SLOW_SECONDS:g} s, "
                                              "unless timeoutMs cuts it short."))
    # Contract version 6: a glob ("tools/." then anything), matched with fnmatch like every hook, so not tools/call.
    registry.add(InterceptorDef("conformance_dot_star", "validation", [{"events": ["tools/.*"], "phase": "request"}],
                                fixture_response_only, "Conformance fixture (contract version 6): hooks the glob "
                                                       "\"tools/.*\"; always valid."))


# -- interceptors a team would deploy ----------------------------------------------------------------------------------
PII_EVENTS = ["tools/call", "prompts/get", "resources/read", "sampling/createMessage", "llm/completion"]
PII_CONFIG = {"type": "object", "properties": {
    "aggressiveness": {"type": "string", "enum": ["standard", "strict"]},
    "defaultRegion": {"type": "string", "minLength": 2, "maxLength": 2}}, "additionalProperties": False}


def pii_redactor(payload, event, phase, config) -> dict:
    handles = HandleMap()
    counts: dict[str, int] = {}
    strict = config.get("aggressiveness") == "strict"
    region = config.get("defaultRegion", "US")
    with budgeted(_string_chars(payload)):  # one validation budget for the whole payload, not one per string
        redacted = map_strings(payload, lambda text: redact_text(text, handles, strict, region, counts))
    return {"modified": bool(counts), "payload": redacted, "info": {"redactions": sum(counts.values()),
                                                                     "counts": counts}}


def pii_detector(payload, event, phase, config) -> dict:
    strict = config.get("aggressiveness") == "strict"
    region = config.get("defaultRegion", "US")
    with budgeted(_string_chars(payload)):
        messages = [{"path": path, "message": f"contains {found.kind.lower()} data", "severity": "error"}
                    for path, text in strings(payload) for found in find_pii(text, strict, region)
                    if found.kind != "LITERAL"]
    if not messages:
        return {"valid": True}
    return {"valid": False, "severity": "error", "messages": messages}


def audit_logger(payload, event, phase, config) -> dict:
    handles = HandleMap()
    with budgeted(_string_chars(payload)):
        summary = map_strings(payload, lambda text: redact_text(text, handles))
    log.info("audit %s %s %s", event, phase, summary if config.get("includePayloads") else type(payload).__name__)
    return {"valid": True, "info": {"logged": True}}


USAGE_EVENTS = ["usage/record", "tools/*"]  # a custom event (namespace/operation) and a glob over the tools events


def usage_meter(payload, event, phase, config) -> dict:
    with USAGE_LOCK:
        USAGE[event] = USAGE.get(event, 0) + 1
        return {"valid": True, "info": {"event": event, "count": USAGE[event]}}


USAGE: dict[str, int] = {}
USAGE_LOCK = threading.Lock()


def register_real(registry: InterceptorRegistry) -> None:
    both = [{"events": list(PII_EVENTS), "phase": "request"}, {"events": list(PII_EVENTS), "phase": "response"}]
    registry.add(InterceptorDef("pii-redactor", "mutation", both, pii_redactor,
                                "Replaces e-mail addresses, phone numbers, SSNs, card numbers and IPv4 addresses in "
                                "every string of the payload with typed handles such as [EMAIL_1].",
                                fail_open=False, priority_hint={"request": -50000, "response": 50000},
                                config_schema=PII_CONFIG))
    registry.add(InterceptorDef("pii-detector", "validation", copy.deepcopy(both), pii_detector,
                                "Reports personal data in the payload as errors, one message per finding.",
                                config_schema=PII_CONFIG))
    registry.add(InterceptorDef("audit-logger", "validation",
                                [{"events": [WILDCARD], "phase": "request"}, {"events": [WILDCARD], "phase": "response"}],
                                audit_logger, "Logs every invocation (PII redacted) to the server's log; never blocks.",
                                mode="audit", fail_open=True,
                                config_schema={"type": "object", "properties": {"includePayloads": {"type": "boolean"}},
                                               "additionalProperties": False}))
    registry.add(InterceptorDef("usage-meter", "validation", [{"events": list(USAGE_EVENTS), "phase": "request"}],
                                usage_meter, "Counts requests per event: every tools event (\"tools/*\") and the custom "
                                             "event usage/record; never blocks.", mode="audit", fail_open=True))


def build(fixtures: bool = True, real: bool = True) -> InterceptorRegistry:
    registry = InterceptorRegistry()
    if fixtures:
        register_fixtures(registry)
    if real:
        register_real(registry)
    return registry
