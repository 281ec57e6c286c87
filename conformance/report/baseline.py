"""Expected-failure baselines: known failures that do not fail the run, and go stale when fixed.

File format (YAML), in one of two forms:

- The suite's own: a list of entries, or a mapping of entry -> reason. An entry is a check id
  (`profile/role/slug`) or a whole profile id.
- The official MCP conformance suite's (report/official.py): a mapping of mode to a list of entries, each a
  scenario (`<role>-<profile>`, one profile in one role) or `<scenario>:<check>` (the check's slug, the `id`
  of our checks.json, `sep-<N>-<slug>` for a SEP's profile, or its full id). The modes are `server` and
  `client` (the host role: a host is the MCP client), and `host` and `gateway`, which the official suite has
  no mode for and ignores. As there, a scenario listed whole and per check is contradictory, and
  `- scenario: check` (YAML for a mapping) is refused with the fix. A file shared with the official suite
  names its scenarios too (`server-initialize`, `tools-call-error`) and may have keys of its own: as the
  official runner ignores the scenarios it does not run, entries naming none of this suite's scenarios, and
  other top-level keys, are ignored, and the run says so in one line (`ignored_note`).

Either form may record the catalog revisions it was written against, `catalog: {profile: revision}` (the
digests `mcp-ext-conformance list --json` and results.json show; core/provenance.py): used with a catalog
that cites other revisions of a profile's sources, the run says so (`revision_drift`).

- A listed check that fails (or warns under --strict) is reported `xfail` and
  does not fail the run.
- A listed check that passes is `stale` and fails the run, so a fixed bug
  cannot stay hidden behind its baseline; a listed profile (or scenario) is stale when none
  of its checks fails.
- An entry that names no known check or profile is a usage error: a renamed
  check cannot hide.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import yaml

from ..core.model import PROFILES, REGISTRY
from ..core.roles import ROLES
from .official import CATALOG_KEY, check_id, slug_of

# The official runner's mode of each role, and each role's own name too (a `host:` key reads as `client:`).
OFFICIAL_MODES = {key: name for name, role in ROLES.items() for key in (role.official_mode, name)}


class BaselineError(ValueError):
    pass


@dataclass
class Baseline:
    checks: dict[str, str] = field(default_factory=dict)  # check id -> reason
    profiles: dict[str, str] = field(default_factory=dict)  # profile id -> reason
    scenarios: dict[tuple[str, str], str] = field(default_factory=dict)  # (profile, role) -> reason
    written_against: dict[str, str] = field(default_factory=dict)  # profile -> catalog revision
    names: dict[tuple[str, str], str] = field(default_factory=dict)  # (profile, role) -> the entry as written
    ignored: list[str] = field(default_factory=list)  # entries and keys of the official suite's own, as written

    def reason_for(self, check_id: str) -> str | None:
        if check_id in self.checks:
            return self.checks[check_id]
        profile, role = check_id.split("/")[:2]
        if (profile, role) in self.scenarios:
            return self.scenarios[(profile, role)]
        return self.profiles.get(profile)

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
        """Profiles and scenarios listed whole of which no check failed (outcomes: check id -> outcome after
        apply), by the name the file gives them."""
        out = []
        for profile in self.profiles:
            mine = [o for cid, o in outcomes.items() if cid.split("/")[0] == profile]
            if mine and "xfail" not in mine:
                out.append(profile)
        for (profile, role) in self.scenarios:
            mine = [o for cid, o in outcomes.items() if cid.split("/")[:2] == [profile, role]]
            if mine and "xfail" not in mine:
                out.append(self.names.get((profile, role), f"{role}-{profile}"))
        return out

    def listed_profiles(self) -> set[str]:
        return ({cid.split("/")[0] for cid in self.checks} | set(self.profiles)
                | {profile for profile, _ in self.scenarios})

    def ignored_note(self) -> list[str]:
        """One sentence naming what of a shared file this suite ignored (empty when nothing was)."""
        if not self.ignored:
            return []
        shown = ", ".join(self.ignored[:4]) + (f" and {len(self.ignored) - 4} more" if len(self.ignored) > 4 else "")
        return [f"note: ignored {len(self.ignored)} expected-failures entries this suite does not run (as the "
                f"official runner does): {shown}"]

    def revision_drift(self, current: dict[str, str]) -> list[str]:
        """One sentence naming the listed profiles whose catalog revision differs from the one the file
        records (empty when none does, or the file records none)."""
        moved = [f"{profile} ({then}, now {current[profile]})" for profile, then in sorted(self.written_against.items())
                 if profile in current and current[profile] != then and profile in self.listed_profiles()]
        if not moved:
            return []
        return [f"the expected-failures file was written against other catalog revisions of {', '.join(moved)}: "
                f"the catalog cites other revisions of their sources now, so its entries may be out of date"]


def _official_scenario(name: str, role: str) -> str | None:
    """The profile a scenario `<role>-<profile>` of the role names (None: not one of this suite's)."""
    prefix, profiles = f"{role}-", ROLES[role].profiles
    if name.startswith(prefix) and name[len(prefix):] in profiles:
        return name[len(prefix):]
    return None


def _official_entries(path: str, data: dict, baseline: Baseline) -> None:
    for mode, entries in data.items():
        if mode == CATALOG_KEY:
            continue
        if mode not in OFFICIAL_MODES:  # a key of the official suite's own: it reads `server` and `client`
            baseline.ignored.append(f"{mode}:")
            continue
        role = OFFICIAL_MODES[mode]
        where = f"expected-failures file {path}, {mode!r}"
        if entries is None:
            continue
        if not isinstance(entries, list):
            raise BaselineError(f"{where}: a list of scenarios, please")
        whole, per_check = set(), []
        for entry in entries:
            if isinstance(entry, dict):
                hint = (f" Did you write '- {next(iter(entry))}: {next(iter(entry.values()))}'? Remove the space "
                        f"after the colon." if len(entry) == 1 else "")
                raise BaselineError(f"{where}: entry {entry!r} is not '<scenario>' or '<scenario>:<check>'.{hint}")
            text = str(entry)
            scenario, colon, check = text.partition(":")
            profile = _official_scenario(scenario, role)
            if profile is None:  # an official scenario (or another suite's): not run here
                baseline.ignored.append(text)
                continue
            if not colon:
                whole.add(scenario)
                baseline.scenarios[(profile, role)] = "listed"
                baseline.names[(profile, role)] = scenario
                continue
            full = check if check.count("/") == 2 else f"{profile}/{role}/{slug_of(profile, check)}"
            if full not in REGISTRY or full.split("/")[:2] != [profile, role]:
                raise BaselineError(f"{where}: {text!r}: scenario {scenario} has no check {check!r} "
                                    f"(see `mcp-ext-conformance list --role {role} --profile {profile}`)")
            baseline.checks[full] = "listed"
            per_check.append((scenario, text))
        for scenario, text in per_check:
            if scenario in whole:
                raise BaselineError(f"{where}: {scenario!r} is listed whole, so {text!r} is redundant: remove one")


def _catalog(path: str, data) -> dict[str, str]:
    if data is None:
        return {}
    if not isinstance(data, dict) or not all(str(k) in PROFILES for k in data):
        raise BaselineError(f"expected-failures file {path}: {CATALOG_KEY!r} maps profiles to the catalog "
                            f"revisions the file was written against (see `mcp-ext-conformance list --json`)")
    return {str(k): str(v) for k, v in data.items()}


def is_official(data) -> bool:
    """Whether a parsed file is in the official suite's form (modes mapping to lists; no check id or profile
    is named like a mode, so one mode key decides)."""
    return isinstance(data, dict) and bool(set(data) & set(OFFICIAL_MODES))


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
    baseline = Baseline()
    if isinstance(data, dict):
        baseline.written_against = _catalog(path, data.get(CATALOG_KEY))
    if is_official(data):
        _official_entries(path, data, baseline)
        return baseline
    if isinstance(data, list):
        entries = {str(item): "listed" for item in data}
    elif isinstance(data, dict):
        entries = {str(k): str(v) if v else "listed" for k, v in data.items() if k != CATALOG_KEY}
    else:
        raise BaselineError(f"expected-failures file {path}: a list or a mapping of check ids, please")
    for entry, reason in entries.items():
        if entry in REGISTRY:
            baseline.checks[entry] = reason
        elif entry in PROFILES:
            baseline.profiles[entry] = reason
        else:
            hint = (f"; the official form lists scenarios under a mode ({', '.join(OFFICIAL_MODES)}): "
                    f"`server: [server-interceptors]`" if entry in ROLES or entry == "client" else "")
            raise BaselineError(f"expected-failures file {path}: {entry!r} is no check id or profile "
                                f"(see `mcp-ext-conformance list`){hint}")
    return baseline


def translate(baseline: Baseline) -> dict:
    """The baseline in the official form (mode -> entries), with the revisions it records."""
    out: dict[str, list[str]] = {}
    mode_of = {name: role.official_mode for name, role in ROLES.items()}
    for (profile, role) in baseline.scenarios:
        out.setdefault(mode_of[role], []).append(f"{role}-{profile}")
    for profile in baseline.profiles:
        for role in ROLES:
            if any(cid.split("/")[:2] == [profile, role] for cid in REGISTRY):
                out.setdefault(mode_of[role], []).append(f"{role}-{profile}")
    for cid in baseline.checks:
        profile, role, slug = cid.split("/")
        if (profile, role) not in baseline.scenarios and profile not in baseline.profiles:
            out.setdefault(mode_of[role], []).append(f"{role}-{profile}:{check_id(profile, slug)}")
    result: dict = {mode: sorted(entries) for mode, entries in out.items()}
    if baseline.written_against:
        result[CATALOG_KEY] = dict(baseline.written_against)
    return result
