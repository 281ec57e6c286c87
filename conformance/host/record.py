"""Host role, recording: run the scenarios a host needs and group the runs by profile (into `recording.HostRecording`).

One module per profile (preprocessor_tools, execution_requirements,
context_middleware, augmentation, interceptors), each naming its scenarios (scenarios.yaml)
and its checks. `record_hosts` runs each needed scenario once (two at a time),
then groups the runs into one `HostRecording` per profile; the checks are pure
functions of those recordings.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

import anyio

from ..core.profile import profile_modules
from ..core.roles import HOST
from ..core.spelling import flag
from ..targets import TargetSpec
from .harness import HostRun, run_scenario
from .recording import HostRecording

MODULES = profile_modules(HOST)
PROFILES = tuple(MODULES)
DEFAULT_CLAIMS = ("preprocessor-tools", "execution-requirements", "context-middleware")
# Optional features (--claim), each of one profile: its checks run only when the host claims it.
FEATURES = {feature: profile for profile, module in MODULES.items() for feature in module.PLAN.features}
CONCURRENCY = 2


@lru_cache(maxsize=1)
def scenarios() -> dict[str, dict]:
    import yaml

    text = (resources.files("conformance.host") / "scenarios.yaml").read_text(encoding="utf-8")
    return {s["id"]: s for s in yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))}


async def record_hosts(spec: TargetSpec, profiles, *, claimed: set[str], run_timeout: float = HOST.default_run_timeout,
                       marker: str | None = None, features=frozenset(), progress=None) -> dict[str, HostRecording]:
    """Run the scenarios of the given profiles (and of the claimed `features` of those) against the host `spec`
    names (its command, environment and turn timeout); one recording per profile."""
    profiles = list(profiles)
    by_option = bool(claimed)
    claims = set(claimed) if claimed else set(DEFAULT_CLAIMS)
    features = frozenset(features)
    wanted = [sid for p in profiles if p in claims for sid in MODULES[p].PLAN.scenarios_for(features)]
    runs: dict[str, HostRun] = {}
    limiter = anyio.CapacityLimiter(CONCURRENCY)

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
        if progress is not None:
            progress(runs[sid], len(runs), len(wanted))

    async with anyio.create_task_group() as tg:
        for sid in wanted:
            tg.start_soon(one, sid)
    out = {}
    for profile in profiles:
        rec = HostRecording(profile, spec.describe())
        if profile in claims:
            rec.claimed, rec.claimed_by = True, "option" if by_option else "default"
            rec.claim_reason = f"claimed with {flag('profile')}" if by_option else "claimed by default for hosts"
            rec.runs = {sid: runs[sid] for sid in MODULES[profile].PLAN.scenarios_for(features)}
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
