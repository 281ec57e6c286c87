"""TargetSpec: how to reach the implementation under test, and a fresh connection to it.

A target option (a row of conformance/options.py marked `spec`) is the field of the same name here, in every
role: `TargetSpec.from_run(run)` fills the fields by matching names, and the connection reads them in
`connect()`. Adding one is a row, a field and the connection's use of it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import shlex
from dataclasses import dataclass, field
from typing import Any

from ..core.roles import SERVER
from .base import Connection
from .stdio import StdioConnection


@dataclass
class TargetSpec:
    kind: str  # "stdio" | "http" | "docker"
    command: str | None = None
    url: str | None = None
    docker_image: str | None = None
    docker_port: int | None = None  # docker: the container serves Streamable HTTP at this port (published())
    docker_command: str | None = None  # docker with docker_port: the command the container runs
    no_network: bool = False  # docker: True runs the container without network
    connection_mode: str = "handshake"  # "handshake" (initialize) or "2026-07-28" (server/discover)
    env: dict[str, str] = field(default_factory=dict)
    secret_env: dict[str, str] = field(default_factory=dict, repr=False)  # as env; its values are secrets
    # Seconds for any one response. A spec built by hand reaches a server; from_run gives the run's role's.
    timeout: float = SERVER.default_timeout
    header: dict[str, str] = field(default_factory=dict, repr=False)  # HTTP: sent with every request; secret
    ca_bundle: str | None = None  # HTTP: verify https against these CA certificates
    max_message_bytes: int = 16 * 1024 * 1024

    @classmethod
    def from_run(cls, run) -> "TargetSpec":
        """The target the run's options name (`run`: conformance.options.Run): each target option of the run's
        role fills the field of its name; the kind follows from what is given (a URL: HTTP, a command: stdio,
        else an image)."""
        values = run.target_values()
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - names)
        if unknown:  # a row marked `spec` with no field: the option would never reach the target
            raise TypeError(f"TargetSpec has no field for the target option(s) {', '.join(unknown)}")
        given = {name: value for name, value in values.items() if value is not None}
        kind = "http" if given.get("url") else "stdio" if given.get("command") else "docker"
        return cls(kind, **given)

    @property
    def environment(self) -> dict[str, str]:
        """What a started target gets beyond the scrubbed environment: env, then secret_env."""
        return {**self.env, **self.secret_env}

    def describe(self) -> dict:
        out: dict[str, Any] = {"kind": self.kind}
        if self.connection_mode != "handshake":
            out["mode"] = self.connection_mode
        if self.command:
            out["command"] = self.command
        if self.url:
            out["url"] = self.url
        if self.header:  # names only: values are often credentials
            out["headers"] = sorted(self.header)
        if self.docker_image:
            out["image"] = self.docker_image
        return out

    @contextlib.contextmanager
    def published(self):
        """This spec, or for a Docker target serving HTTP (`docker_port`) one container for the run reached over
        its published port (TargetUnavailable when it does not start)."""
        if self.kind != "docker" or self.docker_port is None:
            yield self
            return
        from .docker import PublishedContainer

        command = shlex.split(self.docker_command) if self.docker_command else None
        with PublishedContainer(self.given("docker_image", self.docker_image), self.docker_port, command=command,
                                env=self.environment) as container:
            yield dataclasses.replace(self, kind="http", url=container.url)

    def connect(self) -> Connection:
        common: dict[str, Any] = dict(timeout=self.timeout, max_message_bytes=self.max_message_bytes,
                                      mode=self.connection_mode)
        if self.kind == "stdio":
            return StdioConnection(self.given("command", self.command), env=self.environment, **common)
        if self.kind == "http":
            from .http import HttpConnection  # httpx costs a tenth of a second to import: only when used

            return HttpConnection(self.given("url", self.url), header=self.header, ca_bundle=self.ca_bundle,
                                  **common)
        if self.kind == "docker":
            from .docker import DockerConnection

            return DockerConnection(self.given("docker_image", self.docker_image), env=self.environment,
                                    network=not self.no_network, **common)
        raise ValueError(f"unknown target kind {self.kind!r}")

    def given(self, name: str, value: str | None) -> str:
        """The field this kind of target is reached by, which whoever built the spec set."""
        if value is None:
            raise ValueError(f"a {self.kind} target needs its {name}")
        return value
