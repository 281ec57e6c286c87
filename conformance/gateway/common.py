"""Gateway role, transparency: what the four profile modules share (fixture lookup, the wire check).

The suite plays the upstream (conformance/gateway/upstream.py, every fixture, correct) and the downstream
client. A gateway must pass each profile's fields and methods through unchanged, or refuse a method
cleanly (not advertised, answered -32601); it must never advertise and then drop, and never leave a
request hanging. Gateways may rename what they aggregate (Gatekit serves `conformance_echo` as
`fixture__conformance_echo`), so drivers and judges find fixtures with `conformance.core.judging.find_named`
and call them by the name the gateway lists. Recording is in `record.py`; one module per profile
holds that profile's driver and checks.
"""

from __future__ import annotations

from ..core.judging import find_named
from ..core.model import NotObserved, Violation, check
from ..server.common import judge_wire as common_judge_wire
from ..server.recording import Recording

# What the upstream fixture server sends, as the fixture contract fixes it. Stated here rather than
# imported from upstream.py: the checks judge against the contract, not against one implementation.
INTERCEPTORS_EXTENSION = "io.modelcontextprotocol/interceptors"
UPSTREAM_CAPABILITIES = {"tools": {}, "contextMiddleware": {}, "augmentation": {"listChanged": False},
                         "extensions": {INTERCEPTORS_EXTENSION: {
                             "supportedEvents": ["*", "resources/read", "tools/call"]}}}


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


def tools_of(rec: Recording) -> list[dict]:
    rec.cite("tools/list")
    if rec.tools is None:
        raise NotObserved(f"tools/list through the gateway returned no result ({rec.cite('tools/list').outcome_text()})")
    return rec.tools


def fixture_tool(rec: Recording, name: str) -> dict:
    tools = tools_of(rec)
    tool = find_named(tools, name)
    if tool is None:
        cut = "".join(f" ({problem})" for problem in rec.list_problems)  # a list read in part is the first cause
        raise Violation(f"the gateway does not list the upstream's tool {name} (under any prefix){cut}",
                        expected=f"a tool named {name} or ending in _{name}",
                        actual=[t.get("name") for t in tools if isinstance(t, dict)][:20])
    return tool


def claimer(rec: Recording) -> str:
    return "the suite's upstream fixture server offers this profile, and the gateway stands in front of it"


def judge_wire(rec: Recording) -> str | None:
    return common_judge_wire(rec, peer="gateway")


def wire_check(check_id: str) -> None:
    """Register `check_id`, a profile's `<profile>/gateway/wire-messages-valid`: the same judge for every profile."""
    assert check_id.split("/")[1:] == ["gateway", "wire-messages-valid"], check_id
    check(check_id,
          does="validates every message the gateway sent on this profile's connection",
          must="every message a gateway sends is valid JSON-RPC 2.0 and valid MCP")(judge_wire)
