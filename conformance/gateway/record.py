"""Gateway role, transparency recording: one connection per profile, concurrently, each with its own
gateway process and its own upstream, whose log of received messages is attached to the recording
(`rec.upstream`, a TransparencyRecording's). The connection starts as in the server role (initialize,
tools/list: conformance/client/session.py, shared with it); then the profile's driver (in the profile's module)
sends its requests.
The suite's upstream offers every profile, so every profile is claimed; what the gateway does not let
through is a failure, "not observed" when the suite could not even see it.

Proof of forwarding: each connection's upstream gets a fresh run mark (`--run`), which it puts in its
answers (docs/fixture-contract.md#gateway-upstream-contract), and every request the upstream received
becomes evidence of its own (`upstream received <method> [<name>]`), so a check cites both what reached
the upstream and what the client got. A gateway that has not contacted the upstream once initialize and
tools/list are through (waiting up to CONTACT_WAIT for a late start) is not driven further:
`rec.upstream` stays empty, and the run ends in one diagnosis (run/diagnosis.py) instead of verdicts.
"""

from __future__ import annotations

import json
import tempfile
import time
import uuid
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio

from ..client.recording import Recording
from ..client.session import ConnectionPlan, Session, progress_lines, record
from ..core.profile import profile_modules
from ..core.roles import GATEWAY
from ..targets import Exchange, TargetSpec, TargetUnavailable
from .launch import SpecFactory, background, gateway_factory, upstream_for
from .recording import TransparencyRecording

CONTACT_WAIT = 3.0  # seconds a gateway may take, after answering tools/list, to contact its upstream (at most its timeout)
PIPELINE = "sequential-pipeline"  # driven through an adapter (replay.py), not through the gateway's wire
MODULES = profile_modules(GATEWAY)
PROFILES = tuple(p for p in MODULES if p != PIPELINE)  # recorded through a running gateway


def read_log(path: Path) -> list:
    out: list = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return out
    for line in lines:
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def upstream_exchanges(received: list) -> dict[str, Exchange]:
    """Each request the upstream received, as evidence a check cites: `upstream received <method> [<name>]`,
    then ` (2)`, ` (3)`... when the same one arrived again."""
    out: dict[str, Exchange] = {}
    for message in received:
        if not isinstance(message, dict) or not isinstance(message.get("method"), str) or "id" not in message:
            continue
        params = message.get("params")
        name = params.get("name") if isinstance(params, dict) else None
        label = f"upstream received {message['method']}" + (f" {name}" if isinstance(name, str) else "")
        base, count = label, 1
        while label in out:
            count += 1
            label = f"{base} ({count})"
        out[label] = Exchange(label, message["method"], message)
    return out


async def contacted(log: Path, wait: float) -> bool:
    """Whether the upstream has received anything, waiting up to `wait` seconds for a first message."""
    deadline = time.monotonic() + wait
    while True:
        try:
            if log.stat().st_size > 0:
                return True
        except OSError:
            return False
        if time.monotonic() >= deadline:
            return False
        await anyio.sleep(0.05)


def contact_first(plan: ConnectionPlan, log: Path, wait: float) -> ConnectionPlan:
    """`plan` with a driver that runs only once the gateway has contacted the upstream: a plain server in the
    gateway's place is not driven through requests it cannot forward."""

    async def driver(session: Session, rec: Recording) -> None:
        if await contacted(log, wait):
            await plan.driver(session, rec)

    return ConnectionPlan(plan.claimer, driver, plan.unclaimed_driver, plan.last)


