"""What the gateway role keeps. Transparency: a `TransparencyRecording` per profile, the client connection's
recording plus what the suite's upstream received (record.py makes it; the profile modules judge it).
Pipeline semantics: one `FixtureRun` per fixture in a `PipelineRecording` (replay.py makes it;
sequential_pipeline.py judges it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from ..client.recording import Recording
from ..core.recording import Citing


@dataclass
class TransparencyRecording(Recording):
    """One profile recorded through the gateway: what the client sent and got (the client's recording), and
    what the upstream behind the gateway received, from its log."""

    upstream: list = field(default_factory=list)  # every message the upstream received, in order
    upstream_run: str | None = None  # the run mark this connection's upstream put in its answers
    upstream_mode: str = "stdio"  # how the suite served the upstream: "stdio" or "http"


@dataclass
class FixtureRun:
    """One fixture, replayed: what went in, what was expected, and what the adapter did."""

    fixture: dict
    actual: dict | None = None  # normalised outcome, or {"configurationError": message}
    error: str | None = None  # an adapter fault or a timeout: the run produced no outcome
    repeat: dict | None = None  # the second pass, for `predictable`
    repeat_error: str | None = None

    @property
    def id(self) -> str:
        return self.fixture["id"]

    def observed(self) -> dict:
        return {"error": self.error} if self.error else dict(self.actual or {})

    def to_report(self) -> dict:
        fx = self.fixture
        # The Exchange shape of results.json: what went into the adapter, and what came out.
        return {"label": f"fixture {fx['id']}",
                "request": {"file": f"conformance/gateway/fixtures/pipeline/{fx['id']}.json",
                            "description": fx["description"], "plugins": fx["plugins"],
                            "request": fx["request"], "response": fx["response"], "expected": fx["expected"]},
                "response": self.observed(), "failure": self.error, "elapsedSeconds": None}


@dataclass
class PipelineRecording(Citing):
    """The pipeline half of the gateway role (conformance.core.recording.Recording): fixture runs by fixture id."""

    PROFILE: ClassVar[str] = "sequential-pipeline"
    profile: str = PROFILE
    adapter: str = ""
    unavailable: str | None = None  # the adapter could not be imported or is not callable
    init_failed: bool = False
    fatal: str | None = None
    claimed: bool = True  # running the pipeline suite at all claims the profile
    claimed_by: str | None = "option"
    claim_reason: str = "pipeline semantics are driven through the adapter"
    by_option: bool = True
    exchanges: dict[str, FixtureRun] = field(default_factory=dict)

    def has_fixture(self, need: str) -> bool:
        return True  # the fixtures are the suite's own data

    def runs_for(self, check_id: str) -> list[FixtureRun]:
        """Every fixture run of this check, each cited."""
        return [self.cite(fid) for fid, r in self.exchanges.items() if r.fixture["check"] == check_id]
