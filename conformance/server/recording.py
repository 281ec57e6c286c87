"""Recording a server: drive the profiles' exchanges on a connection, keep everything.

Theory of operation
-------------------
By default every profile shares one connection (one process for stdio, one
session for HTTP, one container); with isolation each profile gets its own, so a
server that dies during one profile cannot take another's verdicts with it. Either
way the profiles run concurrently and `record_shared` does the work (`record` is
one profile on a connection of its own). A connection starts with `initialize`,
then `notifications/initialized`, then `tools/list` (following cursors). From what
the server shows, each profile is claimed or not (`_claim_and_drive`); then the
profile's driver sends its requests. Nothing is judged here: the checks are pure
functions of the finished `Recording`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

import anyio

from ..core.judging import experimental_carriage, meta_carriage
from ..core.recording import Citing
from ..targets import Connection, Exchange, TargetSpec, TargetUnavailable, WireEvent

CLIENT_INFO = {"name": "mcp-ext-conformance", "version": "0.1.0"}
PROTOCOL_VERSION = "2025-11-25"  # the handshake the suite proposes in `initialize`
MODERN_VERSION = "2026-07-28"  # the stateless connection mode: `server/discover`, then _meta on every request
MAX_PAGES = 20


@dataclass
class Recording(Citing):
    """A server connection's recording (conformance.core.recording.Recording): its exchanges by label."""

    profile: str
    target: dict
    claimed: bool = False
    claimed_by: str | None = None  # "option" | "advertisement" | None
    claim_reason: str = ""
    misplaced: list[str] = field(default_factory=list)  # the profile's fields where the proposal puts none
    how_to_claim: str = ""  # what a server does to claim the profile (besides --profile)
    capabilities: dict = field(default_factory=dict)
    tools: list[dict] | None = None  # None: tools/list failed or was not offered
    exchanges: dict[str, Exchange] = field(default_factory=dict)
    wire: list[WireEvent] = field(default_factory=list)
    fatal: str | None = None  # the connection broke before the driver finished
    init_failed: bool = False  # not even initialize worked: nothing of the profile could be observed
    unavailable: str | None = None  # the target could not be started or reached
    listing: dict[str, list[dict] | None] = field(default_factory=dict)  # extension lists, by kind
    fixture_contract: int = 1  # the fixture contract version the run requires (--fixture-contract)

    # -- what judges use -----------------------------------------------------------------
    def never_observed(self, label: str) -> str:
        why = f"; the connection failed first: {self.fatal}" if self.fatal else ""
        return f"the suite never sent {label!r}{why}"

    def tool(self, name: str) -> dict | None:
        for tool in self.tools or ():
            if isinstance(tool, dict) and tool.get("name") == name:
                return tool
        return None

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


class Session:
    """The suite's client on one connection, recording into one Recording."""

    def __init__(self, conn: Connection, rec: Recording):
        self.conn = conn
        self.rec = rec

    async def send(self, label: str, method: str, params: Any = None, **kw) -> Exchange:
        if self.conn.mode == MODERN_VERSION and (params is None or isinstance(params, dict)):
            # 2026-07-28: no session; every request says who is asking and in which version.
            params = dict(params or {})
            params["_meta"] = {**params.get("_meta", {}), "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
                               "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
                               "io.modelcontextprotocol/clientCapabilities": {}}
        exchange = await self.conn.request(method, params, label=label, **kw)
        self.rec.exchanges[label] = exchange
        return exchange

    async def initialize(self) -> Exchange:
        """The handshake (`initialize` + `notifications/initialized`), or `server/discover` in the 2026 mode."""
        if self.conn.mode == MODERN_VERSION:
            ex = await self.send("initialize", "server/discover", {})
        else:
            ex = await self.send("initialize", "initialize", {
                "protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": CLIENT_INFO})
        if ex.has_result:
            caps = ex.result.get("capabilities")
            self.rec.capabilities = caps if isinstance(caps, dict) else {}
            if self.conn.mode != MODERN_VERSION:
                await self.conn.notify("notifications/initialized")
        return ex

    async def list_all(self, method: str, key: str, label: str) -> list[dict] | None:
        """Every page of a paginated list; None when the first page is not a result."""
        items: list[dict] = []
        cursor = None
        for page in range(MAX_PAGES):
            params = {"cursor": cursor} if cursor else {}
            ex = await self.send(label if page == 0 else f"{label}#{page + 1}", method, params)
            if not ex.has_result or not isinstance(ex.result, dict):
                return None if page == 0 else items
            got = ex.result.get(key)
            items.extend(got if isinstance(got, list) else [])
            cursor = ex.result.get("nextCursor")
            if not isinstance(cursor, str) or not cursor:
                break
        return items

    async def call_tool(self, label: str, name: str, arguments: dict) -> Exchange:
        return await self.send(label, "tools/call", {"name": name, "arguments": arguments})

    async def together(self, *stimuli: Awaitable[Exchange]) -> list[Exchange]:
        """Send independent requests at once: a server that hangs or answers wrong ids costs one timeout for
        all of them, not one each. Each keeps its own exchange and reason."""
        out: list[Exchange | None] = [None] * len(stimuli)

        async def one(i: int, stimulus: Awaitable[Exchange]) -> None:
            out[i] = await stimulus

        async with anyio.create_task_group() as tg:
            for i, stimulus in enumerate(stimuli):
                tg.start_soon(one, i, stimulus)
        return [ex for ex in out if ex is not None]

    async def in_stages(self, *stages: list[Callable[[], Awaitable[Exchange]]]) -> None:
        """Send groups of requests in order (a counter read after the calls it counts), each group at once.

        Once a group leaves a request unanswered, the order has nothing left to show (a counter read after an
        unanswered call says nothing), so every later group is sent at once: one more timeout, not one each.
        """
        for i, stage in enumerate(stages):
            results = await self.together(*(make() for make in stage))
            if any(not ex.has_result and not ex.has_error for ex in results):
                await self.together(*(make() for later in stages[i + 1:] for make in later))
                return


