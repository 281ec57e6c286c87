"""Interceptors (SEP-2624) on the host's side: discover them, then run each tool call through their chain.

The configuration's `interceptors` list names the servers whose interceptors the
host uses: `[{"server": "guard"}]` takes every interceptor that server lists,
`{"server": "guard", "name": "pii-redactor"}` one of them. At start-up the host
calls `interceptors/list` on each (the server must advertise
`capabilities.extensions["io.modelcontextprotocol/interceptors"]`); a server
that cannot be listed leaves the chain broken, and a broken chain blocks every
tool call (fail closed: what should have guarded the call is unknown).

`run_chain` applies the SEP's execution model to one event and phase:
- the request phase is the sending side: mutate, then validate; the response
  phase the receiving side: validate, then mutate;
- mutations run one after another by priorityHint ascending (a number, or
  `{request, response}`; 0 when absent), ties by name, each given the previous
  one's payload; an audit-mode mutator is invoked but its payload never applied;
- validations run concurrently and all complete before the verdict; only
  `valid: false` with severity error (or none) blocks, and never in audit mode;
- an interceptor that fails (JSON-RPC error, timeout, broken result) blocks
  unless its failOpen is true or it is in audit mode; a failed mutation halts
  the chain at once; a blocked chain applies nothing. A validation result is
  broken unless `valid` is a boolean, `severity` (when present) is one of
  info, warn, error and `messages` (when present) is a list: read leniently,
  `{}` or `"valid": "false"` would let the message through.
Policy (the SEP's Capability vs Policy): a configuration entry that names one
interceptor may carry `overrides` (ChainEntry.overrides: `priorityHint`, `mode`,
`failOpen`, `timeoutMs`, `hooks`); each field given takes precedence over the declared
default. `timeoutMs` bounds each invocation of that interceptor: it goes into the
`interceptor/invoke` params (so the server can stop its work and answer -32000)
and the host stops waiting when it is exceeded; a timeout is a failure like any
other, routed by the resolved failOpen and mode (without it, the host's own
request timeout bounds the invocation). Override hooks may only narrow the declared ones
(reference_servers.interceptors.narrow_hooks); an entry whose overrides widen
them, or are malformed, is refused: that interceptor is not used at all and the
refusal is logged (HARNESS.md §1).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Awaitable, Callable, Mapping, Sequence

from .logic import ServerError

log = logging.getLogger("reference_host")

EXTENSION = "io.modelcontextprotocol/interceptors"
LIST_METHOD, INVOKE_METHOD = "interceptors/list", "interceptor/invoke"


class Blocked(Exception):
    """The chain stopped the message: a validator rejected it or an interceptor failed closed."""


class Entry:
    """One interceptor as listed, with the server that hosts it."""

    def __init__(self, server: str, definition: Mapping[str, Any], overrides: Mapping[str, Any] | None = None):
        """ValueError when `overrides` cannot be applied (a widening, a malformed field): the entry is refused."""
        self.server = server
        self.name = str(definition.get("name"))
        self.type = definition.get("type")
        self.hooks = definition.get("hooks") if isinstance(definition.get("hooks"), list) else []
        policy = {**definition, **resolved_overrides(self.hooks, overrides or {})}
        self.hooks = policy["hooks"] if isinstance(policy.get("hooks"), list) else []
        self.audit = policy.get("mode") == "audit"
        self.fail_open = policy.get("failOpen") is True
        self.priority_hint = policy.get("priorityHint")
        self.timeout_ms = (overrides or {}).get("timeoutMs")  # invoker policy only: a definition declares none

    def hooked(self, event: str, phase: str) -> bool:
        return any(isinstance(h, dict) and h.get("phase") == phase and isinstance(h.get("events"), list)
                   and (event in h["events"] or "*" in h["events"]) for h in self.hooks)

    def priority(self, phase: str) -> float:
        hint = self.priority_hint
        if isinstance(hint, dict):
            hint = hint.get(phase)
        return hint if isinstance(hint, (int, float)) and not isinstance(hint, bool) else 0

    def tolerated(self) -> bool:
        """Whether a failure of this interceptor lets the message go on."""
        return self.audit or self.fail_open


OVERRIDE_FIELDS = ("failOpen", "priorityHint", "mode", "timeoutMs", "hooks")


def resolved_overrides(declared: list, overrides: Mapping[str, Any]) -> dict:
    """The overrides that take precedence over the declared policy; ValueError names what cannot be applied.
    (`timeoutMs` is checked here and applied per invocation: Entry.timeout_ms.)"""
    if not isinstance(overrides, Mapping):
        raise ValueError("overrides is not an object")
    unknown = sorted(set(overrides) - set(OVERRIDE_FIELDS))
    if unknown:
        raise ValueError(f"unknown override field(s): {', '.join(unknown)}")
    out = {k: v for k, v in overrides.items() if k in ("failOpen", "priorityHint", "mode")}
    timeout_ms = overrides.get("timeoutMs")
    if "timeoutMs" in overrides and (isinstance(timeout_ms, bool) or not isinstance(timeout_ms, (int, float))
                                     or not timeout_ms > 0):
        raise ValueError(f"overrides.timeoutMs is {timeout_ms!r}, not a positive number of milliseconds")
    if "failOpen" in out and not isinstance(out["failOpen"], bool):
        raise ValueError("overrides.failOpen is not true or false")
    if "mode" in out and out["mode"] not in ("active", "audit"):
        raise ValueError(f"overrides.mode is {out['mode']!r}, not active or audit")
    hint = out.get("priorityHint")
    numbers = [hint] if not isinstance(hint, dict) else [hint[p] for p in ("request", "response") if p in hint]
    if "priorityHint" in out and (any(isinstance(n, bool) or not isinstance(n, (int, float)) for n in numbers)
                                  or (isinstance(hint, dict) and set(hint) - {"request", "response"})):
        raise ValueError("overrides.priorityHint is neither a number nor {request?, response?} numbers")
    if "hooks" in overrides:
        hooks = overrides["hooks"]
        if not isinstance(hooks, list) or not all(
                isinstance(h, dict) and h.get("phase") in ("request", "response") and isinstance(h.get("events"), list)
                and all(isinstance(e, str) for e in h["events"]) for h in hooks):
            raise ValueError("overrides.hooks is not a list of {events: [...], phase: request|response}")
        well_formed = [h for h in declared if isinstance(h, dict) and isinstance(h.get("events"), list)
                       and isinstance(h.get("phase"), str)]
        # Imported here: the reference servers' interceptor module brings jsonschema and the PII middleware,
        # a quarter of a second of start-up that a host configured without hook overrides never needs.
        from reference_servers.interceptors import narrow_hooks

        out["hooks"] = narrow_hooks(well_formed, hooks)  # ValueError names the widening
    return out


def chosen(listed: Sequence[Any], wanted: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The listed definitions one configuration entry selects (all, or the one it names)."""
    name = wanted.get("name")
    return [d for d in listed if isinstance(d, dict) and isinstance(d.get("name"), str)
            and d.get("type") in ("mutation", "validation") and (name is None or d["name"] == name)]


