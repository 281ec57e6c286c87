"""SDK adapters: put an App on the wire with the installed `mcp` release.

One small module per major version, because the two majors need different
seams (measured, reports/ecosystem/sdk-survival.md):
- 1.x (`_v1`): Tool and ServerCapabilities keep extra fields, but the session
  validates incoming requests against a closed union, so unknown methods never
  reach a handler: the adapter sits on the message streams under the session.
- 2.x (`_v2`): typed models drop unknown fields after the handler returns, and
  unknown methods are answered -32601: the adapter is a `Server.middleware`
  entry that serves the extension methods and puts the fields back on results.

Each exposes `run_stdio(app)` and `run_http(app, host, port, guard)`; `guard`
(`HostGuard`) is the DNS-rebinding protection both put in front of Streamable
HTTP, with the SDK's own `TransportSecuritySettings`.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.metadata import version

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


@dataclass(frozen=True)
class HostGuard:
    """The Host and Origin header values Streamable HTTP accepts (others get 421 / 403 from the SDK).

    Entries are as the headers carry them: `name:port`, or `name:*` for any port; origins with their scheme.
    A request without an Origin header (not from a browser) is accepted, as the SDK does.
    """

    allowed_hosts: tuple[str, ...]
    allowed_origins: tuple[str, ...]

    @classmethod
    def for_bind(cls, bind: str, hosts=(), origins=()) -> "HostGuard":
        """Loopback binds accept loopback names plus `hosts`; any other bind needs `hosts` (ValueError without)."""
        hosts, origins = tuple(hosts or ()), tuple(origins or ())
        if bind in LOOPBACK_HOSTS:
            hosts = ("127.0.0.1:*", "localhost:*", "[::1]:*", *hosts)
            origins = ("http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*", *origins)
        elif not hosts:
            raise ValueError(f"binding to {bind} (not loopback) needs the Host names clients will use, so that DNS "
                             "rebinding cannot reach the server: set allowedHosts in --config (for example "
                             "[\"mcp.example.com\", \"mcp.example.com:*\"]) or pass --allowed-host")
        if not origins:
            origins = tuple(f"{scheme}://{h}" for h in hosts for scheme in ("https", "http"))
        return cls(hosts, origins)

    def settings(self):
        from mcp.server.transport_security import TransportSecuritySettings

        return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=list(self.allowed_hosts),
                                         allowed_origins=list(self.allowed_origins))


def widen_stdio_pipes(size: int = 1 << 20) -> None:
    """Let one big message cross stdin or stdout in one write (Linux; elsewhere, or over the system's limit, as is).

    A pipe holds 64 KiB by default, so a 1 MB message took 16 refills, each a wake-up of both processes: on a
    busy machine several milliseconds. Only the kernel's buffer changes; the SDK still reads and writes the
    streams. A descriptor that is not a pipe (a terminal, a file) is left alone.
    """
    try:
        import fcntl

        set_size = fcntl.F_SETPIPE_SZ
    except (ImportError, AttributeError):
        return
    for fd in (0, 1):
        try:
            fcntl.fcntl(fd, set_size, size)
        except OSError:
            pass


def sdk_major() -> int:
    return int(version("mcp").split(".")[0])


def adapter():
    if sdk_major() >= 2:
        from . import _v2 as module
    else:
        from . import _v1 as module
    return module
