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

With `--rounds R` every connection stays open and the paths take turns, R rounds of N requests each
(the machine is shared, and its load moves within seconds: each round's figures are measured close
together); each round prints its medians, and with Gatekit each gateway's added latency (its median
minus the direct one) as a fraction of Gatekit's.
"""

from __future__ import annotations

import argparse
import contextlib
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
GATEKIT = "Gatekit 0.3.0"
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


class Route:
    """One measured path: its connection (opened once) and the median of each round."""

    def __init__(self, label: str, spec: TargetSpec):
        self.label, self.spec, self.medians, self.cpu = label, spec, [], []
        self.conn, self.name, self.pid = None, "", None

    async def open(self, stack: contextlib.AsyncExitStack) -> None:
        self.conn = await stack.enter_async_context(self.spec.connect())
        self.pid = getattr(getattr(self.conn, "proc", None), "pid", None)  # stdio: the gateway's own process
        init = await self.conn.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                                      "clientInfo": {"name": "bench", "version": "0"}})
        if init.response is None:
            raise RuntimeError(f"{self.label}: {init.failure}")
        await self.conn.notify("notifications/initialized")
        tools = await self.conn.request("tools/list", {})
        self.name = listed_name((tools.result or {}).get("tools"), "conformance_echo")
        await self.calls(WARMUP)

    async def calls(self, count: int) -> list[float]:
        times = []
        for i in range(count):
            started = time.perf_counter()
            ex = await self.conn.request("tools/call", {"name": self.name, "arguments": {"text": f"ping {i}"}})
            if not ex.has_result:
                raise RuntimeError(f"{self.label}: {ex.outcome_text()}")
            times.append(time.perf_counter() - started)
        return times

    async def round(self, requests: int) -> None:
        before = cpu_seconds(self.pid)
        self.medians.append(statistics.median(await self.calls(requests)))
        after = cpu_seconds(self.pid)
        self.cpu.append((after - before) / requests if before is not None and after is not None else None)


def cpu_seconds(pid: int | None) -> float | None:
    """CPU time of one process (every thread, not its children), in seconds, from the scheduler's own count
    (/proc/PID/task/*/schedstat, nanoseconds): load on the machine moves it far less than a round trip."""
    if pid is None:
        return None
    total = 0
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            total += int((task / "schedstat").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return total / 1e9


async def run(args) -> list[Route]:
    paths: list[Route] = []
    with tempfile.TemporaryDirectory(prefix="mcpx-bench-") as tmp:
        log = Path(tmp) / "up.jsonl"
        direct = upstream_command(log)
        env = Upstream(direct, log).env

        def stdio(label: str, command: str, extra: dict) -> Route:
            return Route(label, TargetSpec("stdio", command=command, env=extra, timeout=30))

        paths += [stdio("upstream directly", direct, {}),
                  stdio("reference gateway", f"{PY} -m reference_servers.gateway", env)]
        for extra_row in args.extra:
            label, _, command = extra_row.partition("=")
            paths.append(stdio(label, command, env))
        if args.gatekit:
            launcher = ROOT / "ecosystem" / "gateways" / "gatekit" / "launcher.py"
            paths.append(stdio(GATEKIT, f"{PY} {launcher} {args.gatekit}", env))
        async with contextlib.AsyncExitStack() as stack:
            if args.mcp_proxy:
                port = free_port()
                url = f"http://127.0.0.1:{port}/mcp"
                argv = [sys.executable, str(UPSTREAM_SCRIPT), "--http", str(port)]
                await stack.enter_async_context(background(argv, None, url))
                paths.append(Route("upstream directly over HTTP", TargetSpec("http", url=url, timeout=30)))
                paths.append(stdio("mcp-proxy 0.13.0 (stdio -> HTTP upstream)",
                                   f"{args.mcp_proxy} --transport streamablehttp {url}", {}))
            for path in paths:
                await path.open(stack)
            for _ in range(args.rounds):
                for path in paths:
                    await path.round(args.requests)
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200, help="requests per path and round")
    parser.add_argument("--rounds", type=int, default=1, help="rounds in which the paths take turns")
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
    paths = anyio.run(run, args)
    base = paths[0]
    print(f"tools/call conformance_echo, median of {args.requests} sequential requests (after {WARMUP} warm-up)"
          + (f", {args.rounds} interleaved rounds" if args.rounds > 1 else ""))
    rounds = f"{'median ms by round':>{9 * args.rounds}}" if args.rounds > 1 else ""
    print(f"{'path':45} {'median ms':>10} {'x direct':>9} {'CPU us':>7} {rounds}")
    for path in paths:
        median = statistics.median(path.medians)
        each = "".join(f"{m * 1000:9.3f}" for m in path.medians) if args.rounds > 1 else ""
        cpu = [c for c in path.cpu if c is not None]
        cpu_text = f"{statistics.median(cpu) * 1e6:7.0f}" if cpu else f"{'-':>7}"
        print(f"{path.label:45} {median * 1000:10.3f} {median / statistics.median(base.medians):9.2f} {cpu_text} {each}")
    print("(CPU us: the process's own CPU per request, median of the rounds: the upstream's for the direct path, "
          "the gateway's for a gateway)")
    gatekit = next((p for p in paths if p.label == GATEKIT), None)
    if gatekit is not None:
        # Added latency: a gateway's median minus the direct path's, in the same round.
        print("added latency / Gatekit's added latency, per round:")
        for path in paths[1:]:
            if path is gatekit or path.label.startswith(("upstream", "mcp-proxy")):
                continue
            ratios = [(m - d) / (g - d) for m, d, g in zip(path.medians, base.medians, gatekit.medians)]
            added = [(m - d) * 1000 for m, d in zip(path.medians, base.medians)]
            cpu = [c / g for c, g in zip(path.cpu, gatekit.cpu) if c is not None and g]
            print(f"  {path.label:43} ratio {' '.join(f'{r:.2f}' for r in ratios)} "
                  f"(added ms {' '.join(f'{a:.3f}' for a in added)}); median {statistics.median(ratios):.2f}"
                  + (f"; its CPU / Gatekit's CPU {statistics.median(cpu):.2f}" if cpu else ""))
        print(f"  {GATEKIT + ' added ms':43} "
              f"{' '.join(f'{(g - d) * 1000:.3f}' for g, d in zip(gatekit.medians, base.medians))}")
    if args.mcp_proxy:
        print("(mcp-proxy's upstream is on HTTP: compare its row with the direct HTTP row)")

if __name__ == "__main__":
    main()
