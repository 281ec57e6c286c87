"""The one shape of a profile module, in every role: `conformance/<role>/<profile_with_underscores>.py`.

Such a module registers the checks of one profile in one role (`@check`, `wire_check`), and declares two
names its role's recorder reads:

- `PROFILE`: the profile's name, e.g. "execution-requirements";
- `PLAN`: what the recorder does for the profile. Its type is the role's: `client.session.ConnectionPlan`
  (what the target shows of the profile, the requests sent when it is claimed or not; the server and the
  gateway role), `host.common.ScenarioPlan` (the scenarios the host is run through), `gateway.replay.ReplayPlan`
  (the pipeline fixtures, replayed through an adapter).

`profile_modules` imports a role's modules from the role's profile list (core/roles.py), so the list is
written once and a module that does not follow the shape is an error at import, not a skipped profile.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any, Protocol


class ProfileModule(Protocol):
    PROFILE: str
    PLAN: Any


def module_name(profile: str) -> str:
    return profile.replace("-", "_")


def profile_modules(package: str, profiles: tuple[str, ...]) -> dict[str, ModuleType]:
    """{profile: module} for `package.<profile module>` of each profile, checked against the shape above."""
    out = {}
    for profile in profiles:
        module = importlib.import_module(f"{package}.{module_name(profile)}")
        if getattr(module, "PROFILE", None) != profile or not hasattr(module, "PLAN"):
            raise TypeError(f"{module.__name__} must define PROFILE = {profile!r} and PLAN")
        out[profile] = module
    return out
