"""The check model: ids, levels, outcomes, and how a judgement becomes a verdict.

Rules (docs/check-model.md):
- A check id is `profile/role/slug`, stable forever, and written out in full where the check is
  registered (factories and tables take full ids), so a search for a failing id finds its judge.
- Each check carries two sentences: what the suite does (`does`) and what the
  implementation must do (`must`). Failures print both, then expected vs actual.
- The catalog (conformance/requirements/*.yaml) is the one place that says
  which rows a check covers; a check's level is the strongest level among them.
  MUST violated -> fail, SHOULD violated -> warn, MAY/BEHAVIOR -> info.
- A judge is a small pure function over a recording. It returns normally (pass,
  optionally with a note), raises `Violation` (naming a level when only the
  check's weaker rows are violated), `NotObserved` (a claimed behaviour that never
  happened: always a failure at the check's level), or `NotApplicable` (skip).
- A check judges one kind of target (`target`): "live", the implementation itself as the role's front end
  reaches it (a connection, a host command, a gateway command or pipeline adapter), or "wg-fixtures", the
  interceptors working group's fixtures replayed through an adapter (server role). A run judges the checks
  of its target's kind only; a recording says which kind it holds (`target_kind`, "live" when it says none).
"""

from __future__ import annotations

import datetime as dt
import re
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import FrameType
from typing import Any, Callable

PROFILES = ("preprocessor-tools", "execution-requirements", "context-middleware", "augmentation",
            "sequential-pipeline", "interceptors")
LEVELS = ("MUST", "SHOULD", "MAY", "BEHAVIOR")
OUTCOMES = ("pass", "fail", "warn", "info", "skip", "xfail", "stale")
TARGET_KINDS = ("live", "wg-fixtures")

_LEVEL_OUTCOME = {"MUST": "fail", "SHOULD": "warn", "MAY": "info", "BEHAVIOR": "info"}


def strongest(levels) -> str:
    levels = list(levels)
    for level in LEVELS:
        if level in levels:
            return level
    return "BEHAVIOR"


class Violation(Exception):
    """The implementation did not do what the check requires."""

    def __init__(self, reason: str, *, expected: Any = None, actual: Any = None, level: str | None = None):
        super().__init__(reason)
        self.reason = reason
        self.expected = expected
        self.actual = actual
        self.level = level  # when only the check's weaker rows are violated (e.g. "SHOULD")
        self.follows: tuple[str, ...] = ()  # checks whose failure implies this one (set by `following`)


@contextmanager
def following(*check_ids: str):
    """A Violation raised inside follows from these checks' failure: when one of them failed too, the reason
    names it as the first cause ("follows from <id>"). Wrap only what their failure implies (the evidence both
    read is missing), so that a failure of this check's own is never blamed on another."""
    try:
        yield
    except Violation as exc:
        exc.follows = exc.follows or check_ids
        raise


class NotObserved(Violation):
    """A claimed behaviour the suite could not observe: a failure, never a pass."""

    def __init__(self, reason: str, **kw):
        super().__init__(once(f"{NOT_OBSERVED}{reason}"), **kw)


NOT_OBSERVED = "not observed: "
# A prefix said twice in a row ("not observed: not observed: ...", "tools/list: tools/list: ..."): a reason built
# from another reason that already carried it.
_DOUBLED = re.compile(r"(?<![\w/-])([\w/ -]{1,60}?: )\1+")


def once(reason: str) -> str:
    """`reason` with every prefix said twice in a row said once."""
    return _DOUBLED.sub(r"\1", reason)


class NotApplicable(Exception):
    """The check does not apply to this target (skip, with the reason)."""


class _Identified:
    """What a check id `profile/role/slug` names."""

    id: str

    @property
    def profile(self) -> str:
        return self.id.split("/")[0]

    @property
    def role(self) -> str:
        return self.id.split("/")[1]

    @property
    def slug(self) -> str:
        return self.id.split("/")[2]


@dataclass(frozen=True)
class Check(_Identified):
    id: str
    does: str  # what the suite does
    must: str  # what the implementation must do
    judge: Callable[[Any], str | None]
    needs: tuple[str, ...] = ()  # fixtures, e.g. "tool:conformance_echo", "middleware:conformance_identity"
    when: str = "claimed"  # "claimed" | "unclaimed" (runs only when the profile is NOT claimed) | "always"
    site: str = ""  # the module whose top level registered the check (where its id is written)
    target: str = "live"  # the kind of target it judges (TARGET_KINDS)



REGISTRY: dict[str, Check] = {}
FIXTURE_CONTRACT = 6  # the newest fixture contract version (docs/fixture-contract.md)


