"""Server role, recording: the target named by the run's options (stdio, HTTP, Docker), every profile on one
connection or each on its own (client/session.py records them). Importing this module registers the server-role
checks (each profile module's `@check`s)."""

from __future__ import annotations

import anyio

from ..client.session import progress_lines, record, record_shared
from ..core.profile import profile_modules
from ..core.roles import SERVER
from ..targets import TargetSpec
from . import wg_fixtures  # the replay target's checks register with the role's
from .recording import ServerRecording

MODULES = profile_modules(SERVER)
PROFILES = tuple(MODULES)


async def record_profiles(spec: TargetSpec, profiles, *, claimed: set[str], run_timeout: float,
                          progress=None, isolate: bool = False) -> dict[str, ServerRecording]:
    """Record the given profiles concurrently: on one connection, or (`isolate`) each on its own.

    One connection is the default: a server process (or container, or HTTP session) started once instead of
    once per profile. Isolation costs a start per profile and buys that a server dying in one profile cannot
    take another's verdicts with it. `progress(recording, done, total)` is called as each profile finishes.
    """
    profiles = list(profiles)
    if not isolate and len(profiles) > 1:
        plans = {p: MODULES[p].PLAN for p in profiles}
        return _with_claim_hints(await record_shared(spec, plans, claimed=claimed, run_timeout=run_timeout,
                                                     recording=ServerRecording, progress=progress))
    out: dict[str, ServerRecording] = {}

    async def one(profile: str) -> None:
        out[profile] = await record(spec, profile, MODULES[profile].PLAN, claimed_by_option=profile in claimed,
                                    run_timeout=run_timeout, recording=ServerRecording)
        if progress is not None:
            progress(out[profile], len(out), len(profiles))

    async with anyio.create_task_group() as tg:
        for profile in profiles:
            tg.start_soon(one, profile)
    return _with_claim_hints(out)


def _with_claim_hints(recordings: dict[str, ServerRecording]) -> dict[str, ServerRecording]:
    """Each recording learns how its profile is claimed, for the reports of a profile left unclaimed."""
    for profile, rec in recordings.items():
        rec.how_to_claim = MODULES[profile].HOW_TO_CLAIM
    return recordings


def record_sync(spec: TargetSpec, profiles, *, claimed: set[str], run_timeout: float, progress=None,
                isolate: bool = False) -> dict[str, ServerRecording]:
    return anyio.run(lambda: record_profiles(spec, profiles, claimed=claimed, run_timeout=run_timeout,
                                             progress=progress, isolate=isolate))


# -- what the run's options name ---------------------------------------------------------------------------

def describe(run) -> dict:
    if run.target_kind == "wg-fixtures":
        return wg_fixtures.target_description(run.adapter, run.wg_fixtures)
    return TargetSpec.from_run(run).describe()


def record_run(run, profiles: list[str], claimed: set[str],
               say) -> dict[str, ServerRecording] | dict[str, wg_fixtures.WgFixtureRecording]:
    """The role's recorder (core/roles.py): every profile asked for, as the options say."""
    if run.target_kind == "wg-fixtures":
        return wg_fixtures.record_run(run.adapter, run.wg_fixtures, profiles, timeout=run.timeout, say=say)
    with TargetSpec.from_run(run).published() as spec:
        if say:
            say(f"recording {len(profiles)} profile(s) of {spec.command or spec.url or spec.docker_image}, "
                + ("each on its own connection" if run.isolate_profiles else "on one connection"))
        recordings = record_sync(spec, profiles, claimed=claimed, isolate=run.isolate_profiles,
                                 run_timeout=run.run_timeout, progress=progress_lines(say))
    for rec in recordings.values():
        rec.fixture_contract = run.fixture_contract
        rec.sdk = run.sdk
    return recordings
