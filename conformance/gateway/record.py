"""Gateway role, transparency recording: one connection per profile, concurrently, each with its own
gateway process and its own upstream, whose log of received messages is attached to the recording
(`rec.upstream`). The connection starts as in the server role (initialize, tools/list, reused from
conformance/server/recording.py); then the profile's driver (in the profile's module) sends its requests.
The suite's upstream offers every profile, so every profile is claimed; what the gateway does not let
through is a failure, "not observed" when the suite could not even see it.
"""

from __future__ import annotations

import json
import tempfile
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio

from ..core.profile import profile_modules
from ..core.roles import GATEWAY
from ..server.recording import Recording
from ..server.session import progress_lines, record
from ..targets import TargetUnavailable
from .launch import SpecFactory, background, gateway_factory, upstream_for

PIPELINE = "sequential-pipeline"  # driven through an adapter (replay.py), not through the gateway's wire
MODULES = profile_modules("conformance.gateway", GATEWAY.profiles)
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


async def record_one(spec_factory: SpecFactory, profile: str, workdir: Path, *, claimed_by_option: bool,
                     upstream: str, run_timeout: float) -> Recording:
    log = workdir / f"{profile}.upstream.jsonl"
    log.touch()
    spec = None
    try:
        async with AsyncExitStack() as stack:
            up = await stack.enter_async_context(upstream_for(log, upstream))
            spec = spec_factory(up)
            if spec.kind == "http" and spec.command:
                import shlex

                await stack.enter_async_context(background(shlex.split(spec.command), spec.env, spec.url))
            rec = await record(spec, profile, MODULES[profile].PLAN, claimed_by_option=claimed_by_option,
                               run_timeout=run_timeout)
    except TargetUnavailable as exc:
        rec = Recording(profile, spec.describe() if spec else {"kind": "gateway"})
        rec.unavailable = rec.fatal = str(exc)
    # The gateway's own evidence on the server role's recording, read back with getattr (common.upstream_received).
    rec.upstream = read_log(log)  # type: ignore[attr-defined]
    return rec


async def record_gateway(spec_factory: SpecFactory, profiles=PROFILES, *, claimed=frozenset(), upstream: str = "stdio",
                         run_timeout: float = GATEWAY.default_run_timeout, progress=None) -> dict[str, Recording]:
    """Record each profile through the gateway, concurrently, each on its own gateway and upstream.

    `spec_factory(upstream) -> TargetSpec` says how to start and reach the gateway (see
    `gateway_factory`); `upstream` is how the suite serves its fixture server: "stdio" (the gateway
    starts it from MCPX_UPSTREAM_COMMAND) or "http" (the suite runs it; MCPX_UPSTREAM_URL).
    """
    out: dict[str, Recording] = {}
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


def record_gateway_sync(spec_factory: SpecFactory, profiles=PROFILES, **kw: Any) -> dict[str, Recording]:
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
        factory = gateway_factory(run.command, url=run.url, timeout=run.timeout, env=run.env_vars,
                                  headers=run.headers, ca_bundle=run.ca_bundle)
        if say:
            say(f"recording {len(through)} profile(s) through the gateway {run.command}, each with its own upstream")
        recordings.update(record_gateway_sync(factory, through, claimed=claimed, upstream=run.upstream,
                                              run_timeout=run.run_timeout, progress=progress_lines(say)))
    if run.adapter and PIPELINE in profiles:
        if say:
            say(f"replaying the pipeline fixtures through {run.adapter}")
        recordings[PIPELINE] = record_adapter(run.adapter)
    return recordings