SEVERITIES = ("info", "warn", "error")


def _malformed_validation(result: Mapping[str, Any]) -> str | None:
    """What makes a validation result unusable, or None. Such a result is a failure of its interceptor (so it
    blocks unless failOpen or audit): read leniently, `{}`, `"valid": "false"` or `"severity": "critical"`
    would each let the message through."""
    if not isinstance(result.get("valid"), bool):
        return f"the validation result's valid is {result.get('valid')!r}, not true or false"
    if "severity" in result and result["severity"] not in SEVERITIES:
        return f"the validation result's severity is {result['severity']!r}, not one of {', '.join(SEVERITIES)}"
    if "messages" in result and not isinstance(result["messages"], list):
        return "the validation result's messages is not a list"
    return None


def _blocking(result: Mapping[str, Any]) -> bool:
    return result.get("valid") is False and result.get("severity", "error") == "error"


Invoke = Callable[[Entry, dict], Awaitable[Any]]


async def run_chain(entries: Sequence[Entry], event: str, phase: str, payload: Any, invoke: Invoke) -> Any:
    """The payload after the chain; Blocked when the message must not go on. `invoke(entry, params)` sends
    interceptor/invoke to the entry's server and raises ServerError when it fails."""
    active = [e for e in entries if e.hooked(event, phase)]
    mutators = sorted((e for e in active if e.type == "mutation"), key=lambda e: (e.priority(phase), e.name))
    validators = [e for e in active if e.type == "validation"]

    async def call(entry: Entry, body: Any) -> dict:
        result = await invoke(entry, {"name": entry.name, "event": event, "phase": phase, "payload": body})
        if not isinstance(result, dict):
            raise ServerError(f"{entry.name}: the result is not an object")
        problem = _malformed_validation(result) if entry.type == "validation" else None
        if problem:
            raise ServerError(f"{entry.name}: {problem}")
        return result

    async def mutate(current: Any) -> Any:
        for entry in mutators:
            try:
                result = await call(entry, current)
                if not entry.audit and "payload" not in result:
                    raise ServerError(f"{entry.name}: the mutation result has no payload")
            except ServerError as exc:
                if entry.tolerated():
                    log.warning("interceptor %s failed (%s); going on", entry.name, exc)
                    continue
                raise Blocked(f"mutation {entry.name} failed: {exc}") from None
            if entry.audit:
                log.info("audit mutation %s (not applied): modified=%s", entry.name, result.get("modified"))
            else:
                current = result["payload"]
        return current

    async def validate(current: Any) -> None:
        outcomes = await asyncio.gather(*(call(e, current) for e in validators), return_exceptions=True)
        reasons = []
        for entry, outcome in zip(validators, outcomes):
            if isinstance(outcome, BaseException):
                if not isinstance(outcome, ServerError):
                    raise outcome
                if entry.tolerated():
                    log.warning("interceptor %s failed (%s); going on", entry.name, outcome)
                else:
                    reasons.append(f"validation {entry.name} failed: {outcome}")
            elif _blocking(outcome):
                if entry.audit:
                    log.info("audit validation %s would reject: %s", entry.name, outcome.get("messages"))
                else:
                    reasons.append(f"{entry.name} rejected it: {_messages(outcome)}")
            elif outcome.get("valid") is False:
                log.warning("validation %s: %s (%s)", entry.name, _messages(outcome), outcome.get("severity"))
        if reasons:
            raise Blocked("; ".join(reasons))

    if phase == "request":
        payload = await mutate(payload)
        await validate(payload)
    else:
        await validate(payload)
        payload = await mutate(payload)
    return payload


def _messages(result: Mapping[str, Any]) -> str:
    messages = result.get("messages")
    texts = [m.get("message") for m in messages if isinstance(m, dict)] if isinstance(messages, list) else []
    return "; ".join(str(t) for t in texts if t) or "invalid"
