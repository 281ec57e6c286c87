"""Server role, recording: every profile on one connection, or each on its own (conformance/server/recording.py
records them). Importing this module registers the server-role checks."""

from __future__ import annotations

import anyio

from ..targets import TargetSpec
from . import augmentation, context_middleware, execution_requirements, interceptors, preprocessor_tools
from .recording import Recording, record, record_shared

MODULES = {m.PROFILE: m for m in (preprocessor_tools, execution_requirements, context_middleware, augmentation,
                                  interceptors)}
PROFILES = tuple(MODULES)


async def record_profiles(spec: TargetSpec, profiles, *, claimed: set[str], run_timeout: float,
                          progress=None, isolate: bool = False) -> dict[str, Recording]:
    """Record the given profiles concurrently: on one connection, or (`isolate`) each on its own.

    One connection is the default: a server process (or container, or HTTP session) started once instead of
    once per profile. Isolation costs a start per profile and buys that a server dying in one profile cannot
    take another's verdicts with it. `progress(recording, done, total)` is called as each profile finishes.
    """
    profiles = list(profiles)
    if not isolate and len(profiles) > 1:
        plans = {p: (MODULES[p].claimer, MODULES[p].driver, getattr(MODULES[p], "unclaimed_driver", None))
                 for p in profiles}
        return _with_claim_hints(await record_shared(spec, plans, claimed=claimed, run_timeout=run_timeout,
                                                     progress=progress))
    out: dict[str, Recording] = {}

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
    return _with_claim_hints(out)


def _with_claim_hints(recordings: dict[str, Recording]) -> dict[str, Recording]:
    """Each recording learns how its profile is claimed, for the reports of a profile left unclaimed."""
    for profile, rec in recordings.items():
        rec.how_to_claim = MODULES[profile].HOW_TO_CLAIM
    return recordings


def record_sync(spec: TargetSpec, profiles, *, claimed: set[str], run_timeout: float, progress=None,
                isolate: bool = False) -> dict[str, Recording]:
    return anyio.run(lambda: record_profiles(spec, profiles, claimed=claimed, run_timeout=run_timeout,
                                             progress=progress, isolate=isolate))
