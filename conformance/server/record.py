"""Server role, recording: each profile on its own connection, concurrently (conformance/server/recording.py
records one). Importing this module registers the server-role checks."""

from __future__ import annotations

import anyio

from ..targets import TargetSpec
from . import augmentation, context_middleware, execution_requirements, interceptors, preprocessor_tools
from .recording import Recording, record

MODULES = {m.PROFILE: m for m in (preprocessor_tools, execution_requirements, context_middleware, augmentation,
                                  interceptors)}
PROFILES = tuple(MODULES)


async def record_profiles(spec: TargetSpec, profiles, *, claimed: set[str], run_timeout: float,
                          progress=None) -> dict[str, Recording]:
    """Record the given profiles concurrently, each on its own connection.

    `progress(recording, done, total)`, when given, is called as each profile finishes.
    """
    out: dict[str, Recording] = {}
    profiles = list(profiles)

    async def one(profile: str) -> None:
        module = MODULES[profile]
        out[profile] = await record(spec, profile, module.claimer, module.driver,
                                    getattr(module, "unclaimed_driver", None),
                                    claimed_by_option=profile in claimed, run_timeout=run_timeout)
        if progress is not None:
            progress(out[profile], len(out), len(profiles))

    async with anyio.create_task_group() as tg:
        for profile in profiles:
            tg.start_soon(one, profile)
    return out


def record_sync(spec: TargetSpec, profiles, *, claimed: set[str], run_timeout: float,
                progress=None) -> dict[str, Recording]:
    return anyio.run(lambda: record_profiles(spec, profiles, claimed=claimed, run_timeout=run_timeout,
                                             progress=progress))
