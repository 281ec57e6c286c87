"""The working group's four-function adapter contract, wrapping a running mcp-hangar's interceptor routes.

    MCPX_HANGAR_URL=http://127.0.0.1:PORT mcp-ext-conformance server \
        --adapter ecosystem.gateways.hangar.wg_adapter:factory --wg-fixtures tests/data/interceptor-fixtures

`factory(interceptors)` is the contract's createSession: the fixture names interceptors by a behaviour
(`allow-all`, `deny-all`, `uppercase-note`, `crash`, ...) with events, phases and a policy. mcp-hangar 2.34
cannot be given interceptors: it serves two fixed ones, `io.mcp-hangar/validator` (validation, always
`valid: true`, request phase of tools/call and tools/list) and `io.mcp-hangar/mutator` (mutation, returns
the payload unchanged, request phase of tools/call), both mode active. So a fixture is hosted only when
every interceptor it declares is one of those under another name: the same type, a behaviour the
built-in has (`allow-all` for the validator; no working-group behaviour is the mutator's pass-through),
hooks within the built-in's and no policy it does not declare. Any other fixture raises
NotImplementedError, which the replay reports as a behaviour the adapter lacks (a skip, not a failure).

A hosted session maps names both ways: `list` and `invoke` go to hangar's routes (with the negotiation
header) and the built-in's name in a result is given back as the fixture's. `chain` has no wire method in
hangar (no chain execution is served), so it raises NotImplementedError too.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request

HEADER = {"MCP-Interceptor-Ext": "io.modelcontextprotocol/interceptors"}
# What each built-in is: type, the working-group behaviour it has (None: none has its behaviour), its hooks.
BUILTINS = {
    "io.mcp-hangar/validator": ("validation", "allow-all", {("tools/call", "request"), ("tools/list", "request")}),
    "io.mcp-hangar/mutator": ("mutation", None, {("tools/call", "request")}),
}


def hooks_of(spec: dict) -> set[tuple[str, str]]:
    phases = ["request", "response"] if spec.get("phases") == "both" else [spec.get("phases")]
    return {(event, phase) for event in spec.get("events") or () for phase in phases}


def builtin_for(spec: dict) -> str:
    """The built-in that is this fixture interceptor under another name; NotImplementedError when none is."""
    for name, (kind, behaviour, hooks) in BUILTINS.items():
        if (spec.get("type") == kind and spec.get("behavior") == behaviour and hooks_of(spec) <= hooks
                and spec.get("mode") in (None, "active") and not spec.get("failOpen")):
            return name
    raise NotImplementedError(f"{spec.get('behavior')!r} {spec.get('type')} on {sorted(hooks_of(spec))} "
                              f"(mcp-hangar serves two fixed interceptors and cannot be given others)")


class HangarSession:
    def __init__(self, interceptors: list[dict], base: str):
        self.base = base.rstrip("/")
        self.names = {spec["name"]: builtin_for(spec) for spec in interceptors}
        if len(set(self.names.values())) != len(self.names):
            raise NotImplementedError("two fixture interceptors would be the same built-in")
        self.back = {builtin: name for name, builtin in self.names.items()}
        self.calls = 0

    def _http(self, method: str, path: str, body: dict | None = None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method,
                                         headers={**HEADER, **({"Content-Type": "application/json"} if data else {})})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as err:  # its JSON-RPC errors come with 4xx statuses
            return json.loads(err.read())

    def list(self, event: str | None) -> dict:
        query = "?" + urllib.parse.urlencode({"event": event}) if event else ""
        listed = self._http("GET", "/interceptors/list" + query).get("interceptors") or []
        return {"interceptors": [{**item, "name": self.back[item["name"]]} for item in listed
                                 if item.get("name") in self.back]}

    def invoke(self, params: dict) -> dict:
        self.calls += 1
        sent = {**params, "name": self.names.get(params.get("name"), params.get("name"))}
        answer = self._http("POST", "/interceptor/invoke",
                            {"jsonrpc": "2.0", "id": self.calls, "method": "interceptor/invoke", "params": sent})
        if "result" in answer:
            result = answer["result"]
            if isinstance(result, dict) and result.get("interceptor") in self.back:
                result = {**result, "interceptor": self.back[result["interceptor"]]}
            return {"ok": True, "result": result}
        return {"ok": False, "errorCode": (answer.get("error") or {}).get("code")}

    def chain(self, event, phase, payload, session_id):
        raise NotImplementedError("mcp-hangar serves no chain execution")


def factory(interceptors: list[dict]) -> HangarSession:
    base = os.environ.get("MCPX_HANGAR_URL")
    if not base:
        raise RuntimeError("set MCPX_HANGAR_URL to a running mcp-hangar's HTTP base (mcp-hangar serve --http)")
    return HangarSession(interceptors, base)
