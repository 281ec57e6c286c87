"""Start IBM ContextForge's gateway in front of the upstream named by MCPX_UPSTREAM_URL, reached over stdio.

    python ecosystem/gateways/contextforge/launcher.py PATH/TO/VENV/bin/python

ContextForge is a service: it keeps its catalog in a database and learns upstreams through its REST
API. This starts it (`python -m mcpgateway`, SQLite in a temporary directory, no Redis, loopback
only, authentication off so the suite needs no token), registers the upstream (Streamable HTTP) as
gateway `fixture`, then runs ContextForge's own stdio bridge (`python -m mcpgateway.wrapper`, which
relays JSON-RPC to the gateway's `/mcp` endpoint unparsed) on this process's stdin and stdout. The
gateway ends with the bridge. Startup takes 20-30 s on two busy cores (imports and the schema
migrations of a fresh database), so the suite's first request needs a long timeout.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

START_LIMIT = 150.0  # seconds the gateway may take to answer /health


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def settings(directory: Path, port: int) -> dict[str, str]:
    return {
        "DATABASE_URL": f"sqlite:///{directory / 'contextforge.sqlite'}",
        "CACHE_TYPE": "memory",
        # The suite connects without credentials; admin calls (the registration) likewise.
        "AUTH_REQUIRED": "false", "MCP_REQUIRE_AUTH": "false", "ALLOW_UNAUTHENTICATED_ADMIN": "true",
        "MCPGATEWAY_ADMIN_API_ENABLED": "true", "MCPGATEWAY_UI_ENABLED": "false",
        # Secrets it refuses to run without; local to this throwaway instance.
        "JWT_SECRET_KEY": os.urandom(24).hex(), "AUTH_ENCRYPTION_SECRET": os.urandom(24).hex(),
        # The upstream is on loopback, which its SSRF guard blocks by default.
        "SSRF_ALLOW_LOCALHOST": "true", "PLUGINS_ENABLED": "false", "ENVIRONMENT": "development",
        "LOG_LEVEL": "ERROR", "HOST": "127.0.0.1", "PORT": str(port),
    }


def fail(message: str, log: Path | None = None) -> None:
    tail = log.read_text(errors="replace")[-1500:] if log and log.exists() else ""
    print(f"contextforge launcher: {message}\n{tail}", file=sys.stderr)
    sys.exit(1)


def request(url: str, body: dict | None = None, timeout: float = 30.0) -> dict:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as response:
        return json.loads(response.read())


def main() -> None:
    python = sys.argv[1]
    upstream = os.environ.get("MCPX_UPSTREAM_URL")
    if not upstream:
        fail("MCPX_UPSTREAM_URL is not set: ContextForge fronts an HTTP upstream (run with upstream=http)")
    directory = Path(tempfile.mkdtemp(prefix="mcpx-contextforge-"))
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {**os.environ, **settings(directory, port)}
    log = directory / "gateway.log"
    with log.open("wb") as sink:
        gateway = subprocess.Popen([python, "-m", "mcpgateway", "--host", "127.0.0.1", "--port", str(port)],
                                   stdin=subprocess.DEVNULL, stdout=sink, stderr=sink, env=env, cwd=directory)
    try:
        deadline = time.monotonic() + START_LIMIT
        while True:
            if gateway.poll() is not None:
                fail(f"the gateway exited (code {gateway.returncode}) before answering /health", log)
            try:
                request(f"{base}/health", timeout=2.0)
                break
            except OSError:
                if time.monotonic() > deadline:
                    fail(f"the gateway did not answer /health within {START_LIMIT:g} s", log)
                time.sleep(0.25)
        try:
            request(f"{base}/gateways", {"name": "fixture", "url": upstream, "transport": "STREAMABLEHTTP",
                                         "visibility": "public"})
        except OSError as exc:
            fail(f"registering the upstream failed: {exc}", log)
        # The bridge reads the same settings module, which refuses to load without the secrets.
        bridge_env = {**env, "MCP_SERVER_URL": f"{base}/mcp/", "MCP_WRAPPER_LOG_LEVEL": "OFF"}
        bridge = subprocess.Popen([python, "-m", "mcpgateway.wrapper"], env=bridge_env)
        signal.signal(signal.SIGTERM, lambda *_: bridge.terminate())
        bridge.wait()
    finally:
        gateway.terminate()
        try:
            gateway.wait(timeout=5)
        except subprocess.TimeoutExpired:
            gateway.kill()
            gateway.wait()


if __name__ == "__main__":
    main()
