"""The three roles, declared once: what the suite plays, which profiles each has checks for, its timeouts,
and where its recorder and checks live.

A role is the part the implementation under test plays; the suite plays every other part. Each role has
one package (`conformance/server/`, `conformance/host/`, `conformance/gateway/`) of one shape: one module
per profile (core/profile.py), `recording.py` (what a recording keeps; core/recording.py says what it
offers its judges), `record.py` (the recorder: the target the run's options name, one recording per
profile) and `common.py`; the checks are pure functions of the recordings. This module is plain data, so
the command line can validate a run without importing any check; the options are in conformance/options.py.
"""

from __future__ import annotations

import difflib
import importlib
from dataclasses import dataclass

from .model import PROFILES


@dataclass(frozen=True)
class Role:
    name: str
    suite_plays: str  # the parts the suite plays against the implementation
    profiles: tuple[str, ...]  # the profiles this role has checks for (a test pins it to the check modules)
    recorder: str  # "module:function" recording a run of this role; importing the module registers its checks
    default_timeout: float  # seconds for one response (server, gateway) or one turn's answer (host)
    missing_target: str  # the skip reason when no target of this role is given
    help: str  # the CLI subcommand's help
    official_mode: str  # the official conformance runner's name for the role (checks.json, expected failures)
    not_recorded: tuple[tuple[str, str], ...] = ()  # (profile or "*", what records it) when a run leaves it out
    default_run_timeout: float = 120.0  # seconds one profile's whole run may take
    # The names each profile module of the role defines, with their types (core/profile.py checks them at import).
    module_names: tuple[tuple[str, type], ...] = (("PROFILE", str), ("PLAN", object))

    @property
    def package(self) -> str:
        """The role's package, where its profile modules are (`conformance.server`)."""
        return self.recorder.partition(":")[0].rpartition(".")[0]

    def record(self, run, profiles: list[str], claimed: set[str], say) -> dict:
        """Record `profiles` of this role's target as the run's options say: {profile: recording}."""
        module, _, function = self.recorder.partition(":")
        return getattr(importlib.import_module(module), function)(run, profiles, claimed, say)

    def describe(self, run) -> dict:
        """What the run's options name as the target, for the reports (no secrets: header names only)."""
        module, _, _ = self.recorder.partition(":")
        return importlib.import_module(module).describe(run)

    def recordable(self, run, profiles) -> list[str]:
        """The profiles of `profiles` the run's options let the role's recorder record (all, unless its
        module says otherwise with a `recordable(run, profiles)`)."""
        module = importlib.import_module(self.recorder.partition(":")[0])
        only = getattr(module, "recordable", None)
        return list(only(run, profiles)) if only else list(profiles)

    def load(self) -> None:
        """Register the role's checks; a check id naming no declared role is an error here, at import."""
        from .model import REGISTRY

        importlib.import_module(self.recorder.partition(":")[0])
        stray = sorted(cid for cid, check in REGISTRY.items() if check.role not in ROLES)
        if stray:
            raise ValueError(f"check ids naming no role of core/roles.py: {', '.join(stray)}")

    def check_ids(self, target: str = "live") -> list[str]:
        """The role's checks that judge a target of this kind (model.Check.target)."""
        from .model import REGISTRY

        self.load()
        return sorted(cid for cid, check in REGISTRY.items() if check.role == self.name and check.target == target)

    def profile_error(self, profiles) -> str | None:
        """Why `--profile` names something this role cannot claim, or None."""
        bad = [p for p in profiles if p not in self.profiles]
        if not bad:
            return None
        problem = f"{bad[0]!r} is not a {self.name}-role profile"
        others = [role.name for role in ROLES.values() if bad[0] in role.profiles]
        if others:
            return f"{problem}: it is the {' and '.join(others)} role's"
        near = difflib.get_close_matches(bad[0], self.profiles, n=1, cutoff=0.6)
        if not near:  # a typo of another role's profile
            elsewhere = {p: role.name for role in ROLES.values() for p in role.profiles if role is not self}
            match = difflib.get_close_matches(bad[0], list(elsewhere), n=1, cutoff=0.6)
            if match:
                return f"{problem}; did you mean {match[0]!r}? it is the {elsewhere[match[0]]} role's"
        listed = f"they are: {', '.join(self.profiles)}"
        return f"{problem}; did you mean {near[0]!r}? ({listed})" if near else f"{problem}; {listed}"

    def why_not_recorded(self, profile: str) -> str:
        from .spelling import flag  # the hint names the option as the form in use spells it

        hints = dict(self.not_recorded)
        hint = hints.get(profile, hints.get("*"))
        if hint:
            hint = hint.format(command=flag("command", self.name), adapter=flag("adapter", self.name))
        return "not recorded in this run" + (f" ({hint})" if hint else "")


SERVER = Role(
    name="server",
    suite_plays="the client",
    profiles=tuple(p for p in PROFILES if p != "sequential-pipeline"),
    recorder="conformance.server.record:record_run",
    default_timeout=10.0,
    help="check an MCP server",
    official_mode="server",
    missing_target="no server target: give --mcp-server-command, --mcp-server-url, --mcp-server-docker-image or "
                   "--mcp-server-adapter with --mcp-wg-fixtures",
    # HOW_TO_CLAIM: what a server shows to claim the profile, for the reports of a profile left unclaimed
    module_names=(("PROFILE", str), ("PLAN", object), ("HOW_TO_CLAIM", str)),
)
HOST = Role(
    name="host",
    suite_plays="the model (an OpenAI-compatible endpoint) and every MCP server the host connects to",
    profiles=tuple(p for p in PROFILES if p != "sequential-pipeline"),
    recorder="conformance.host.record:record_run",
    default_timeout=20.0,
    help="check a host application (an MCP client with an LLM loop)",
    official_mode="client",
    missing_target="no host target: give --mcp-host-command",
)
GATEWAY = Role(
    name="gateway",
    suite_plays="the upstream server and the downstream client; the pipeline fixtures through an adapter",
    # the transparency profiles first (recorded through a running gateway), the pipeline last (an adapter)
    profiles=tuple(p for p in PROFILES if p != "sequential-pipeline") + ("sequential-pipeline",),
    recorder="conformance.gateway.record:record_run",
    default_timeout=10.0,
    help="check a gateway: transparency (--command) and/or pipeline semantics (--adapter)",
    official_mode="gateway",
    missing_target="no gateway target: give --mcp-gateway-command or --mcp-gateway-adapter",
    not_recorded=(("sequential-pipeline", "pipeline semantics need {adapter}"),
                  ("*", "transparency needs {command}")),
)
# The one declaration of the role names and their order; everything else that names the roles derives from it.
ROLES: dict[str, Role] = {role.name: role for role in (SERVER, HOST, GATEWAY)}


def load_all() -> None:
    """Register every role's checks (for `list`, baselines and reports that name any check)."""
    for role in ROLES.values():
        role.load()
