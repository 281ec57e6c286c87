"""Benchmark: response-pipeline throughput with ten plugins, in process.

    python bench/bench_pipeline.py [--runs N] [--responses M] [--gatekit-python PATH]

Gatekit's row runs in a Python where gatekit imports: this one, else the one --gatekit-python or
MCPX_GATEKIT_PYTHON names (run there as a child with this checkout on PYTHONPATH); when neither has it
the row is skipped with a message. Install it with
    uv venv /tmp/gk && VIRTUAL_ENV=/tmp/gk uv pip install gatekit==0.3.0     # then MCPX_GATEKIT_PYTHON=/tmp/gk/bin/python

Ten plugins (conformance fixture vocabulary): five middleware and three security plugins at mixed
priorities (four append a marker, three pass, one records what it saw) and two auditing plugins. Each run
processes M tools/call responses one after another through one pipeline; the figure is responses per
second, median (and best) of N runs. Engines: the reference engine called directly, the reference engine
through its conformance adapter, and Gatekit's PluginManager through its adapter when gatekit imports
(it pins pydantic==2.11.5, so it usually lives in its own venv).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from reference_servers.gateway import adapter as reference_adapter  # noqa: E402

PLUGINS = [
    {"name": "m-tag-1", "behaviour": "append", "kind": "middleware", "priority": 10},
    {"name": "m-pass-1", "behaviour": "pass", "kind": "middleware", "priority": 20},
    {"name": "m-look", "behaviour": "audit", "kind": "middleware", "priority": 30},
    {"name": "m-tag-2", "behaviour": "append", "kind": "middleware"},
    {"name": "m-tag-3", "behaviour": "append", "kind": "middleware", "priority": 70},
    {"name": "s-pass-1", "behaviour": "pass", "kind": "security", "priority": 15},
    {"name": "s-pass-2", "behaviour": "pass", "kind": "security"},
    {"name": "s-tag", "behaviour": "append", "kind": "security", "priority": 90},
    {"name": "a-log-1", "behaviour": "audit", "kind": "auditing"},
    {"name": "a-log-2", "behaviour": "audit", "kind": "auditing"},
]
REQUEST = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
           "params": {"name": "conformance_echo", "arguments": {"text": "hello"}}}
RESPONSE = {"jsonrpc": "2.0", "id": 1, "result": {"content": [
    {"type": "text", "text": "The quarterly review covered routing, pricing and the partner programme. " * 4},
    {"type": "text", "text": "A second block, shorter."}]}}


async def _throughput(pipeline, responses: int) -> float:
    started = time.perf_counter()
    for _ in range(responses):
        await pipeline.process_response(REQUEST, RESPONSE)
    return responses / (time.perf_counter() - started)


async def _build(factory):
    built = factory([dict(p) for p in PLUGINS])
    return await built if asyncio.iscoroutine(built) else built


def measure(name: str, factory, runs: int, responses: int) -> None:
    async def go():
        pipeline = await _build(factory)
        await _throughput(pipeline, min(200, responses))  # warm-up
        return [await _throughput(pipeline, responses) for _ in range(runs)]
    rates = asyncio.run(go())
    print(f"{name:<34} {statistics.median(rates):>10,.0f} responses/s median  "
          f"(best {max(rates):,.0f}; {runs} runs x {responses})")


INSTALL = "uv venv /tmp/gk && VIRTUAL_ENV=/tmp/gk uv pip install gatekit==0.3.0; then MCPX_GATEKIT_PYTHON=/tmp/gk/bin/python"


def measure_gatekit(args) -> None:
    try:
        import logging

        import gatekit  # noqa: F401

        from ecosystem.gateways.gatekit import adapter as gatekit_adapter
    except ImportError as exc:
        other = args.gatekit_python or os.environ.get("MCPX_GATEKIT_PYTHON")
        if other and not args.gatekit_only:
            if not Path(other).is_file():
                print(f"{'gatekit 0.3.0 (adapter)':<34} skipped: no Python at {other}; install: {INSTALL}")
                return
            env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
            subprocess.run([other, __file__, "--gatekit-only", "--runs", str(args.runs),
                            "--responses", str(args.responses)], env=env, check=False)
            return
        print(f"{'gatekit 0.3.0 (adapter)':<34} skipped: {exc}; install: {INSTALL}")
        return
    logging.getLogger("gatekit").setLevel(logging.WARNING)  # its debug logging is not what we measure
    measure("gatekit 0.3.0 (adapter)", gatekit_adapter.factory, args.runs, args.responses)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--responses", type=int, default=2000)
    parser.add_argument("--gatekit-python", metavar="PATH", help="a Python with gatekit 0.3.0 (or env MCPX_GATEKIT_PYTHON)")
    parser.add_argument("--gatekit-only", action="store_true", help=argparse.SUPPRESS)  # the child run
    args = parser.parse_args()
    if not args.gatekit_only:
        print(f"python {sys.version.split()[0]}, ten plugins (8 processing, 2 auditing)")
        measure("reference engine (direct)", lambda plugins: reference_adapter.factory(plugins).pipeline,
                args.runs, args.responses)
        measure("reference engine (adapter)", reference_adapter.factory, args.runs, args.responses)
    measure_gatekit(args)


if __name__ == "__main__":
    main()
