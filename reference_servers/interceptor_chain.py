"""The invoker's side of SEP-2624: run one lifecycle event through a chain of interceptors.

`run_chain(entries, event, phase, payload)` applies the SEP's execution model
to interceptors served by `InterceptorRegistry` objects (one per server):

- policy: a chain entry's `overrides` take precedence over the interceptor's
  declared defaults (`mode`, `failOpen`, `priorityHint`); override `hooks` may
  only narrow the declared ones (`narrow_hooks` rejects widening);
- order: which phase is the sending side depends on the invoker. A client
  (`invoker="client"`, the default) sends the request (mutate, then validate)
  and receives the response (validate, then mutate); a server guarding its own
  tools (`invoker="server"`) receives the request and sends the response, so
  the orders swap. Mutations run sequentially by resolved priorityHint, ties
  by name, each on the previous output;
- blocking: only a validation with severity "error" (or valid: false without a
  severity) blocks; audit mode never blocks and an audit mutator's output is
  not applied; a failing interceptor blocks unless its resolved failOpen is
  true; a blocked chain applies no mutation (atomic). A denial carries what the
  SEP's error examples need: `validationErrors` ({interceptor, severity,
  message} per blocking message) or `lastValidPayload` (the payload the failed
  mutation was given); `chain_error` turns it into that JSON-RPC error (-32602
  "Interceptor validation failed" or -32603 "Interceptor mutation failed").

`wg_adapter` binds this to the working group's four-function fixture adapter
(createSession, list, invoke, chain) for the server role's fixture replay (`mcp-ext-conformance server --adapter
reference_servers.interceptor_chain:wg_adapter --wg-fixtures DIR`).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from .interceptors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    InterceptorDef,
    InterceptorError,
    InterceptorRegistry,
    narrow_hooks,
)

LEGACY_ACTIVE = "enforce"  # older WG tooling's name for "active"


@dataclass
class ChainEntry:
    interceptor: InterceptorDef
    server: InterceptorRegistry
    overrides: dict | None = None

    def policy(self, key: str, default):
        value = (self.overrides or {}).get(key)
        if value is None:
            value = {"mode": self.interceptor.mode, "failOpen": self.interceptor.fail_open,
                     "priorityHint": self.interceptor.priority_hint}[key]
        return default if value is None else value

    @property
    def mode(self) -> str:
        mode = self.policy("mode", "active")
        return "active" if mode == LEGACY_ACTIVE else mode

    def hooks(self) -> list[dict]:
        override = (self.overrides or {}).get("hooks")
        return self.interceptor.hooks if override is None else narrow_hooks(self.interceptor.hooks, override)

    def priority(self, phase: str) -> int:
        hint = self.policy("priorityHint", 0)
        return hint if isinstance(hint, int) else int(hint.get(phase, 0))


def _hooked(entry: ChainEntry, event: str, phase: str) -> bool:
    return any(h["phase"] == phase and (event in h["events"] or "*" in h["events"]) for h in entry.hooks())


def _blocking(result: dict) -> bool:
    return result.get("valid") is False and result.get("severity", "error") == "error"


SIDES = {("client", "request"): "sending", ("client", "response"): "receiving",
         ("server", "request"): "receiving", ("server", "response"): "sending"}


def run_chain(entries: list[ChainEntry], event: str, phase: str, payload: Any, context: dict | None = None,
              invoker: str = "client") -> dict:
    """{"decision": "allow" | "deny", "finalPayload", "results", "abortedAt"?} for one event and phase, run by a
    client or a server `invoker` (which side of the trust boundary the phase is decides the order)."""
    for entry in entries:
        entry.hooks()  # a widening override is a configuration error, raised before anything runs
    active = [e for e in entries if _hooked(e, event, phase)]
    mutators = sorted((e for e in active if e.interceptor.type == "mutation"),
                      key=lambda e: (e.priority(phase), e.interceptor.name))
    validators = [e for e in active if e.interceptor.type == "validation"]
    results: list[dict] = []
    original = copy.deepcopy(payload)
    current = copy.deepcopy(payload)

    def call(entry: ChainEntry, body: Any) -> dict | None:
        params = {"name": entry.interceptor.name, "event": event, "phase": phase, "payload": body}
        if context:
            params["context"] = context
        return entry.server.invoke(params)

    validation_errors: list[dict] = []

    def denied(entry: ChainEntry, reason: str, kind: str) -> dict:
        out = {"decision": "deny", "finalPayload": original, "results": results,
               "abortedAt": {"interceptor": entry.interceptor.name, "reason": reason, "type": kind}}
        if kind == "mutation":  # information for the invoker's caller; never sent on (mutations are atomic)
            out["lastValidPayload"] = copy.deepcopy(current)
        else:
            out["validationErrors"] = validation_errors
        return out

    def mutate() -> dict | None:
        nonlocal current
        for entry in mutators:
            try:
                result = call(entry, current)
            except InterceptorError as err:
                if entry.mode == "audit" or entry.policy("failOpen", False):
                    continue
                return denied(entry, err.message, "mutation")
            results.append({**result, **({"mode": "audit"} if entry.mode == "audit" else {})})
            if entry.mode != "audit":  # an audit mutator's output is shadowed, never applied
                current = result.get("payload")
        return None

    def validate() -> dict | None:
        blocked = None
        for entry in validators:  # all validations complete before the verdict
            try:
                result = call(entry, current)
            except InterceptorError as err:
                if entry.mode == "audit" or entry.policy("failOpen", False):
                    continue
                validation_errors.append({"interceptor": entry.interceptor.name, "severity": "error",
                                          "message": err.message})
                blocked = blocked or denied(entry, err.message, "validation")
                continue
            results.append({**result, **({"mode": "audit"} if entry.mode == "audit" else {})})
            if _blocking(result) and entry.mode != "audit":
                messages = [m for m in result.get("messages") or () if isinstance(m, dict)
                            and m.get("severity", "error") == "error"]
                validation_errors.extend({"interceptor": entry.interceptor.name, "severity": "error",
                                          "message": str(m.get("message", "validation failed"))}
                                         for m in messages or [{}])
                blocked = blocked or denied(entry, "validation failed", "validation")
        return blocked

    steps = (mutate, validate) if SIDES[(invoker, phase)] == "sending" else (validate, mutate)
    for step in steps:
        outcome = step()
        if outcome is not None:
            return outcome
    return {"decision": "allow", "finalPayload": current, "results": results}


def chain_error(outcome: dict) -> InterceptorError:
    """The JSON-RPC error a denied chain answers its caller with (SEP-2624 §Chain Execution > Error Handling)."""
    aborted = outcome["abortedAt"]
    if aborted["type"] == "mutation":
        return InterceptorError(INTERNAL_ERROR, "Interceptor mutation failed",
                                {"failedInterceptor": aborted["interceptor"],
                                 "lastValidPayload": outcome.get("lastValidPayload")})
    return InterceptorError(INVALID_PARAMS, "Interceptor validation failed",
                            {"validationErrors": outcome.get("validationErrors") or []})


# -- the WG fixture adapter (conformance/server/wg_fixtures.py) ---------------------------------------------------
def _note(payload) -> Any:
    arguments = payload.get("arguments") if isinstance(payload, dict) else None
    return arguments.get("note") if isinstance(arguments, dict) else None


def _invalid(message: str) -> dict:
    return {"valid": False, "severity": "error", "messages": [{"message": message, "severity": "error"}]}


def _allow_all(payload, event, phase, config):
    return {"valid": True}


def _deny_all(payload, event, phase, config):
    return _invalid("denied by policy")


def _require_note(payload, event, phase, config):
    note = _note(payload)
    return {"valid": True} if isinstance(note, str) and note else _invalid("note is required")


def _require_uppercase_note(payload, event, phase, config):
    note = _note(payload)
    return {"valid": True} if isinstance(note, str) and note == note.upper() else _invalid("note must be uppercase")


def _uppercase_note(payload, event, phase, config):
    note = _note(payload)
    if not isinstance(note, str) or note == note.upper():
        return {"modified": False, "payload": payload}
    changed = copy.deepcopy(payload)
    changed["arguments"]["note"] = note.upper()
    return {"modified": True, "payload": changed}


def _crash(payload, event, phase, config):
    raise RuntimeError("crash behaviour")


BEHAVIOURS = {"allow-all": _allow_all, "deny-all": _deny_all, "require-note": _require_note,
              "require-uppercase-note": _require_uppercase_note, "uppercase-note": _uppercase_note, "crash": _crash}


class UnsupportedBehaviour(NotImplementedError):
    """A fixture needs a behaviour this implementation does not offer (the replay reports it as such)."""


class WgSession:
    def __init__(self, interceptors: list[dict]):
        self.server = InterceptorRegistry()
        self.entries: list[ChainEntry] = []
        for spec in interceptors:
            fn = BEHAVIOURS.get(spec["behavior"])
            if fn is None:
                raise UnsupportedBehaviour(f"{spec['behavior']!r} (not implemented by the reference)")
            phases = ["request", "response"] if spec["phases"] == "both" else [spec["phases"]]
            mode = spec.get("mode")
            item = InterceptorDef(spec["name"], spec["type"], [{"events": list(spec["events"]), "phase": p} for p in phases],
                                  fn, mode=None if mode in (None, "active", LEGACY_ACTIVE) else mode,
                                  fail_open=spec.get("failOpen"))
            self.server.add(item)
            self.entries.append(ChainEntry(item, self.server))

    def list(self, event: str | None) -> dict:
        return self.server.list({} if event is None else {"event": event})

    def invoke(self, params: dict) -> dict:
        try:
            return {"ok": True, "result": self.server.invoke(params)}
        except InterceptorError as err:
            return {"ok": False, "errorCode": err.code}

    def chain(self, event: str, phase: str, payload: Any, session_id: str | None) -> dict:
        out = run_chain(self.entries, event, phase, payload, {"sessionId": session_id} if session_id else None)
        return {"decision": out["decision"], "finalPayload": out["finalPayload"]}


def wg_adapter(interceptors: list[dict]) -> WgSession:
    """createSession of the WG adapter contract (`server --adapter reference_servers.interceptor_chain:wg_adapter`)."""
    return WgSession(interceptors)
