"""What a recording is, for every role: the one interface `runner.evaluate` and the judges read.

Rules
-----
- A recording is made first and judged afterwards; nothing in it changes while checks are judged,
  except the list of what the current judge cited.
- A judge reads evidence only through `cite(label)`. Citing is explicit on purpose: what a judge
  cites is what the report shows next to the verdict, so a verdict always carries the exchanges it
  was drawn from, and nothing else.
- `cite` of something that never happened raises `NotObserved`: a judge cannot pass on evidence the
  suite does not have.

Each role keeps its own recording class (a server connection's exchanges, a host's scenario runs,
a pipeline adapter's fixture runs); each satisfies `Recording` and gets `cite` from `Citing`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Protocol, runtime_checkable

from .model import NotObserved


class Evidence(Protocol):
    """One piece of what was observed, as results.json shows it (the Exchange shape)."""

    def to_report(self) -> dict: ...


@runtime_checkable
class Recording(Protocol):
    """What `runner.evaluate` reads of a profile's recording."""

    profile: str
    claimed: bool
    claimed_by: str | None  # "option" (--profile), "advertisement", "default", or None
    claim_reason: str
    unavailable: str | None  # the target could not be started or reached: every check fails with this
    init_failed: bool  # nothing of the profile could be observed: every check fails, none skips
    exchanges: Mapping[str, Evidence]
    cited: list[str]

    @property
    def fatal(self) -> str | None: ...  # why the recording ended early, if it did

    @property
    def by_option(self) -> bool: ...  # claimed with --profile: missing fixtures fail instead of skipping

    def has_fixture(self, need: str) -> bool: ...

    def cite(self, label: str) -> Any: ...


@dataclass
class Citing:
    """`cite(label)`: the evidence under `label`, remembered as cited by the current judge."""

    cited: list[str] = field(default_factory=list, kw_only=True)

    def cite(self, label: str) -> Any:
        self._note(label)
        exchanges: Mapping[str, Any] = getattr(self, "exchanges")  # each recording class's own field
        if label in exchanges:
            return exchanges[label]
        raise NotObserved(self.never_observed(label))

    def never_observed(self, label: str) -> str:
        fatal = getattr(self, "fatal", None)
        return f"the suite never observed {label!r}" + (f"; the recording ended first: {fatal}" if fatal else "")

    def _note(self, label: str) -> None:
        if label not in self.cited:
            self.cited.append(label)


def peer_identity(rec: Any) -> dict | None:
    """What the target says it is: `serverInfo` of its initialize (or server/discover) result, the strings
    only and each clipped, or None when the recording holds no such answer (a host's, an adapter's)."""
    exchange = (getattr(rec, "exchanges", None) or {}).get("initialize")
    response = getattr(exchange, "response", None)
    result = response.get("result") if isinstance(response, dict) else None
    info = result.get("serverInfo") if isinstance(result, dict) else None
    if not isinstance(info, dict):
        return None
    from . import redact

    # Redacted before it is clipped: a clip could cut an echoed secret where no redaction would find it.
    identity = {key: redact.text(info[key])[:200] for key in ("name", "title", "version")
                if isinstance(info.get(key), str) and info[key]}
    return identity or None