async def record_one(spec_factory: SpecFactory, profile: str, workdir: Path, *, claimed_by_option: bool,
                     upstream: str, run_timeout: float) -> TransparencyRecording:
    log = workdir / f"{profile}.upstream.jsonl"
    log.touch()
    run = f"mcpx-run-{uuid.uuid4().hex[:12]}"
    spec = None
    try:
        async with AsyncExitStack() as stack:
            up = await stack.enter_async_context(upstream_for(log, upstream, run))
            spec = spec_factory(up)
            if spec.kind == "http" and spec.command:
                import shlex

                await stack.enter_async_context(background(shlex.split(spec.command), spec.environment, spec.url))
            plan = contact_first(MODULES[profile].PLAN, log, min(spec.timeout, CONTACT_WAIT))
            rec = await record(spec, profile, plan, claimed_by_option=claimed_by_option, run_timeout=run_timeout,
                               recording=TransparencyRecording)
    except TargetUnavailable as exc:
        rec = TransparencyRecording(profile, spec.describe() if spec else {"kind": "gateway"})
        rec.unavailable = rec.fatal = str(exc)
    rec.upstream, rec.upstream_run, rec.upstream_mode = read_log(log), run, upstream
    for label, exchange in upstream_exchanges(rec.upstream).items():
        rec.exchanges.setdefault(label, exchange)
    return rec


async def record_gateway(spec_factory: SpecFactory, profiles=PROFILES, *, claimed=frozenset(), upstream: str = "stdio",
                         run_timeout: float = GATEWAY.default_run_timeout,
                         progress=None) -> dict[str, TransparencyRecording]:
    """Record each profile through the gateway, concurrently, each on its own gateway and upstream.

    `spec_factory(upstream) -> TargetSpec` says how to start and reach the gateway (see
    `gateway_factory`); `upstream` is how the suite serves its fixture server: "stdio" (the gateway
    starts it from MCPX_UPSTREAM_COMMAND) or "http" (the suite runs it; MCPX_UPSTREAM_URL).
    """
    out: dict[str, TransparencyRecording] = {}
    profiles = [p for p in profiles if p in PROFILES]
    with tempfile.TemporaryDirectory(prefix="mcpx-gateway-") as tmp:
        async def one(profile: str) -> None:
            out[profile] = await record_one(spec_factory, profile, Path(tmp), claimed_by_option=profile in claimed,
                                            upstream=upstream, run_timeout=run_timeout)
            if progress is not None:
                progress(out[profile], len(out), len(profiles))

        async with anyio.create_task_group() as tg:
            for profile in profiles:
                tg.start_soon(one, profile)
    return {p: out[p] for p in profiles}


def record_gateway_sync(spec_factory: SpecFactory, profiles=PROFILES, **kw: Any) -> dict[str, TransparencyRecording]:
    return anyio.run(lambda: record_gateway(spec_factory, profiles, **kw))


def recordable(run, profiles) -> list[str]:
    """The profiles of `profiles` this run's options can record: transparency needs a gateway command, the
    pipeline an adapter (record_run below)."""
    return [p for p in profiles if (run.adapter if p == PIPELINE else run.command)]


def describe(run) -> dict:
    if not run.command:
        return {"kind": "adapter", "adapter": run.adapter}
    return {"kind": "http", "url": run.url, "command": run.command} if run.url else {"kind": "stdio",
                                                                                    "command": run.command}


def record_run(run, profiles: list[str], claimed: set[str], say) -> dict:
    """The role's recorder (core/roles.py): transparency through a gateway command, pipeline semantics through
    an adapter, either or both."""
    from .replay import record_adapter

    recordings: dict = {}
    through = [p for p in profiles if p in PROFILES]
    if run.command and through:
        factory = gateway_factory(TargetSpec.from_run(run))
        if say:
            say(f"recording {len(through)} profile(s) through the gateway {run.command}, each with its own upstream")
        recordings.update(record_gateway_sync(factory, through, claimed=claimed, upstream=run.upstream,
                                              run_timeout=run.run_timeout, progress=progress_lines(say)))
    if run.adapter and PIPELINE in profiles:
        if say:
            say(f"replaying the pipeline fixtures through {run.adapter}")
        recordings[PIPELINE] = record_adapter(run.adapter, timeout=run.timeout)
    return recordings