Driver = Callable[[Session, Recording], Awaitable[None]]
Claimer = Callable[[Recording], str | None]  # the reason the server shows the profile, or None


async def record(spec: TargetSpec, profile: str, claimer: Claimer, driver: Driver, unclaimed_driver: Driver | None,
                 *, claimed_by_option: bool, run_timeout: float) -> Recording:
    """One profile on a connection of its own."""
    recordings = await record_shared(spec, {profile: (claimer, driver, unclaimed_driver)},
                                     claimed={profile} if claimed_by_option else set(), run_timeout=run_timeout)
    return recordings[profile]


async def _handshake(session: Session, rec: Recording) -> bool:
    """initialize (or server/discover), then tools/list; False when not even initialize worked."""
    init = await session.initialize()
    if not init.has_result:
        rec.fatal = f"initialize failed: {init.outcome_text()}"
        rec.init_failed = True
        return False
    rec.tools = await session.list_all("tools/list", "tools", "tools/list")
    return True


async def _claim_and_drive(session: Session, rec: Recording, claimer: Claimer, driver: Driver,
                           unclaimed_driver: Driver | None, claimed_by_option: bool) -> None:
    shown = claimer(rec)
    if claimed_by_option:
        rec.claimed, rec.claimed_by, rec.claim_reason = True, "option", "claimed with --profile"
    elif shown:
        rec.claimed, rec.claimed_by, rec.claim_reason = True, "advertisement", shown
    else:
        # Named, never counted: the proposals define no _meta carriage and no experimental capability.
        carried = meta_carriage(rec.tools, rec.profile)
        advertised = experimental_carriage(rec.capabilities, rec.profile)
        found = []
        if carried:
            found.append(f"the field is only under _meta, which the proposal does not define "
                         f"({', '.join(carried[:3])}{', …' if len(carried) > 3 else ''})")
        if advertised:
            found.append(f"the capability is only under capabilities.experimental, which the proposal does "
                         f"not define ({', '.join(advertised)})")
        rec.claim_reason = "; ".join(found) or "the server shows nothing of this profile"
        rec.misplaced = carried + advertised
    if rec.claimed:
        await driver(session, rec)
    elif unclaimed_driver is not None:
        await unclaimed_driver(session, rec)


# (claimer, driver, unclaimed driver) of a profile
Plan = tuple[Claimer, Driver, "Driver | None"]


async def record_shared(spec: TargetSpec, plans: dict[str, Plan], *, claimed: set[str], run_timeout: float,
                        progress=None) -> dict[str, Recording]:
    """Record the profiles of `plans` on one connection: one handshake, then the profiles' drivers at once.

    Each profile keeps its own recording: the handshake's exchanges are shared, the rest are its own, and its
    transcript holds the messages of its own requests plus everything no request owns (notifications, the
    target's own requests, junk), so one profile's bad message fails that profile's wire check only.
    """
    recs = {profile: Recording(profile, spec.describe()) for profile in plans}
    first = next(iter(recs.values()))
    handshake: set[str] = set()
    try:
        async with spec.connect() as conn:
            if hasattr(conn, "probe"):
                await conn.probe()
            with anyio.move_on_after(run_timeout) as scope:
                ok = await _handshake(Session(conn, first), first)
                handshake = set(first.exchanges)  # every profile's: in each recording and each transcript
                for rec in recs.values():
                    if rec is not first:
                        rec.exchanges.update(first.exchanges)
                        rec.capabilities, rec.tools = first.capabilities, first.tools
                        rec.fatal, rec.init_failed = first.fatal, first.init_failed
                    if not ok and rec.profile in claimed:
                        rec.claimed, rec.claimed_by, rec.claim_reason = True, "option", "claimed with --profile"
                done: list[str] = []

                async def one(profile: str) -> None:
                    if ok:
                        claimer, driver, unclaimed_driver = plans[profile]
                        await _claim_and_drive(Session(conn, recs[profile]), recs[profile], claimer, driver,
                                               unclaimed_driver, profile in claimed)
                    done.append(profile)
                    if progress is not None:
                        progress(recs[profile], len(done), len(recs))

                async with anyio.create_task_group() as tg:
                    for profile in recs:
                        tg.start_soon(one, profile)
            for rec in recs.values():
                if scope.cancelled_caught and not rec.fatal:
                    rec.fatal = f"the {rec.profile} run did not finish within {run_timeout:g} s"
                if conn.dead and not rec.fatal:
                    rec.fatal = conn.dead
            owner = {ex.request.get("id"): profile for profile, rec in recs.items()
                     for label, ex in rec.exchanges.items() if label not in handshake}
            for rec in recs.values():
                rec.wire = [event for event in conn.wire if _owned_by(event, rec.profile, owner)]
    except TargetUnavailable as exc:
        for rec in recs.values():
            rec.unavailable = rec.fatal = str(exc)
    return recs


def _owned_by(event: WireEvent, profile: str, owner: dict) -> bool:
    """Whether a message of a shared transcript belongs in `profile`'s: its own requests and their answers,
    and whatever no request owns."""
    message = event.message
    if not isinstance(message, dict) or "id" not in message:
        return True  # notifications, batches, junk
    inbound_response = event.direction == "in" and "method" not in message
    outbound_request = event.direction == "out" and "method" in message
    if not (inbound_response or outbound_request):
        return True  # the target's own requests and the suite's answers to them
    return owner.get(message["id"], profile) == profile
