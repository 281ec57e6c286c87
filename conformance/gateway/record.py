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

from ..server.recording import Recording, record
from ..targets import TargetUnavailable
from . import augmentation, context_middleware, execution_requirements, preprocessor_tools
from .common import claimer
from .launch import SpecFactory, background, upstream_for

MODULES = {m.PROFILE: m for m in (preprocessor_tools, execution_requirements, context_middleware, augmentation)}
PROFILES = tuple(MODULES)
DRIVERS = {profile: module.DRIVER for profile, module in MODULES.items()}


def read_log(path: Path) -> list:
    out = []
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
            rec = await record(spec, profile, claimer, DRIVERS[profile], None,
                               claimed_by_option=claimed_by_option, run_timeout=run_timeout)
    except TargetUnavailable as exc:
        rec = Recording(profile, spec.describe() if spec else {"kind": "gateway"})
        rec.unavailable = rec.fatal = str(exc)
    rec.upstream = read_log(log)
    return rec


async def record_gateway(spec_factory: SpecFactory, profiles=PROFILES, *, claimed=frozenset(), upstream: str = "stdio",
                         run_timeout: float = 60.0, progress=None) -> dict[str, Recording]:
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
