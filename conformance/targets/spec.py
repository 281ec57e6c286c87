"""TargetSpec: how to reach the implementation under test, and a fresh connection to it."""

from __future__ import annotations

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
    image: str | None = None
    network: bool = True  # docker: False runs the container without network
    mode: str = "handshake"  # connection mode: "handshake" (initialize) or "2026-07-28" (server/discover)
    env: dict[str, str] = field(default_factory=dict)
    timeout: float = SERVER.default_timeout  # seconds for any one response
    headers: dict[str, str] = field(default_factory=dict, repr=False)  # HTTP: sent with every request; secret
    ca_bundle: str | None = None  # HTTP: verify https against these CA certificates
    max_message_bytes: int = 16 * 1024 * 1024

    def describe(self) -> dict:
        out: dict[str, Any] = {"kind": self.kind}
        if self.mode != "handshake":
            out["mode"] = self.mode
        if self.command:
            out["command"] = self.command
        if self.url:
            out["url"] = self.url
        if self.headers:  # names only: values are often credentials
            out["headers"] = sorted(self.headers)
        if self.image:
            out["image"] = self.image
        return out

    def connect(self) -> Connection:
        common: dict[str, Any] = dict(timeout=self.timeout, max_message_bytes=self.max_message_bytes, mode=self.mode)
        if self.kind == "stdio":
            return StdioConnection(self._given("command", self.command), env=self.env, **common)
        if self.kind == "http":
            from .http import HttpConnection  # httpx costs a tenth of a second to import: only when used

            return HttpConnection(self._given("url", self.url), headers=self.headers, ca_bundle=self.ca_bundle,
                                  **common)
        if self.kind == "docker":
            from .docker import DockerConnection

            return DockerConnection(self._given("image", self.image), env=self.env, network=self.network, **common)
        raise ValueError(f"unknown target kind {self.kind!r}")

    def _given(self, name: str, value: str | None) -> str:
        """The field this kind of target is reached by, which whoever built the spec set."""
        if value is None:
            raise ValueError(f"a {self.kind} target needs its {name}")
        return value
