"""Server role, profile `interceptors` (conformance/server/interceptors.py): what the suite sends. The SEP's
method names, the fixture contract's interceptors and the payloads sent to them (docs/fixture-contract.md),
and the drivers the profile's plan runs: the fixtures invoked on their hooks, real interceptors probed on their
first hook, the malformed and unknown-name invocations, the methods sent unadvertised, and the oversized
payload sent last.
"""

from __future__ import annotations

from typing import Any

from ..client.recording import Recording
from ..client.session import Session
from ..targets.base import EncodedParams, filled_params

EXTENSION_ID = "io.modelcontextprotocol/interceptors"
LIST, INVOKE = "interceptors/list", "interceptor/invoke"
VALIDATOR, UPPERCASE, AUDIT = "conformance_validator", "conformance_uppercase", "conformance_audit"
RESPONSE_ONLY, FAILING = "conformance_response_only", "conformance_failing"
SLOW = "conformance_slow"  # fixture contract version 3
# Fixture contract version 6: hooks a pattern that is valid glob syntax and means something else as a regular
# expression. As a glob (or as a literal event name, for a server without custom patterns) it does not match
# tools/call; as a regular expression it does.
DOT_STAR, DOT_STAR_PATTERN, DOT_STAR_FILTER = "conformance_dot_star", "tools/.*", "list filtered by tools/call"
SLOW_SECONDS = 6.0  # how long conformance_slow runs when nothing cancels it
TIMEOUT_MS = 300  # the timeoutMs the suite invokes it with
TIMEOUT_MARGIN = 10  # the -32000 must come within TIMEOUT_MARGIN * TIMEOUT_MS (3 s), half of SLOW_SECONDS
AFTER_TIMEOUT = "after timeout"  # the request sent once the timeout error came: answered within the same limit
# Fixture contract version 5: tools the server guards with its own interceptors, as their invoker.
GUARDED_ECHO, GUARDED_FAILING = "conformance_guarded_echo", "conformance_guarded_failing"
GUARDED_CLEAN = "guarded by the server's own chain"  # lower case, no marker: comes back upper-cased
UNKNOWN = "conformance_no_such_interceptor"
EVENT, RESPONSE_ONLY_EVENT, OTHER_EVENT = "tools/call", "resources/read", "custom/conformanceProbe"
INVALID_MARKER = "conformance:invalid"
MAX_REAL = 10
# Labels of the well-formed invocations of listed fixtures (malformed and unknown-name probes excluded).
FIXTURE_INVOCATIONS = ("invoke validator ", "invoke uppercase ", "invoke audit ", "invoke response-only ",
                       "invoke failing")

