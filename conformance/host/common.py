"""What every host-role profile shares: validating everything the host sent.

The scenario servers record every message the host sent them (requests,
notifications, and lines that are not JSON); the mock LLM records every model
request. `wire_problems` validates them: the JSON-RPC 2.0 envelope, base MCP
requests and notifications against the JSON Schemas of the installed SDK's `ClientRequest` and
`ClientNotification` (base_schemas.py), extension requests against `schemas/`, and the shape of
each Chat Completions request.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources

from ..core import base_schemas
from ..core.model import NotObserved, Violation, check
from ..core.wire import envelope_problems
from .harness import HostRun
from .recording import HostRecording


@dataclass(frozen=True)
class ScenarioPlan:
    """A host profile module's PLAN (core/profile.py): the scenarios (scenarios.yaml) the host is run through."""

    scenarios: tuple[str, ...]
    # Optional features of the profile a host claims with --claim: {feature: the scenarios run only when claimed}.
    features: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def scenarios_for(self, features) -> tuple[str, ...]:
        """The profile's scenarios, and those of each claimed feature."""
        return self.scenarios + tuple(sid for f, sids in self.features.items() if f in features for sid in sids)


@lru_cache(maxsize=1)
def scenarios() -> dict[str, dict]:
    """Every scenario of scenarios.yaml, by id."""
    import yaml

    text = (resources.files("conformance.host") / "scenarios.yaml").read_text(encoding="utf-8")
    return {s["id"]: s for s in yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))}


def turns_of(scenario: str, *tokens: str) -> tuple[int, ...]:
    """The turn of `scenario` in which the model's tool call carries each token (its argument `TOKEN{nonce}`): a
    scenario's turn table is its script in scenarios.yaml, and the judges find the turns they read by token."""
    by_token: dict[str, list[int]] = {}
    for turn, steps in scenarios()[scenario].get("script", {}).items():
        for step in steps:
            text = str((step.get("arguments") or {}).get("text", ""))
            if text.endswith("{nonce}"):
                by_token.setdefault(text.removesuffix("{nonce}"), []).append(int(turn))
    found = tuple(by_token.get(token, []) for token in tokens)
    if any(len(turns) != 1 for turns in found):
        raise LookupError(f"{scenario}: each of {tokens} must be sent in exactly one turn; the script has {by_token}")
    return tuple(turns[0] for turns in found)


EXTENSION_PARAMS = {"middleware/invoke": "middleware-invoke-params", "augmentation/augment": "augment-params",
                    "interceptor/invoke": "interceptor-invoke-params"}


def message_problems(msg) -> list[str]:
    """Problems of one message a host sent to an MCP server."""
    from ..core import schemas_loader

    problems = envelope_problems(msg)
    if problems or not isinstance(msg, dict) or "method" not in msg:
        return problems
    method = msg["method"]
    if method in EXTENSION_PARAMS:
        return [f"{method} params: {e}" for e in schemas_loader.errors(EXTENSION_PARAMS[method], msg.get("params"))]
    if method.startswith(("middleware/", "augmentation/", "interceptors/")):
        return []  # list methods: nothing beyond the envelope
    kind = "ClientRequest" if "id" in msg else "ClientNotification"
    found = base_schemas.problems(kind, {k: v for k, v in msg.items() if k in ("method", "params")})
    return [f"{method} is not a valid MCP {kind[6:].lower()}: {found[0]}"] if found else []


def wire_problems(run: HostRun) -> tuple[int, list[str]]:
    count, out = 0, []
    for event in run.events:
        count += 1
        where = f"turn {event['turn']}, to {event['server']}"
        if event.get("problem"):
            out.append(f"{where}: {event['problem']}: {event.get('raw')!r}")
            continue
        out += [f"{where}: {p}" for p in message_problems(event.get("incoming"))]
    for req in run.model:
        count += 1
        if req.problem:
            out.append(f"turn {req.turn}, to the model: {req.problem}")
    return count, out


def wire_check(check_id: str, scenarios: tuple[str, ...], optional: tuple[str, ...] = ()) -> None:
    """Register `check_id`, a profile's `<profile>/host/wire-messages-valid`, over the profile's scenarios
    (and those of `optional`, a claimed feature's, when they were run)."""
    assert check_id.split("/")[1:] == ["host", "wire-messages-valid"], check_id

    def judge(rec: HostRecording):
        total, problems = 0, []
        for sid in scenarios + tuple(s for s in optional if s in rec.runs):
            count, found = wire_problems(rec.cite(sid, turns_needed=0))
            total += count
            problems += [f"{sid}: {p}" for p in found]
        if not total:
            raise NotObserved("the host sent nothing to the scenario servers or the model")
        if problems:
            raise Violation(f"{len(problems)} invalid message(s); first: {problems[0]}",
                            expected="every message valid JSON-RPC 2.0 and MCP, extension params per schemas/, "
                                     "model requests valid Chat Completions requests", actual=problems[:10])
        return f"{total} messages sent by the host, all valid"

    check(check_id,
          does="validates every message the host sent in this profile's scenarios: to the scenario servers "
               "(JSON-RPC 2.0, MCP client types, extension params) and to the model",
          must="every message the host sends is valid JSON-RPC 2.0 and valid MCP, and every model request a "
               "valid Chat Completions request")(judge)
