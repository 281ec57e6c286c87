"""The three roles, declared once: what the suite plays, which profiles each has checks for, how a run names
its target, and where its checks live.

A role is the part the implementation under test plays; the suite plays every other part. Each role has
one package (`conformance/server/`, `conformance/host/`, `conformance/gateway/`) with one module per
profile, a `record` step that produces one recording per profile (conformance/core/recording.py says what a
recording offers its judges), and checks that are pure functions of those recordings. This module is
plain data, so the command line can validate a run without importing any check.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Role:
    name: str
    suite_plays: str  # the parts the suite plays against the implementation
    profiles: tuple[str, ...]  # the profiles this role has checks for (a test pins it to the check modules)
    check_modules: tuple[str, ...]  # importing these registers the role's checks
    target_options: tuple[str, ...]  # pytest option dests that name a target of this role
    default_timeout: float  # seconds for one response (server, gateway) or one turn's answer (host)
    missing_target: str  # the skip reason when no target of this role is given
    not_recorded: tuple[tuple[str, str], ...] = ()  # (profile or "*", what records it) when a run leaves it out

    def given(self, option: Callable[[str], object]) -> bool:
        """Whether the run names a target of this role (`option` reads a pytest option by dest)."""
        return any(option(dest) for dest in self.target_options)

    def load(self) -> None:
        """Register the role's checks."""
        for module in self.check_modules:
            importlib.import_module(module)

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
        return f"{bad[0]!r} is not a {self.name}-role profile; they are: {', '.join(self.profiles)}"

    def why_not_recorded(self, profile: str) -> str:
        hints = dict(self.not_recorded)
        hint = hints.get(profile, hints.get("*"))
        return "not recorded in this run" + (f" ({hint})" if hint else "")


SERVER = Role(
    name="server",
    suite_plays="the client",
    profiles=("preprocessor-tools", "execution-requirements", "context-middleware", "augmentation", "interceptors"),
    check_modules=("conformance.server.record", "conformance.server.wg_fixtures"),
    target_options=("mcpx_server_command", "mcpx_server_url", "mcpx_server_docker_image", "mcpx_server_adapter"),
    default_timeout=10.0,
    missing_target="no server target: give --mcp-server-command, --mcp-server-url, --mcp-server-docker-image or "
                   "--mcp-server-adapter with --mcp-wg-fixtures",
)
HOST = Role(
    name="host",
    suite_plays="the model (an OpenAI-compatible endpoint) and every MCP server the host connects to",
    profiles=("preprocessor-tools", "execution-requirements", "context-middleware", "augmentation", "interceptors"),
    check_modules=("conformance.host.record",),
    target_options=("mcpx_host_command",),
    default_timeout=20.0,
    missing_target="no host target: give --mcp-host-command",
)
GATEWAY = Role(
    name="gateway",
    suite_plays="the upstream server and the downstream client; the pipeline fixtures through an adapter",
    profiles=("preprocessor-tools", "execution-requirements", "context-middleware", "augmentation",
              "sequential-pipeline"),
    check_modules=("conformance.gateway.record", "conformance.gateway.sequential_pipeline"),
    target_options=("mcpx_gateway_command", "mcpx_gateway_adapter"),
    default_timeout=10.0,
    missing_target="no gateway target: give --mcp-gateway-command or --mcp-gateway-adapter",
    not_recorded=(("sequential-pipeline", "pipeline semantics need --mcp-gateway-adapter"),
                  ("*", "transparency needs --mcp-gateway-command")),
)
ROLES: dict[str, Role] = {role.name: role for role in (SERVER, HOST, GATEWAY)}


def selected(option: Callable[[str], object]) -> Role | None:
    """The role whose target the run names; a host or gateway target wins over a server target."""
    for role in (HOST, GATEWAY, SERVER):
        if role.given(option):
            return role
    return None


def load_all() -> None:
    """Register every role's checks (for `list`, baselines and reports that name any check)."""
    for role in ROLES.values():
        role.load()
