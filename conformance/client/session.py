"""Recording a target the suite talks to as a client (a server, or a gateway in front of the suite's upstream):
the suite's client on a connection (`Session`) and the engine that drives every profile's requests and keeps
what came back in one `Recording` per profile (recording.py; each role passes its own recording class).

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

from dataclasses import dataclass
from typing import Any, Awaitable, Callable, TypeVar

import anyio

from ..core.judging import experimental_carriage, grouped_near_misses, meta_carriage, near_misses
from ..core.spelling import flag
from ..targets import Connection, EncodedParams, Exchange, TargetSpec, TargetUnavailable, WireEvent
from .recording import Recording

CLIENT_INFO = {"name": "mcp-ext-conformance", "version": "0.1.0"}
PROTOCOL_VERSION = "2025-11-25"  # the handshake the suite proposes in `initialize`
MODERN_VERSION = "2026-07-28"  # the stateless connection mode: `server/discover`, then _meta on every request
MAX_PAGES = 1000  # a list's pages the suite reads: a guard against a cursor that never ends, named when reached
R = TypeVar("R", bound=Recording)  # the role's recording class: the server's, the gateway's


class Session:
    """The suite's client on one connection, recording into one Recording."""

    def __init__(self, conn: Connection, rec: Recording):
        self.conn = conn
        self.rec = rec

    async def send(self, label: str, method: str, params: Any = None, **kw) -> Exchange:
        if self.conn.mode == MODERN_VERSION and (params is None or isinstance(params, dict)):
            # 2026-07-28: no session; every request says who is asking and in which version.
            meta = {"io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
                    "io.modelcontextprotocol/clientInfo": CLIENT_INFO, "io.modelcontextprotocol/clientCapabilities": {}}
            if isinstance(params, EncodedParams) and "_meta" not in params:
                params = params.merged({"_meta": meta})  # its text stays whole
            else:
                params = dict(params or {})
                params["_meta"] = {**params.get("_meta", {}), **meta}
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

    async def list_all(self, method: str, key: str, label: str, params: dict | None = None) -> list[dict] | None:
        """Every page of a paginated list (following nextCursor to its end); None when the first page is not a
        result. A list of MAX_PAGES pages, or a cursor that comes back, ends the reading with a diagnosis that
        names it (`Recording.list_problems`): never a silent cut."""
        items: list[dict] = []
        cursor, seen = None, set()
        for page in range(MAX_PAGES):
            ask: dict[str, Any] = {**(params or {}), **({"cursor": cursor} if cursor else {})}
            ex = await self.send(label if page == 0 else f"{label}#{page + 1}", method, ask)
            if not ex.has_result or not isinstance(ex.result, dict):
                return None if page == 0 else items
            got = ex.result.get(key)
            items.extend(got if isinstance(got, list) else [])
            cursor = ex.result.get("nextCursor")
            if not isinstance(cursor, str) or not cursor:
                return items
            if cursor in seen:
                self.rec.list_problems.append(f"{label}: page {page + 1} gave a nextCursor that an earlier page "
                                              f"gave ({cursor[:40]!r}); the list was read up to there")
                return items
            seen.add(cursor)
        self.rec.list_problems.append(f"{label}: the suite reads at most {MAX_PAGES} pages of a list and page "
                                      f"{MAX_PAGES} still gave a nextCursor; what follows was not read")
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
Claimer = Callable[[Recording], str | None]  # the reason the target shows the profile, or None


async def record(spec: TargetSpec, profile: str, plan: "ConnectionPlan", *, claimed_by_option: bool,
                 run_timeout: float, recording: type[R]) -> R:
    """One profile on a connection of its own."""
    recordings = await record_shared(spec, {profile: plan}, claimed={profile} if claimed_by_option else set(),
                                     run_timeout=run_timeout, recording=recording)
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


