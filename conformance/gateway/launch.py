"""Starting what sits around a gateway under test: the upstream fixture server and, for HTTP, the gateway.

Rules:
- For a stdio gateway the suite starts only the gateway (through the stdio target, which owns its
  process group); the gateway starts the upstream from `MCPX_UPSTREAM_COMMAND` (or `{upstream}` in
  its command line), and the upstream ends when its stdin closes.
- Whatever the suite starts in the background (an HTTP upstream, a gateway serving HTTP) runs in its
  own process group, is tracked by the reaper, and is ended by group (SIGTERM, then SIGKILL) when
  the recording is done: nothing outlives a run.
- A background process that never listens, or exits first, is `TargetUnavailable` with its exit code
  and the end of its stderr, within the wait bound.
"""

from __future__ import annotations

import dataclasses
import shlex
import sys
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable
from urllib.parse import urlsplit

import anyio

from ..targets import TargetSpec, TargetUnavailable
from ..targets.environment import scrubbed
from ..targets.peerkit import cannot_start, free_port, spawn

UPSTREAM_SCRIPT = Path(__file__).resolve().with_name("upstream.py")
COMMAND_ENV, URL_ENV = "MCPX_UPSTREAM_COMMAND", "MCPX_UPSTREAM_URL"
START_WAIT = 15.0  # seconds a background process may take to listen (an SDK import alone can take 2 s)


@dataclass
class Upstream:
    """The suite's upstream fixture server for one connection."""

    command: str  # its stdio command line, logging to `log`
    log: Path  # every message it received, one JSON line each
    url: str | None = None  # set when the suite runs it over Streamable HTTP

    @property
    def env(self) -> dict[str, str]:
        return {URL_ENV: self.url} if self.url else {COMMAND_ENV: self.command}


SpecFactory = Callable[[Upstream], TargetSpec]


def upstream_command(log: Path | str, *extra: str) -> str:
    # The script path rather than `-m`: the package's __init__ (checks, schemas) is not needed to serve.
    return shlex.join([sys.executable, str(UPSTREAM_SCRIPT), "--log", str(log), *extra])


def gateway_factory(spec: TargetSpec) -> SpecFactory:
    """A spec factory for the gateway `spec` names (TargetSpec.from_run for the gateway role: its command, and
    with `url`, where it serves Streamable HTTP).

    `{upstream}` in the command becomes the upstream's command (or URL); the environment names it too.
    With a url, `{port}` in command and url becomes a free port, the suite starts the command in the
    background and connects to the url. Every other field is the spec's own.
    """
    command = spec.given("command", spec.command)

    def make(upstream: Upstream) -> TargetSpec:
        port = str(free_port())
        cmd = command.replace("{upstream}", shlex.quote(upstream.url or upstream.command)).replace("{port}", port)
        return dataclasses.replace(spec, command=cmd, url=spec.url.replace("{port}", port) if spec.url else None,
                                   env={**spec.env, **upstream.env})

    return make


@asynccontextmanager
async def background(argv: list[str], env: dict[str, str] | None, url: str, limit: float = START_WAIT):
    """Run argv in its own process group until the block ends; enter once something listens at `url`."""
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    try:
        group = spawn(argv, env=scrubbed(env))
    except (OSError, ValueError) as exc:
        raise TargetUnavailable(cannot_start(argv, exc)) from None
    try:
        # A worker thread waits and stops (Popen's blocking calls), so the event loop keeps running meanwhile.
        listening = await anyio.to_thread.run_sync(group.wait_listening, port, limit, host, abandon_on_cancel=True)
        if not listening:
            if group.returncode is not None:
                raise TargetUnavailable(f"{shlex.join(argv)!r} exited (exit code {group.returncode}) before "
                                        f"listening on {host}:{port}; stderr ends: {group.stderr_tail()}")
            raise TargetUnavailable(f"nothing listened on {host}:{port} within {limit:g} s after starting "
                                    f"{shlex.join(argv)!r}")
        yield group
    finally:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(group.close)


@asynccontextmanager
async def upstream_for(log: Path, mode: str, run: str | None = None):
    """The upstream fixture server for one connection: a command (stdio) or a running HTTP server; `run`, the
    connection's mark, is passed on (`--run`): the upstream marks its answers with it."""
    marks = ("--run", run) if run else ()
    if mode == "stdio":
        yield Upstream(upstream_command(log, *marks), log)
        return
    if mode != "http":
        raise ValueError(f"upstream must be 'stdio' or 'http', not {mode!r}")
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    argv = [sys.executable, str(UPSTREAM_SCRIPT), "--log", str(log), "--http", str(port), *marks]
    async with background(argv, None, url):
        yield Upstream(upstream_command(log, *marks), log, url)
