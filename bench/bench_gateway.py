"""Benchmark: per-request latency through a gateway, against the upstream directly, in one run.

    python bench/bench_gateway.py [--requests N] [--gatekit PATH] [--mcp-proxy PATH]

Third-party gateways are optional, each from its flag, else an environment variable, else PATH; a row
whose tool is absent is skipped with a message saying how to install it:
    MCPX_GATEKIT=/tmp/gk/bin/gatekit-gateway    uv venv /tmp/gk && VIRTUAL_ENV=/tmp/gk uv pip install gatekit==0.3.0
    MCPX_MCP_PROXY=/tmp/mp/bin/mcp-proxy        uv venv /tmp/mp && VIRTUAL_ENV=/tmp/mp uv pip install mcp-proxy==0.13.0

For each path the suite's stdio connection opens once (initialize, tools/list; start-up is not
measured), warms up with 20 calls, then sends N sequential tools/call requests of conformance_echo
and takes the median round trip. Paths: the upstream fixture server directly; the reference gateway
(stdio, one upstream, no plugins); Gatekit 0.3.0 (no plugins) when installed; the upstream directly
over Streamable HTTP, and mcp-proxy as a stdio client of it, when mcp-proxy is installed. Ratios are
against the direct stdio median.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from conformance.gateway.common import listed_name  # noqa: E402
from conformance.gateway.launch import UPSTREAM_SCRIPT, Upstream, background, upstream_command  # noqa: E402
from conformance.targets import TargetSpec  # noqa: E402
from conformance.targets.peerkit import free_port  # noqa: E402

PY = shlex.quote(sys.executable)
WARMUP = 20
# tool -> (flag dest, environment variable, executable name, how to install it)
TOOLS = {
    "Gatekit 0.3.0": ("gatekit", "MCPX_GATEKIT", "gatekit-gateway",
                      "uv venv /tmp/gk && VIRTUAL_ENV=/tmp/gk uv pip install gatekit==0.3.0; "
                      "then MCPX_GATEKIT=/tmp/gk/bin/gatekit-gateway or --gatekit"),
    "mcp-proxy 0.13.0": ("mcp_proxy", "MCPX_MCP_PROXY", "mcp-proxy",
                         "uv venv /tmp/mp && VIRTUAL_ENV=/tmp/mp uv pip install mcp-proxy==0.13.0; "
                         "then MCPX_MCP_PROXY=/tmp/mp/bin/mcp-proxy or --mcp-proxy"),
}


def find_tool(flag: str | None, variable: str, executable: str) -> str | None:
    """The flag's path, else the environment variable's, else the executable on PATH; None when absent."""
    for candidate in (flag, os.environ.get(variable)):
        if candidate:
            return candidate if Path(candidate).is_file() else None
    return shutil.which(executable)


async def measure(command: str, env: dict, requests: int, url: str | None = None) -> float:
    spec = TargetSpec("http", url=url, timeout=30) if url else \
        TargetSpec("stdio", command=command, env=env, timeout=30)
    async with spec.connect() as conn:
        init = await conn.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                                 "clientInfo": {"name": "bench", "version": "0"}})
        if init.response is None:
            raise RuntimeError(f"{command}: {init.failure}")
        await conn.notify("notifications/initialized")
        tools = await conn.request("tools/list", {})
        name = listed_name((tools.result or {}).get("tools"), "conformance_echo")
        times = []
        for i in range(WARMUP + requests):
            started = time.perf_counter()
            ex = await conn.request("tools/call", {"name": name, "arguments": {"text": f"ping {i}"}})
            if not ex.has_result:
                raise RuntimeError(f"{command or url}: {ex.outcome_text()}")
            if i >= WARMUP:
                times.append(time.perf_counter() - started)
    return statistics.median(times)


async def run(args) -> list[tuple[str, float]]:
    out = []
    with tempfile.TemporaryDirectory(prefix="mcpx-bench-") as tmp:
        log = Path(tmp) / "up.jsonl"
        direct = upstream_command(log)
        env = Upstream(direct, log).env
        paths = [("upstream directly", direct, {}),
                 ("reference gateway", f"{PY} -m reference_servers.gateway", env)]
        for extra_row in args.extra:
            label, _, command = extra_row.partition("=")
            paths.append((label, command, env))
        if args.gatekit:
            launcher = ROOT / "ecosystem" / "gateways" / "gatekit" / "launcher.py"
            paths.append(("Gatekit 0.3.0", f"{PY} {launcher} {args.gatekit}", env))
        for label, command, extra in paths:
            out.append((label, await measure(command, extra, args.requests)))
        if args.mcp_proxy:
            port = free_port()
            url = f"http://127.0.0.1:{port}/mcp"
            argv = [sys.executable, str(UPSTREAM_SCRIPT), "--http", str(port)]
            async with background(argv, None, url):
                out.append(("upstream directly over HTTP", await measure("", {}, args.requests, url)))
                command = f"{args.mcp_proxy} --transport streamablehttp {url}"
                out.append(("mcp-proxy 0.13.0 (stdio -> HTTP upstream)", await measure(command, {}, args.requests)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--gatekit", metavar="PATH", help="gatekit-gateway executable (or env MCPX_GATEKIT)")
    parser.add_argument("--mcp-proxy", metavar="PATH", help="mcp-proxy executable (or env MCPX_MCP_PROXY)")
    parser.add_argument("--extra", action="append", default=[], metavar="LABEL=COMMAND",
                        help="one more stdio gateway row (started like the reference gateway), e.g. another "
                             "checkout: 'before=env PYTHONPATH=/tmp/old python -m reference_servers.gateway'")
    args = parser.parse_args()
    for label, (dest, variable, executable, install) in TOOLS.items():
        found = find_tool(getattr(args, dest), variable, executable)
        setattr(args, dest, found)
        if found is None:
            print(f"skipping {label}: not found (flag, {variable}, or {executable} on PATH); install: {install}")
    results = anyio.run(run, args)
    base = results[0][1]
    print(f"tools/call conformance_echo, median of {args.requests} sequential requests (after {WARMUP} warm-up)")
    print(f"{'path':45} {'median ms':>10} {'x direct':>9}")
    for label, median in results:
        print(f"{label:45} {median * 1000:10.3f} {median / base:9.2f}")
    if args.mcp_proxy:
        print("(mcp-proxy's upstream is on HTTP: compare its row with the direct HTTP row)")


if __name__ == "__main__":
    main()
