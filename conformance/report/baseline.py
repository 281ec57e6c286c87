"""Expected-failure baselines: known failures that do not fail the run, and go stale when fixed.

File format (YAML): a list of entries, or a mapping of entry -> reason. An entry
is a check id (`profile/role/slug`) or a whole profile id.

- A listed check that fails (or warns under --strict) is reported `xfail` and
  does not fail the run.
- A listed check that passes is `stale` and fails the run, so a fixed bug
  cannot stay hidden behind its baseline; a listed profile is stale when none
  of its checks fails.
- An entry that names no known check or profile is a usage error: a renamed
  check cannot hide.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import yaml

from ..core.model import PROFILES, REGISTRY


class BaselineError(ValueError):
    pass


@dataclass
class Baseline:
    checks: dict[str, str] = field(default_factory=dict)  # check id -> reason
    profiles: dict[str, str] = field(default_factory=dict)  # profile id -> reason

    def reason_for(self, check_id: str) -> str | None:
        if check_id in self.checks:
            return self.checks[check_id]
        return self.profiles.get(check_id.split("/")[0])

    def apply(self, outcome: str, check_id: str, strict: bool) -> tuple[str, str | None]:
        """The outcome after the baseline, and the reason it changed (if it did)."""
        reason = self.reason_for(check_id)
        if reason is None:
            return outcome, None
        failing = outcome == "fail" or (strict and outcome == "warn")
        if failing:
            return "xfail", f"expected failure ({reason})"
        if outcome in ("pass", "info") and check_id in self.checks:
            return "stale", f"listed in the expected-failures file ({reason}) but passes now: remove the entry"
        return outcome, None

    def stale_profiles(self, outcomes: dict[str, str]) -> list[str]:
        """Profiles listed whole of which no check failed (outcomes: check id -> outcome after apply)."""
        out = []
        for profile in self.profiles:
            mine = [o for cid, o in outcomes.items() if cid.split("/")[0] == profile]
            if mine and "xfail" not in mine:
                out.append(profile)
        return out


def load(path: str) -> Baseline:
    try:
        with open(path, encoding="utf-8") as handle:
            data = yaml.safe_load(handle)
    except OSError as exc:
        raise BaselineError(f"cannot read expected-failures file {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise BaselineError(f"expected-failures file {path} is not YAML: {exc}") from None
    if data is None:
        data = []
    if isinstance(data, list):
        entries = {str(item): "listed" for item in data}
    elif isinstance(data, dict):
        entries = {str(k): str(v) if v else "listed" for k, v in data.items()}
    else:
        raise BaselineError(f"expected-failures file {path}: a list or a mapping of check ids, please")
    baseline = Baseline()
    for entry, reason in entries.items():
        if entry in REGISTRY:
            baseline.checks[entry] = reason
        elif entry in PROFILES:
            baseline.profiles[entry] = reason
        else:
            raise BaselineError(f"expected-failures file {path}: {entry!r} is no check id or profile "
                                f"(see `mcp-ext-conformance list`)")
    return baseline
