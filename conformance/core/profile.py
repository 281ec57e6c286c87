"""The one shape of a profile module, in every role: `conformance/<role>/<profile_with_underscores>.py`.

Such a module registers the checks of one profile in one role (`@check`, `wire_check`), and declares the
names its role's recorder reads (the role's `module_names`, core/roles.py):

- `PROFILE`: the profile's name, e.g. "execution-requirements";
- `PLAN`: what the recorder does for the profile. Its type is the role's: `client.session.ConnectionPlan`
  (what the target shows of the profile, the requests sent when it is claimed or not; the server and the
  gateway role), `host.common.ScenarioPlan` (the scenarios the host is run through), `gateway.replay.ReplayPlan`
  (the pipeline fixtures, replayed through an adapter);
- the server role's also `HOW_TO_CLAIM`: what a server shows to claim the profile, for the reports of a
  profile left unclaimed.

`profile_modules` imports a role's modules from the role's profile list (core/roles.py), so the list is
written once and a module that does not follow the shape is an error at import, not a skipped profile or a
missing name at record time.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .roles import Role


def module_name(profile: str) -> str:
    return profile.replace("-", "_")


def profile_modules(role: Role) -> dict[str, ModuleType]:
    """{profile: module} for the role's module of each of its profiles, checked against its `module_names`."""
    out = {}
    for profile in role.profiles:
        module = importlib.import_module(f"{role.package}.{module_name(profile)}")
        if problem := shape_problem(module, profile, role.module_names):
            raise TypeError(problem)
        out[profile] = module
    return out


def shape_problem(module: ModuleType, profile: str, names: tuple[tuple[str, type], ...]) -> str | None:
    """Why `module` is not a profile module of `profile` with these (name, type) pairs, or None."""
    wanted = ", ".join(f"{name} ({kind.__name__})" for name, kind in names)
    missing = [name for name, kind in names if not isinstance(getattr(module, name, None), kind)
               or getattr(module, name, None) is None]
    if missing:
        return f"{module.__name__} must define {wanted}: {', '.join(missing)} missing or not of its type"
    if module.PROFILE != profile:
        return f"{module.__name__} must define PROFILE = {profile!r}, not {module.PROFILE!r}"
    return None