async def _claim_and_drive(session: Session, rec: Recording, plan: ConnectionPlan,
                           claimed_by_option: bool) -> None:
    shown = plan.claimer(rec)
    if claimed_by_option:
        rec.claimed, rec.claimed_by, rec.claim_reason = True, "option", f"claimed with {flag('profile')}"
    elif shown:
        rec.claimed, rec.claimed_by, rec.claim_reason = True, "advertisement", shown
    else:
        # Named, never counted: the proposals define no _meta carriage and no experimental capability.
        carried = meta_carriage(rec.tools, rec.profile)
        advertised = experimental_carriage(rec.capabilities, rec.profile)
        missed = near_misses(rec.tools, rec.profile)
        found = []
        if carried:
            found.append(f"the field is only under _meta, which the proposal does not define "
                         f"({', '.join(carried[:3])}{', …' if len(carried) > 3 else ''})")
        if advertised:
            found.append(f"the capability is only under capabilities.experimental, which the proposal does "
                         f"not define ({', '.join(advertised)})")
        found += grouped_near_misses(missed)
        rec.claim_reason = "; ".join(found) or "the server shows nothing of this profile"
        rec.misplaced = carried + advertised + missed
    if rec.claimed:
        await plan.driver(session, rec)
    elif plan.unclaimed_driver is not None:
        await plan.unclaimed_driver(session, rec)


@dataclass(frozen=True)
class ConnectionPlan:
    """A profile module's PLAN in the server and gateway roles (core/profile.py): how the profile is claimed and
    driven on a client connection."""

    claimer: Claimer  # the reason the target shows the profile, or None
    driver: Driver  # the requests sent when the profile is claimed
    unclaimed_driver: Driver | None = None  # the requests sent when it is not (checks with when="unclaimed")
    # Requests that may end the connection (an oversized payload), sent when the profile is claimed and every
    # profile's driver has finished: a target that dies of them takes no other profile's verdicts with it.
    last: Driver | None = None


async def record_shared(spec: TargetSpec, plans: dict[str, ConnectionPlan], *, claimed: set[str],
                        run_timeout: float, recording: type[R], progress=None) -> dict[str, R]:
    """Record the profiles of `plans` on one connection: one handshake, then the profiles' drivers at once.

    Each profile keeps its own recording: the handshake's exchanges are shared, the rest are its own, and its
    transcript holds the messages of its own requests plus everything no request owns (notifications, the
    target's own requests, junk), so one profile's bad message fails that profile's wire check only.
    """
    recs = {profile: recording(profile, spec.describe()) for profile in plans}
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
                        rec.list_problems = list(first.list_problems)  # the tools list was read in part
                    if not ok and rec.profile in claimed:
                        rec.claimed, rec.claimed_by, rec.claim_reason = True, "option", f"claimed with {flag('profile')}"
                done: list[str] = []

                async def one(profile: str) -> None:
                    if ok:
                        await _claim_and_drive(Session(conn, recs[profile]), recs[profile], plans[profile],
                                               profile in claimed)
                    done.append(profile)
                    if progress is not None:
                        progress(recs[profile], len(done), len(recs))

                async with anyio.create_task_group() as tg:
                    for profile in recs:
                        tg.start_soon(one, profile)
                for profile, rec in recs.items():
                    last = plans[profile].last
                    if ok and rec.claimed and last is not None and not conn.dead:
                        await last(Session(conn, rec), rec)
            tail = conn.stderr_tail() if first.init_failed and hasattr(conn, "stderr_tail") else None
            for rec in recs.values():
                rec.stderr_tail = tail or None
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


def progress_lines(say):
    """One line as each profile's recording ends, so a long run shows where it is (None without a terminal)."""
    if say is None:
        return None

    def progress(rec, done, total):
        if rec.init_failed or rec.unavailable:
            return  # nothing was recorded: the run's diagnosis or its checks say why, once
        state = "claimed" if rec.claimed else "not claimed"
        trouble = f"; {rec.fatal}" if rec.fatal else ""
        say(f"  [{done}/{total}] {rec.profile}: {state}, {len(rec.exchanges)} exchange(s){trouble}")

    return progress
