"""A host-role recording: the runs of one profile's scenarios, and what judges use to read them."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core.judging import match_name
from ..core.model import NotObserved
from ..core.recording import Citing
from .harness import HostRun
from .mock_llm import message_text, offered_names


class RunReport:
    """Adapter so a scenario run shows in reports like a server exchange does."""

    def __init__(self, run: HostRun):
        self.run = run

    def to_report(self) -> dict:
        """The Exchange shape of results.json: what the suite gave the host, and what it observed."""
        run = self.run.to_report()
        return {"label": f"scenario {self.run.scenario}",
                "request": {"command": run.pop("command"), "config": self.run.config,
                            "turns": [t.user for t in self.run.turns]},
                "response": run, "failure": self.run.fatal, "elapsedSeconds": round(self.run.duration, 6)}


@dataclass
class HostRecording(Citing):
    """A host profile's recording (conformance.core.recording.Recording): its scenario runs by scenario id."""

    profile: str
    target: dict
    claimed: bool = True
    claimed_by: str | None = "option"
    claim_reason: str = ""
    runs: dict[str, HostRun] = field(default_factory=dict)
    features: frozenset[str] = frozenset()  # the profile's optional features claimed with --claim
    unavailable: str | None = None
    init_failed: bool = False

    @property
    def fatal(self) -> str | None:
        return next((r.fatal for r in self.runs.values() if r.fatal), None)

    @property
    def by_option(self) -> bool:
        return self.claimed_by == "option"

    @property
    def exchanges(self) -> dict[str, RunReport]:
        return {sid: RunReport(run) for sid, run in self.runs.items()}

    def has_fixture(self, need: str) -> bool:
        return True

    def cite(self, scenario: str, *, turns_needed: int | None = None) -> HostRun:
        """The scenario's run; NotObserved when it broke before the turns the judge needs were answered."""
        self._note(scenario)
        run = self.runs.get(scenario)
        if run is None:
            raise NotObserved(f"scenario {scenario} was not run")
        needed = len(run.turns) if turns_needed is None else turns_needed
        if run.fatal and run.answered() < needed:
            raise NotObserved(f"scenario {scenario}: {run.fatal}")
        return run


# -- small readers over a run ------------------------------------------------------------------
def request_text(body: dict) -> str:
    """Everything a model request shows the model, as one string: messages and tool specs."""
    import json

    parts = []
    for message in body.get("messages") or ():
        if isinstance(message, dict):
            parts.append(message_text(message.get("content")))
            for call in message.get("tool_calls") or ():
                parts.append(json.dumps(call, ensure_ascii=False))
    parts.append(json.dumps(body.get("tools") or [], ensure_ascii=False))
    return "\n".join(parts)


def tool_names(body: dict) -> list[str]:
    return offered_names(body)


def offer_problems(body: dict, kept, left_out) -> list[str]:
    """What a model request's tools show against a filter: each of `kept` not offered, each of `left_out`
    offered (a name may carry a server prefix)."""
    offered = tool_names(body)
    return [f"{n} not offered" for n in kept if not match_name(offered, n)] + \
        [f"{n} offered" for n in left_out if match_name(offered, n)]


def last_user_message(body: dict) -> str:
    for message in reversed(body.get("messages") or ()):
        if isinstance(message, dict) and message.get("role") == "user":
            return message_text(message.get("content"))
    return ""


def result_text(event: dict) -> str:
    result = (event.get("response") or {}).get("result") or {}
    blocks = result.get("content") if isinstance(result, dict) else None
    return "\n".join(b.get("text", "") for b in blocks or () if isinstance(b, dict) and b.get("type") == "text")
