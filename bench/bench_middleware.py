"""Benchmark: real middleware of the reference server through middleware/invoke over stdio.

    python bench/bench_middleware.py [--repeat N]

Runs from a fresh clone with the reference extra installed (`pip install -e '.[reference]'`); no third parties
beyond it.

Prints, for pii_redaction on 10 KB, 100 KB and 1 MB of mixed text: the median
round trip (request written to response parsed), the function alone in
process, and the server's peak resident memory (VmHWM) after the runs; then
document_retrieval and the memory preprocessor's latency; then the
adversarial 100 KB input of issue 11 ("+1 1 1 ...") against typical text, and
how long another session's tools/list waits while a 1 MB call runs
(Streamable HTTP, two sessions of one server).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench_middleware_functions import pii_prefilter  # noqa: E402  (this directory is on the path)

from conformance.client.session import PROTOCOL_VERSION  # noqa: E402
from conformance.targets import TargetSpec  # noqa: E402
from conformance.targets.peerkit import free_port, spawn  # noqa: E402
from reference_servers.middleware import pii  # noqa: E402

FILLER = ("The quarterly review covered routing, pricing and the partner programme. Nothing here is personal. "
          "Version 3.11.7 shipped on 2025-10-04; order 1234567890123 is on its way. ").split(" ")
PII = ["jane.doe@example.com", "+44 20 7946 0958", "415-555-2671", "123-45-6789", "4111 1111 1111 1111",
       "192.168.1.10", "ops@example.org", "(212) 555-0199"]


def mixed_text(size: int, seed: int = 7) -> str:
    rng = random.Random(seed)
    words = []
    total = 0
    while total < size:
        word = rng.choice(PII) if rng.random() < 0.04 else rng.choice(FILLER)
        words.append(word)
        total += len(word) + 1
    return " ".join(words)[:size]


def peak_rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return -1


async def main(repeat: int) -> None:
    spec = TargetSpec("stdio", command=f"{sys.executable} -m reference_servers.everything", timeout=120,
                      env={"MCPX_MEMORY_STORE": ":memory:"})
    async with spec.connect() as conn:
        await conn.request("initialize", {"protocolVersion": PROTOCOL_VERSION, "capabilities": {},
                                          "clientInfo": {"name": "bench", "version": "0"}})
        await conn.notify("notifications/initialized")
        print(pii_prefilter())
        print(f"{'pii_redaction':<16} {'median ms':>10} {'function ms':>12} {'handles':>8}")
        for size, label in ((10_000, "10 KB"), (100_000, "100 KB"), (1_000_000, "1 MB")):
            text = mixed_text(size)
            context = [{"type": "text", "text": text}]
            times = []
            for _ in range(repeat):
                t0 = time.perf_counter()
                ex = await conn.request("middleware/invoke", {"name": "pii_redaction", "arguments": {}, "context": context})
                times.append(time.perf_counter() - t0)
                assert ex.has_result, ex.outcome_text()
            handles = len(ex.result["metadata"]["redactions"])
            t0 = time.perf_counter()
            pii.pii_redaction([{"type": "text", "text": text}], {})
            fn_ms = (time.perf_counter() - t0) * 1000
            print(f"{label:<16} {statistics.median(times) * 1000:>10.1f} {fn_ms:>12.1f} {handles:>8}")
        print(f"server peak RSS after the runs: {peak_rss_kib(conn.proc.pid) / 1024:.1f} MiB")

        queries = ["What was discussed in the Q4 planning meeting?", "carbon reporting per shipment",
                   "how do I set up the VPN", "EMEA expansion budget"]
        times = []
        for _ in range(repeat):
            for q in queries:
                t0 = time.perf_counter()
                await conn.request("middleware/invoke", {"name": "document_retrieval", "arguments": {"maxResults": 3},
                                                         "context": [{"type": "text", "text": q}]})
                times.append(time.perf_counter() - t0)
        print(f"document_retrieval round trip: median {statistics.median(times) * 1000:.2f} ms over {len(times)} queries")
        for i in range(200):
            await conn.request("tools/call", {"name": "remember", "arguments": {"text": f"memory {i} about {queries[i % 4]}"}})
        times = []
        for _ in range(repeat):
            for q in queries:
                t0 = time.perf_counter()
                await conn.request("tools/call", {"name": "RetrieveMemories", "arguments": {"query": q}})
                times.append(time.perf_counter() - t0)
        print(f"RetrieveMemories (200 memories) round trip: median {statistics.median(times) * 1000:.2f} ms")

        typical = [{"type": "text", "text": mixed_text(100_000)}]
        adversarial = [{"type": "text", "text": ("+1 " + "1 " * 100_000)[:100_000]}]
        medians = {}
        for label, context in (("typical", typical), ("adversarial", adversarial)):
            times = []
            for _ in range(repeat):
                t0 = time.perf_counter()
                ex = await conn.request("middleware/invoke", {"name": "pii_redaction", "arguments": {},
                                                              "context": context})
                times.append(time.perf_counter() - t0)
                assert ex.has_result, ex.outcome_text()
            medians[label] = statistics.median(times) * 1000
        print(f"pii_redaction 100 KB round trip: typical {medians['typical']:.1f} ms, \"+1 1 1 ...\" "
              f"{medians['adversarial']:.1f} ms, worst case / typical {medians['adversarial'] / medians['typical']:.2f}")
    await other_session_wait(repeat)


async def other_session_wait(repeat: int) -> None:
    """How long one session's tools/list takes alone and while another session's 1 MB pii_redaction runs."""
    port = free_port()
    with spawn([sys.executable, "-m", "reference_servers.everything", "--http", str(port)], cwd=ROOT,
               env={**os.environ, "MCPX_MEMORY_STORE": ":memory:"}) as server:
        if not server.wait_listening(port):
            print("HTTP server did not start; skipping the two-session measurement")
            return
        url = f"http://127.0.0.1:{port}/mcp"
        init = {"protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}
        async with TargetSpec("http", url=url, timeout=120).connect() as heavy, \
                TargetSpec("http", url=url, timeout=120).connect() as light:
            for conn in (heavy, light):
                await conn.request("initialize", init)
                await conn.notify("notifications/initialized")
            alone, loaded, heavy_ms = [], [], []
            context = [{"type": "text", "text": mixed_text(1_000_000)}]
            for _ in range(repeat):
                t0 = time.perf_counter()
                await light.request("tools/list", {})
                alone.append(time.perf_counter() - t0)

                async def run_heavy():
                    t1 = time.perf_counter()
                    await heavy.request("middleware/invoke", {"name": "pii_redaction", "arguments": {},
                                                              "context": context})
                    heavy_ms.append(time.perf_counter() - t1)

                async with anyio.create_task_group() as tg:
                    tg.start_soon(run_heavy)
                    await anyio.sleep(0.05)
                    t0 = time.perf_counter()
                    await light.request("tools/list", {})
                    loaded.append(time.perf_counter() - t0)
        print(f"other session's tools/list over HTTP: alone {statistics.median(alone) * 1000:.1f} ms, while a 1 MB "
              f"pii_redaction ({statistics.median(heavy_ms) * 1000:.0f} ms) runs "
              f"{statistics.median(loaded) * 1000:.1f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    anyio.run(main, parser.parse_args().repeat)
