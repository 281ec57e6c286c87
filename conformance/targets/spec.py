"""TargetSpec: how to reach the implementation under test, and a fresh connection to it."""

from __future__ import annotations

from dataclasses import dataclass, field

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
    request_timeout: float = 10.0
    max_message_bytes: int = 16 * 1024 * 1024

    def describe(self) -> dict:
        out = {"kind": self.kind}
        if self.mode != "handshake":
            out["mode"] = self.mode
        if self.command:
            out["command"] = self.command
        if self.url:
            out["url"] = self.url
        if self.image:
            out["image"] = self.image
        return out

    def connect(self) -> Connection:
        common = dict(request_timeout=self.request_timeout, max_message_bytes=self.max_message_bytes, mode=self.mode)
        if self.kind == "stdio":
            return StdioConnection(self.command, env=self.env, **common)
        if self.kind == "http":
            from .http import HttpConnection  # httpx costs a tenth of a second to import: only when used

            return HttpConnection(self.url, **common)
        if self.kind == "docker":
            from .docker import DockerConnection

            return DockerConnection(self.image, env=self.env, network=self.network, **common)
        raise ValueError(f"unknown target kind {self.kind!r}")
