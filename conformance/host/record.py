"""Host role, recording: run the scenarios a host needs and group the runs by profile (into `recording.HostRecording`).

One module per profile (preprocessor_tools, execution_requirements,
context_middleware, augmentation, interceptors), each naming its scenarios (scenarios.yaml)
and its checks. `record_hosts` runs each needed scenario once (as many at a time
as there are CPUs: each run is a host process of its own), then groups the runs
into one `HostRecording` per profile, in the profile's scenario order whatever
order the runs finished in; the checks are pure functions of those recordings.
`scenarios_read` says which scenarios each check's judge cites, so that a run
judging a few checks records only their scenarios.
"""

from __future__ import annotations

import contextlib
import os
from functools import lru_cache

import anyio

from ..core.profile import profile_modules
from ..core.roles import HOST
from ..core.spelling import flag
from ..targets import TargetSpec
from .common import scenarios
from .harness import HostRun, run_scenario
from .recording import HostRecording

MODULES = profile_modules(HOST)
PROFILES = tuple(MODULES)
DEFAULT_CLAIMS = ("preprocessor-tools", "execution-requirements", "context-middleware")
# Optional features (--claim), each of one profile: its checks run only when the host claims it.
FEATURES = {feature: profile for profile, module in MODULES.items() for feature in module.PLAN.features}


def default_jobs() -> int:
    """Scenario runs at a time: one per CPU this process may use (a run is mostly its host's start-up CPU)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


async def record_hosts(spec: TargetSpec, profiles, *, claimed: set[str], run_timeout: float = HOST.default_run_timeout,
                       marker: str | None = None, features=frozenset(), progress=None, jobs: int | None = None,
                       only=None) -> dict[str, HostRecording]:
    """Run the scenarios of the given profiles (and of the claimed `features` of those) against the host `spec`
    names (its command, environment and turn timeout); one recording per profile. `jobs` bounds the runs at a
    time (default: the CPU count); `only`, when given, names the scenarios to run (the others are left out of
    the recordings, and a check citing one fails as not observed)."""
    profiles = list(profiles)
    by_option = bool(claimed)
    claims = set(claimed) if claimed else set(DEFAULT_CLAIMS)
    features = frozenset(features)
    wanted = [sid for p in profiles if p in claims for sid in MODULES[p].PLAN.scenarios_for(features)
              if only is None or sid in only]
    runs: dict[str, HostRun] = {}
    limiter = anyio.CapacityLimiter(jobs or default_jobs())

    silent: list[HostRun] = []  # a run that answered no turn while no run had answered one

    async def one(sid: str) -> None:
        async with limiter:
            if silent:  # a command that answered no turn is likely no host: say so now, not after every scenario
                runs[sid] = HostRun(sid, "", spec.given("command", spec.command), fatal=f"not run: the host answered no turn of "
                                                             f"{silent[0].scenario}")
            else:
                runs[sid] = await run_scenario(spec, scenarios()[sid], run_timeout=run_timeout, marker=marker)
                if not runs[sid].answered() and not any(r.answered() for r in runs.values()):
                    silent.append(runs[sid])
        show_finished()

    shown = 0

    def show_finished() -> None:
        """Progress in the plan's order, whatever order the runs finish in: a run is shown once those before it are."""
        nonlocal shown
        while shown < len(wanted) and wanted[shown] in runs:
            shown += 1
            if progress is not None:
                progress(runs[wanted[shown - 1]], shown, len(wanted))

    async with anyio.create_task_group() as tg:
        for sid in wanted:
            tg.start_soon(one, sid)
    out = {}
    for profile in profiles:
        rec = HostRecording(profile, spec.describe())
        if profile in claims:
            rec.claimed, rec.claimed_by = True, "option" if by_option else "default"
            rec.claim_reason = f"claimed with {flag('profile')}" if by_option else "claimed by default for hosts"
            rec.runs = {sid: runs[sid] for sid in MODULES[profile].PLAN.scenarios_for(features) if sid in runs}
            rec.features = frozenset(f for f in features if FEATURES.get(f) == profile)
            broken = [r.unavailable for r in rec.runs.values() if r.unavailable]
            rec.unavailable = broken[0] if broken else None
        else:
            rec.claimed, rec.claimed_by = False, None
            rec.claim_reason = (f"not named with {flag('profile')}" if by_option
                                else f"hosts claim {profile} only with {flag('profile')} {profile}")
        out[profile] = rec
    return out


def record_hosts_sync(spec: TargetSpec, profiles, **kw) -> dict[str, HostRecording]:
    return anyio.run(lambda: record_hosts(spec, profiles, **kw))


@lru_cache(maxsize=1)
def scenarios_read() -> dict[str, tuple[str, ...]]:
    """{host check id: the scenarios its judge cites, in citing order}: the recording a verdict needs.

    Derived from the judges, not declared beside them: each judge is run once on a probe recording of its
    profile in which every scenario (and every optional feature's) ran and showed nothing, no turn and no
    request. A judge cites a scenario before it reads it, and on an empty run it reads nothing that stops it
    before its next citation; tests/test_host_mutants.py holds this to what every verdict of a full run cites."""
    from ..core.model import REGISTRY

    out = {}
    for cid, check in sorted(REGISTRY.items()):
        if check.role != HOST.name:
            continue
        plan = MODULES[check.profile].PLAN
        rec = HostRecording(check.profile, {"kind": "probe"}, features=frozenset(plan.features))
        rec.runs = {sid: HostRun(sid, "probe", "") for sid in plan.scenarios_for(plan.features)}
        with contextlib.suppress(Exception):  # NotObserved, Violation, NotApplicable: only the citations count
            check.judge(rec)
        out[cid] = tuple(rec.cited)
    return out


def scenarios_for_checks(check_ids) -> set[str]:
    """The scenarios the given host checks cite: all a run judging only them needs to record."""
    read = scenarios_read()
    return {sid for cid in check_ids for sid in read[cid]}


def describe(run) -> dict:
    return TargetSpec.from_run(run).describe()


def record_run(run, profiles: list[str], claimed: set[str], say) -> dict[str, HostRecording]:
    """The role's recorder (core/roles.py): the host through the scenarios of every profile asked for."""
    if say:
        say(f"running the host through its scenarios: {run.command}")

    shown = 0  # lines printed: the scenarios not run are counted once at the end, so the numbers never jump

    def progress(host_run, done, total):
        nonlocal shown
        if say and not (host_run.fatal or "").startswith("not run"):
            shown += 1
            trouble = f"; {host_run.fatal}" if host_run.fatal else ""
            say(f"  [{shown}/{total}] {host_run.scenario}: {host_run.answered()}/{len(host_run.turns)} turn(s) "
                f"answered, {len(host_run.model)} model request(s), {host_run.duration:.1f} s{trouble}")

    features = set(getattr(run, "claim", None) or ())
    recordings = record_hosts_sync(TargetSpec.from_run(run), profiles, claimed=claimed, run_timeout=run.run_timeout,
                                   features=features, progress=progress)
    not_run = {sid: r.fatal for rec in recordings.values() for sid, r in rec.runs.items()
               if (r.fatal or "").startswith("not run")}
    if say and not_run:
        say(f"  {len(not_run)} more scenario(s) {next(iter(not_run.values()))}")
    return recordings
