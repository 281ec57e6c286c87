"""Benchmark: per-request latency through a gateway, against the upstream directly, in one run.

    python bench/bench_gateway.py [--requests N] [--gatekit PATH] [--mcp-proxy PATH]

The third-party gateways are optional and found through flags or the environment (MCPX_GATEKIT,
MCPX_MCP_PROXY, as tests/test_gateway_third_party.py reads them). Each needs its own virtualenv, since
both conflict with the project's mcp 2.x:

    uv venv /tmp/gk && VIRTUAL_ENV=/tmp/gk uv pip install gatekit==0.3.0      # MCPX_GATEKIT=/tmp/gk/bin/gatekit-gateway
    uv venv /tmp/mp && VIRTUAL_ENV=/tmp/mp uv pip install mcp-proxy==0.13.0   # MCPX_MCP_PROXY=/tmp/mp/bin/mcp-proxy

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
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from conformance.gateway import transparency  # noqa: E402
from conformance.gateway.launch import UPSTREAM_SCRIPT, Upstream, background, free_port, upstream_command  # noqa: E402
from conformance.targets import TargetSpec  # noqa: E402

PY = shlex.quote(sys.executable)
WARMUP = 20


async def measure(command: str, env: dict, requests: int, url: str | None = None) -> float:
    spec = TargetSpec("http", url=url, request_timeout=30) if url else \
        TargetSpec("stdio", command=command, env=env, request_timeout=30)
    async with spec.connect() as conn:
        init = await conn.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                                 "clientInfo": {"name": "bench", "version": "0"}})
        if init.response is None:
            raise RuntimeError(f"{command}: {init.failure}")
        await conn.notify("notifications/initialized")
        tools = await conn.request("tools/list", {})
        name = transparency.listed_name((tools.result or {}).get("tools"), "conformance_echo")
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
        for extra_path in args.path:  # e.g. another build of the reference gateway, measured in the same run
            label, _, command = extra_path.partition("=")
            paths.append((label, command, env))
        if args.gatekit:
            paths.append(("Gatekit 0.3.0", f"{PY} {ROOT / 'tests' / 'gateway' / 'gatekit_launcher.py'} {args.gatekit}", env))
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
    parser.add_argument("--gatekit", default=os.environ.get("MCPX_GATEKIT"),
                        help="gatekit-gateway of Gatekit 0.3.0 (default: $MCPX_GATEKIT)")
    parser.add_argument("--mcp-proxy", default=os.environ.get("MCPX_MCP_PROXY"),
                        help="mcp-proxy of mcp-proxy 0.13.0 (default: $MCPX_MCP_PROXY)")
    parser.add_argument("--path", action="append", default=[], metavar="LABEL=COMMAND",
                        help="one more stdio gateway to measure in the same run (repeatable)")
    args = parser.parse_args()
    for flag, path in (("--gatekit", args.gatekit), ("--mcp-proxy", args.mcp_proxy)):
        if path and not Path(path).is_file():
            parser.error(f"{flag} {path}: no such file")
    if not args.gatekit or not args.mcp_proxy:
        print("(Gatekit or mcp-proxy not given: their rows are left out; the module docstring says how to install "
              "them)", file=sys.stderr)
    results = anyio.run(run, args)
    base = results[0][1]
    print(f"tools/call conformance_echo, median of {args.requests} sequential requests (after {WARMUP} warm-up)")
    print(f"{'path':45} {'median ms':>10} {'x direct':>9} {'added ms':>9}")
    by_label = dict(results)
    http_base = by_label.get("upstream directly over HTTP")
    for label, median in results:
        # mcp-proxy's upstream is on HTTP, so its added latency is against the direct HTTP row.
        against = http_base if label.startswith("mcp-proxy") else base
        print(f"{label:45} {median * 1000:10.3f} {median / base:9.2f} {(median - against) * 1000:+9.3f}")
    ours = by_label["reference gateway"] - base
    gatekit = by_label.get("Gatekit 0.3.0")
    if gatekit is not None and gatekit - base > 0:
        print(f"reference gateway added latency / Gatekit's, this run: {ours / (gatekit - base):.2f}")


if __name__ == "__main__":
    main()
