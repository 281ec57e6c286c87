"""What the suite keeps as a client: `Recording`, one profile's exchanges on a connection (session.py makes it).

Each role that plays the client extends it with what only that role records: the server role's
`ServerRecording` (server/recording.py), the gateway's `TransparencyRecording` (gateway/recording.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core.model import NotObserved
from ..core.recording import Citing
from ..targets import Exchange, WireEvent


@dataclass
class Recording(Citing):
    """A client connection's recording (conformance.core.recording.Recording): its exchanges by label."""

    profile: str
    target: dict
    claimed: bool = False
    claimed_by: str | None = None  # "option" | "advertisement" | None
    claim_reason: str = ""
    misplaced: list[str] = field(default_factory=list)  # the profile's fields where the proposal puts none
    capabilities: dict = field(default_factory=dict)
    tools: list[dict] | None = None  # None: tools/list failed or was not offered
    exchanges: dict[str, Exchange] = field(default_factory=dict)
    wire: list[WireEvent] = field(default_factory=list)
    fatal: str | None = None  # the connection broke before the driver finished
    init_failed: bool = False  # not even initialize worked: nothing of the profile could be observed
    unavailable: str | None = None  # the target could not be started or reached
    stderr_tail: str | None = None  # what a started target last wrote on stderr, kept when initialize failed
    listing: dict[str, list[dict] | None] = field(default_factory=dict)  # extension lists, by kind
    list_problems: list[str] = field(default_factory=list)  # a list read only in part (page cap, cursor loop)
    # -- what judges use -----------------------------------------------------------------
    def never_observed(self, label: str) -> str:
        why = f"; the connection failed first: {self.fatal}" if self.fatal else ""
        return f"the suite never sent {label!r}{why}"

    def tool(self, name: str) -> dict | None:
        for tool in self.tools or ():
            if isinstance(tool, dict) and tool.get("name") == name:
                return tool
        return None

    def fixture(self, name: str) -> dict:
        """A fixture tool a check `needs` (the runner judges only when it is listed)."""
        tool = self.tool(name)
        if tool is None:
            raise NotObserved(f"the fixture tool {name} is not listed")
        return tool

    def listed(self, kind: str, name: str) -> dict | None:
        for item in self.listing.get(kind) or ():
            if isinstance(item, dict) and item.get("name") == name:
                return item
        return None

    def has_fixture(self, need: str) -> bool:
        kind, name = need.split(":", 1)
        if kind == "tool":
            return self.tool(name) is not None
        return self.listed(kind, name) is not None

    @property
    def by_option(self) -> bool:
        return self.claimed_by == "option"