def target_kind(rec) -> str:
    """The kind of target a recording holds (Check.target); "live" unless it says otherwise."""
    return getattr(rec, "target_kind", "live")


def fixture_need(need: str) -> tuple[str, int]:
    """`kind:name@N` -> (`kind:name`, N): a fixture and the contract version that added it (1 when unmarked)."""
    fixture, _, version = need.partition("@")
    return fixture, int(version) if version else 1


def check(check_id: str, *, does: str, must: str, needs: tuple[str, ...] = (), when: str = "claimed",
          target: str = "live"):
    """Register the decorated judge as check `check_id`."""
    profile, role, slug = check_id.split("/")  # the role is held to core/roles.py when its checks load (Role.load)
    assert profile in PROFILES and role and slug and target in TARGET_KINDS, check_id
    site = _registering_module()

    def register(judge):
        if check_id in REGISTRY:
            raise ValueError(f"duplicate check id {check_id}")
        REGISTRY[check_id] = Check(check_id, does, must, judge, tuple(needs), when, site=site, target=target)
        return judge

    return register


def _registering_module() -> str:
    """The module whose top-level code is running this registration (through any factory in between):
    the first module-level frame up the stack. Its source is where the check id is written."""
    frame: FrameType | None = sys._getframe(2)
    while frame is not None and frame.f_code.co_name != "<module>":
        frame = frame.f_back
    return frame.f_globals.get("__name__", "") if frame is not None else ""


@dataclass
class Result(_Identified):
    """A check's verdict, as reports and the pytest layer see it."""

    id: str
    level: str
    outcome: str
    rows: list[str]
    requirement: str
    description: str
    reason: str | None = None
    expected: Any = None
    actual: Any = None
    duration: float = 0.0
    exchanges: list[dict] = field(default_factory=list)
    claim: dict | None = None  # the profile's claim, for the report
    expected_failure: bool = False
    follows_from: str | None = None  # the failed check this failure follows from (Check.follows)
    judged_at: float | None = None  # wall-clock time the verdict was reached (the official checks' `timestamp`)
    untestable: bool = False  # skipped for a missing prerequisite (a fixture the target does not expose)

    def to_json(self) -> dict:
        out: dict[str, Any] = {
            "id": self.id, "profile": self.profile, "role": self.role, "slug": self.id.split("/")[2],
            "level": self.level, "outcome": self.outcome, "rows": self.rows,
            "requirement": self.requirement, "description": self.description,
            "reason": self.reason, "durationSeconds": round(self.duration, 6),
        }
        if self.expected is not None:
            out["expected"] = self.expected
        if self.actual is not None:
            out["actual"] = self.actual
        if self.exchanges:
            out["exchanges"] = self.exchanges
        if self.expected_failure:
            out["expectedFailure"] = True
        if self.follows_from:
            out["followsFrom"] = self.follows_from
        if self.untestable:
            out["untestable"] = True
        if self.judged_at is not None:
            out["judgedAt"] = dt.datetime.fromtimestamp(self.judged_at, dt.timezone.utc).isoformat(
                timespec="milliseconds").replace("+00:00", "Z")
        return out

    @classmethod
    def from_json(cls, data: dict, claim: dict | None = None) -> "Result":
        return cls(id=data["id"], level=data["level"], outcome=data["outcome"], rows=list(data["rows"]),
                   requirement=data["requirement"], description=data["description"], reason=data.get("reason"),
                   expected=data.get("expected"), actual=data.get("actual"),
                   duration=data.get("durationSeconds", 0.0), exchanges=data.get("exchanges", []),
                   claim=claim, expected_failure=data.get("expectedFailure", False),
                   follows_from=data.get("followsFrom"),
                   untestable=data.get("untestable", False),
                   judged_at=dt.datetime.fromisoformat(data["judgedAt"].replace("Z", "+00:00")).timestamp()
                   if data.get("judgedAt") else None)


def outcome_for_level(level: str) -> str:
    return _LEVEL_OUTCOME[level]


def describe(exc: BaseException) -> str:
    """A short, traceback-free description of an exception, for a reason a person reads
    (the suite's own errors and a target's failures alike)."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def format_failure(result: Result) -> str:
    """h2spec-style: the check, the requirement, what the suite did, expected vs actual."""
    import json

    def show(value):
        return value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False)

    lines = [f"{result.id}  [{result.level}; rows {', '.join(result.rows) or '-'}]",
             f"  requirement: {result.requirement}",
             f"  the suite:   {result.description}",
             f"  verdict:     {result.outcome}: {result.reason}"]
    if result.expected is not None:
        lines.append(f"  expected:    {show(result.expected)}")
    if result.actual is not None:
        lines.append(f"  actual:      {show(result.actual)}")
    return "\n".join(lines)
