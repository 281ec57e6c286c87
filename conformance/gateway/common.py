"""Gateway role, transparency: what its profile modules (all but the pipeline's) share (fixture lookup, the wire check).

The suite plays the upstream (conformance/gateway/upstream.py, every fixture, correct) and the downstream
client. A gateway must pass each profile's fields and methods through unchanged, or refuse a method
cleanly (not advertised, answered -32601); it must never advertise and then drop, and never leave a
request hanging. Gateways may rename what they aggregate (Gatekit serves `conformance_echo` as
`fixture__conformance_echo`), so drivers and judges find fixtures with `conformance.core.judging.find_named`
and call them by the name the gateway lists. Recording is in `record.py`; one module per profile
holds that profile's driver and checks.

Every comparison cites both sides: the requests the upstream received (`received`, from its log) and what
the client got. The upstream marks its answers with the connection's run mark (`run_mark`: in each listed
item's description, in the text its fixtures write, in `metadata`, `info` and `_meta`), so an answer the
gateway made up, or took from a copy of the upstream, or from another run, lacks this run's mark.
`optional_fields` compares what the upstream contract sends beyond the required fields.
"""

from __future__ import annotations

from ..client.judges import judge_wire as common_judge_wire
from ..client.recording import Recording
from ..core.judging import canonical_sorted, find_named, short
from ..core.model import NotObserved, Violation, check
from .recording import TransparencyRecording

# What the upstream fixture server sends, as the fixture contract fixes it. Stated here rather than
# imported from upstream.py: the checks judge against the contract, not against one implementation.
INTERCEPTORS_EXTENSION = "io.modelcontextprotocol/interceptors"
UPSTREAM_CAPABILITIES = {"tools": {}, "contextMiddleware": {}, "augmentation": {"listChanged": False},
                         "extensions": {INTERCEPTORS_EXTENSION: {
                             "supportedEvents": ["*", "resources/read", "tools/call"]}}}


# The gateway upstream contract (docs/fixture-contract.md#gateway-upstream-contract): where the upstream puts
# its run mark and what optional fields it sends. Stated here, not imported from upstream.py.
META_KEY = "dev.mcp-ext-conformance/upstream"
UNKNOWN_KEY = "mcpxUnknownField"


def run_mark(rec: TransparencyRecording) -> str:
    return rec.upstream_run or "(no run mark: the suite started no upstream)"


def extras(rec: TransparencyRecording) -> dict:
    """The `_meta` and unknown key the upstream adds to every listed item and every call result."""
    run = run_mark(rec)
    return {"_meta": {META_KEY: {"run": run}}, UNKNOWN_KEY: {"run": run}}


def received(rec: TransparencyRecording, method: str, name: str | None = None, want: dict | None = None) -> dict:
    """The last `method` request (for fixture `name`) the upstream received, cited; a Violation when none did.
    With `want`, the last whose params hold each of its keys with that value; a Violation when none does."""
    label = f"upstream received {method}" + (f" {name}" if name else "")
    labels = [lab for lab in rec.exchanges if lab == label or
              (lab.startswith(label + " (") and lab.endswith(")"))]
    found = [rec.cite(lab) for lab in labels]
    if not found:
        what = f"{method} for {name}" if name else method
        raise Violation(f"the upstream the suite started never received {what}: the gateway did not forward it",
                        expected=f"{what} in the upstream's log",
                        actual=[m.get("method") for m in upstream_received(rec) if isinstance(m, dict)][:20])
    if want:
        for exchange in reversed(found):
            params = exchange.request.get("params") if isinstance(exchange.request, dict) else None
            if isinstance(params, dict) and all(params.get(k) == v for k, v in want.items()):
                return exchange.request
        last = found[-1].request.get("params") if isinstance(found[-1].request, dict) else None
        raise Violation(f"{method}{' for ' + name if name else ''} reached the upstream with other params than the "
                        f"client sent", expected=want,
                        actual={k: last.get(k, "(missing)") for k in want} if isinstance(last, dict) else last)
    return found[-1].request


def require_mark(rec: TransparencyRecording, what: str, text) -> None:
    """`text` (a string the upstream writes) must carry this run's mark."""
    run = run_mark(rec)
    if not isinstance(text, str) or run not in text:
        raise Violation(f"{what} does not carry this run's upstream mark: the answer was not produced by the "
                        f"upstream the suite started", expected=f"a string containing {run}", actual=short(text))


def optional_fields(expected: dict, got, where: str) -> list[str]:
    """Each expected key (at any depth) that arrives missing or changed in `got`; keys of `expected` written as
    digits ("0") index a list. A nested object is compared key by key: a gateway may add keys of its own."""
    if isinstance(got, list):
        got = {str(i): item for i, item in enumerate(got)}
    if not isinstance(got, dict):
        return [f"{where}: {short(got)}, expected an object"]
    problems = []
    for key, want in expected.items():
        if key not in got:
            problems.append(f"{where}.{key} is missing")
        elif isinstance(want, dict) and isinstance(got[key], (dict, list)):
            problems += optional_fields(want, got[key], f"{where}.{key}")
        elif canonical_sorted(got[key]) != canonical_sorted(want):
            problems.append(f"{where}.{key} is {short(got[key])}, the upstream sent {short(want)}")
    return problems


def dropped(problems: list[str]) -> None:
    """The Violation for optional fields that did not arrive as sent: how many, the first named in the reason."""
    raise Violation(f"{len(problems)} optional field(s) the upstream sent arrive dropped or changed, first: {problems[0]}",
                    expected="every optional and unknown field as the upstream sent it", actual=problems)


def listed_name(items, name: str) -> str:
    """The name to call a fixture by through the gateway (its own name when the gateway lists nothing)."""
    item = find_named(items, name)
    return item["name"] if item else name


def upstream_received(rec: TransparencyRecording) -> list:
    return rec.upstream


def upstream_requests(rec: TransparencyRecording, method: str, name: str) -> list[dict]:
    """Requests of `method` for fixture `name` that reached the upstream, in order."""
    return [m for m in upstream_received(rec) if isinstance(m, dict) and m.get("method") == method
            and isinstance(m.get("params"), dict) and m["params"].get("name") == name]


def tools_of(rec: TransparencyRecording) -> list[dict]:
    rec.cite("tools/list")
    if rec.tools is None:
        raise NotObserved(f"tools/list through the gateway returned no result ({rec.cite('tools/list').outcome_text()})")
    return rec.tools


def fixture_tool(rec: TransparencyRecording, name: str) -> dict:
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


def judge_wire(rec: TransparencyRecording) -> str | None:
    return common_judge_wire(rec, peer="gateway")


def wire_check(check_id: str) -> None:
    """Register `check_id`, a profile's `<profile>/gateway/wire-messages-valid`: the same judge for every profile."""
    assert check_id.split("/")[1:] == ["gateway", "wire-messages-valid"], check_id
    check(check_id,
          does="validates every message the gateway sent on this profile's connection",
          must="every message a gateway sends is valid JSON-RPC 2.0 and valid MCP")(judge_wire)
