"""Benchmark: how many TCP connections a server-role run over Streamable HTTP opens.

    python bench/bench_http_connections.py [--repeat N] [--before CHECKOUT]

Against the reference server, which answers every request as an event stream (SSE), and the suite's SDK-free
fixture server, which answers with JSON bodies, each behind a loopback TCP relay that counts the connections
it accepts: `mcp-ext-conformance server --url RELAY` end to end, every profile on one connection (the
default). An HTTP client that keeps connections alive opens about as many as it has requests in flight at
once; one that closes a connection after every event stream opens one per request. With `--before`, the
checkout's suite runs in every round too (interleaved). Prints connections and wall time per run.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from conformance.targets.peerkit import free_port, spawn  # noqa: E402

SERVERS = {"reference (SSE)": "reference_servers.everything", "fixture (JSON)": "conformance.gateway.upstream"}
ENV = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
       "PYTHONPYCACHEPREFIX": tempfile.mkdtemp(prefix="mcpx-bench-pycache-")}


class CountingRelay:
    """A loopback TCP relay to `port` that counts the connections it accepts."""

    def __init__(self, port: int) -> None:
        self.target = port
        self.accepted = 0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            self.accepted += 1
            upstream = socket.create_connection(("127.0.0.1", self.target))
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass


def python_of(checkout: Path) -> str:
    venv = checkout / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def run(checkout: Path, relay: CountingRelay, report_dir: str) -> tuple[int, float]:
    before = relay.accepted
    t0 = time.perf_counter()
    subprocess.run([python_of(checkout), "-m", "conformance", "server", "--url",
                    f"http://127.0.0.1:{relay.port}/mcp", "--report-dir", report_dir], cwd=checkout, env=ENV,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - t0
    time.sleep(0.2)  # the relay's accept thread has counted every connection of the run
    return relay.accepted - before, wall


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--before", type=Path, help="another checkout (with its .venv) measured alongside")
    args = parser.parse_args()
    sides = [("after", ROOT)] + ([("before", args.before.resolve())] if args.before else [])
    work = tempfile.mkdtemp(prefix="mcpx-bench-conn-")
    print(f"{'server':<16} {'side':<7} {'connections by run':<22} {'median wall s':>14}")
    for label, module in SERVERS.items():
        port = free_port()
        with spawn([python_of(ROOT), "-m", module, "--http", str(port)], cwd=ROOT) as server:
            assert server.wait_listening(port), f"{module} did not start: {server.stderr_tail()}"
            relay = CountingRelay(port)
            runs: dict[str, list[tuple[int, float]]] = {name: [] for name, _ in sides}
            for name, checkout in sides:  # a first run of each compiles what it imports
                run(checkout, relay, f"{work}/{name}")
            for i in range(args.repeat):
                for name, checkout in (sides if i % 2 == 0 else sides[::-1]):
                    runs[name].append(run(checkout, relay, f"{work}/{name}"))
            relay.listener.close()
        for name, _ in sides:
            counts = " ".join(str(c) for c, _ in runs[name])
            print(f"{label:<16} {name:<7} {counts:<22} {statistics.median(w for _, w in runs[name]):>14.3f}")


if __name__ == "__main__":
    main()