# What the fixture contract fixes about each fixture's declaration.
FIXTURES: dict[str, dict[str, Any]] = {
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
# Fixture contract version 3: compared where a server lists them.
FIXTURES_V3 = {
    SLOW: {"type": "validation", "hooks": [{"events": [EVENT], "phase": "request"}]},
}
# Fixtures whose declaration leaves the policy defaults alone: mode active, failOpen false.
DEFAULT_POLICY = (VALIDATOR, UPPERCASE, RESPONSE_ONLY, FAILING, SLOW)


def tool_call(location: str) -> dict:
    return {"method": "tools/call", "params": {"name": "get_weather", "arguments": {"location": location}}}


CLEAN_PAYLOAD = tool_call("Paris")
# Several violations in different places (top level, an array, an array inside an object inside an array, a
# nested object): a validator reports one error message per violating string, so folding them shows.
INVALID_PAYLOAD = {"method": "tools/call", "params": {"name": "get_weather", "arguments": {
    "location": f"Paris {INVALID_MARKER}",
    "stops": ["Lyon", f"{INVALID_MARKER} Dijon", {"via": [f"Beaune {INVALID_MARKER}", "Macon"]}],
    "notes": {"driver": {"remark": f"ask for {INVALID_MARKER} at the desk"}, "count": 2}}}}
# Configs the validator fixture's configSchema refuses ({strict: boolean}, additionalProperties false).
BAD_CONFIGS = {"unknown key": {"strict": True, "verbose": True}, "wrong type": {"strict": "yes"}}
MIXED_PAYLOAD = {"method": "tools/call", "params": {"name": "Get_Weather", "arguments": {
    "location": "Paris, France", "units": ["Metric", "kelvin"], "days": 3, "exact": True, "note": None}}}
UPPER_PAYLOAD = {"result": {"summary": "ALREADY UPPER 42", "codes": ["A-1", "B-2"], "count": 2, "final": True}}
REAL_PAYLOAD = {"method": "tools/call", "params": {"name": "conformance_probe",
                                                   "arguments": {"text": "What is on the calendar today?"}}}
# The oversized payload: far more than any tool call an invoker would pass on (16 Mi characters of one argument).
# Which limit is right is the deployment's, so the check asks only that the server answer it, result or error,
# and go on serving, where a server without resource limits runs out of memory or time and dies.
OVERSIZED_CHARS = 16 * 1024 * 1024


def oversized_params(name: str) -> EncodedParams:
    """The invocation of `name` with the oversized payload, its JSON text built from the pieces (targets/base.py)."""
    marker = "conformance-oversized-location"
    params = {"name": name, "event": EVENT, "phase": "request", "payload": tool_call(marker)}
    return filled_params(params, marker, "Paris ", "x", OVERSIZED_CHARS)


def extension(rec: Recording):
    extensions = rec.capabilities.get("extensions")
    return extensions.get(EXTENSION_ID) if isinstance(extensions, dict) else None


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


async def send_fixtures(session: Session, rec: Recording) -> None:
    """The SEP's methods on the fixtures, the black-box probes of real interceptors, and the malformed and
    unknown-name invocations, each under its label (the checks cite them)."""
    rec.listing["interceptors"] = await session.list_all(LIST, "interceptors", LIST)
    rec.listing["interceptors filtered"] = await session.list_all(LIST, "interceptors", "list filtered",
                                                                  {"event": RESPONSE_ONLY_EVENT})
    if rec.listed("interceptors", DOT_STAR):
        rec.listing["interceptors filtered by tools/call"] = await session.list_all(
            LIST, "interceptors", DOT_STAR_FILTER, {"event": EVENT})
    if rec.listed("interceptors", VALIDATOR):
        await invoke(session, "invoke validator clean", VALIDATOR, EVENT, "request", CLEAN_PAYLOAD)
        await invoke(session, "invoke validator invalid", VALIDATOR, EVENT, "request", INVALID_PAYLOAD)
        await invoke(session, "invoke validator good config", VALIDATOR, EVENT, "request", CLEAN_PAYLOAD,
                     config={"strict": True})
        for what, config in BAD_CONFIGS.items():
            await invoke(session, f"invoke validator bad config {what}", VALIDATOR, EVENT, "request", CLEAN_PAYLOAD,
                         config=config)
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
    if rec.listed("interceptors", SLOW):
        await invoke(session, "invoke slow with timeout", SLOW, EVENT, "request", CLEAN_PAYLOAD, timeoutMs=TIMEOUT_MS)
        # At once: work the timeout did not stop, on a server that serves one request at a time, delays it.
        if rec.listed("interceptors", VALIDATOR):
            await invoke(session, AFTER_TIMEOUT, VALIDATOR, EVENT, "request", CLEAN_PAYLOAD)
        else:
            await session.send(AFTER_TIMEOUT, "ping", {})
    if rec.tool(GUARDED_ECHO):
        await session.call_tool("guarded echo invalid", GUARDED_ECHO, {"text": INVALID_MARKER})
        await session.call_tool("guarded echo clean", GUARDED_ECHO, {"text": GUARDED_CLEAN})
    if rec.tool(GUARDED_FAILING):
        await session.call_tool("guarded failing", GUARDED_FAILING, {"text": GUARDED_CLEAN})
    await invoke(session, "invoke unknown", UNKNOWN, EVENT, "request", CLEAN_PAYLOAD)
    target = VALIDATOR if rec.listed("interceptors", VALIDATOR) else next(
        (i.get("name") for i in rec.listing.get("interceptors") or () if isinstance(i, dict)), VALIDATOR)
    await session.send("invoke without phase", INVOKE, {"name": target, "event": EVENT, "payload": CLEAN_PAYLOAD})
    await session.send("invoke unknown phase", INVOKE, {"name": target, "event": EVENT, "phase": "middle",
                                                        "payload": CLEAN_PAYLOAD})
    await session.send("invoke without payload", INVOKE, {"name": target, "event": EVENT, "phase": "request"})
    for item in real_interceptors(rec)[:MAX_REAL]:
        hook = first_hook(item)
        assert hook is not None, "real_interceptors keeps only interceptors with a hook"
        event, phase = hook
        ok = await invoke(session, f"invoke real {item['name']}", item["name"], event, phase, REAL_PAYLOAD)
        if ok.has_result:  # its invalid configs are judged against an accepted invocation
            for what, config in invalid_configs(item.get("configSchema")).items():
                await invoke(session, f"config real {item['name']} {what}", item["name"], event, phase,
                             REAL_PAYLOAD, config=config)
    for item in config_required(rec)[:MAX_REAL]:
        hook = first_hook(item)
        assert hook is not None, "config_required keeps only interceptors with a hook"
        event, phase = hook
        await invoke(session, f"config real {item['name']} missing required", item["name"], event, phase,
                     REAL_PAYLOAD, config={})


async def oversized_driver(session: Session, rec: Recording) -> None:
    """Sent after every profile's driver (ConnectionPlan.last): a server that dies of it takes no other verdict along."""
    if rec.listed("interceptors", VALIDATOR):
        oversized = await session.send("invoke validator oversized", INVOKE, oversized_params(VALIDATOR))
        if oversized.has_result or oversized.has_error or oversized.http_status:
            await session.send("after oversized", "tools/list", {})


def config_required(rec: Recording) -> list[dict]:
    """Listed interceptors (not fixtures) whose configSchema requires a key: `{}` must be refused."""
    return [item for item in rec.listing.get("interceptors") or ()
            if isinstance(item, dict) and isinstance(item.get("name"), str)
            and not item["name"].startswith("conformance_") and isinstance(item.get("configSchema"), dict)
            and item["configSchema"].get("required") and first_hook(item) is not None]


WRONG_TYPE = {"string": 0, "number": "0", "integer": "0", "boolean": "yes", "object": [], "array": {}, "null": 0}


def invalid_configs(schema) -> dict[str, dict]:
    """Configs a configSchema refuses, generated from it: an unknown key (additionalProperties false) and a wrong
    type for its first typed property. Empty when the schema names neither."""
    out: dict[str, dict] = {}
    if not isinstance(schema, dict):
        return out
    properties: dict = schema["properties"] if isinstance(schema.get("properties"), dict) else {}
    if schema.get("additionalProperties") is False:
        out["unknown key"] = {"conformanceUnknownKey": True}
    for key, spec in properties.items():
        if not isinstance(spec, dict):
            continue
        kind = spec.get("type")
        if isinstance(kind, str) and kind in WRONG_TYPE:
            out["wrong type"] = {key: WRONG_TYPE[kind]}
            break
        if isinstance(spec.get("enum"), list) and spec["enum"] and all(isinstance(v, str) for v in spec["enum"]):
            out["wrong type"] = {key: 0}
            break
    return out


async def unclaimed_driver(session: Session, rec: Recording) -> None:
    await session.send(f"unadvertised {LIST}", LIST, {})
    await invoke(session, f"unadvertised {INVOKE}", VALIDATOR, EVENT, "request", CLEAN_PAYLOAD)
