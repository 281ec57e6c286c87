"""Benchmark: what the host harness costs on top of the host, and the full host-role run.

    python bench/bench_host.py [--repeat N] [--host CMD]

Per scenario, median of N runs:
- scenario: the harness's wall time for the scenario (mock LLM and HTTP servers
            up, config written, the host run, logs merged);
- host:     from starting the host process to its exit, i.e. what the host
            itself takes (start-up, MCP handshakes, turns);
- overhead: scenario - host, and the time to judge the scenario's checks.
Then the full host-role run (every scenario, one per CPU at a time, all checks judged)
in-process and through the CLI. Hosts: the SDK-free fake host, and the
reference host when it is installed (or the one given with --host).
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from conformance.core.model import REGISTRY  # noqa: E402
from conformance.core.roles import HOST  # noqa: E402
from conformance.core.runner import evaluate  # noqa: E402
from conformance.host import record as recorder  # noqa: E402
from conformance.host.common import scenarios  # noqa: E402
from conformance.host.harness import run_scenario_sync  # noqa: E402
from conformance.host.recording import HostRecording  # noqa: E402
from conformance.targets import TargetSpec  # noqa: E402

PY = shlex.quote(sys.executable)
HOSTS = {
    "fake host (SDK-free)": f"{PY} {shlex.quote(str(ROOT / 'tests' / 'hosts' / 'fake_host.py'))}",
    "reference host": f"{PY} -m reference_clients.host",
}


def judge_seconds(run, profile: str) -> float:
    rec = HostRecording(profile, {"kind": "stdio"}, runs={run.scenario: run})
    checks = [c for c in REGISTRY.values() if c.role == "host" and c.profile == profile
              and run.scenario in recorder.MODULES[profile].SCENARIOS]
    started = time.perf_counter()
    for check in checks:
        evaluate(check, rec)
    return time.perf_counter() - started


def per_scenario(command: str, repeat: int) -> None:
    print(f"  {'scenario':<42} {'scenario s':>10} {'host s':>8} {'overhead s':>10} {'judge ms':>9}")
    for sid, scenario in scenarios().items():
        totals, hosts, judges = [], [], []
        for _ in range(repeat):
            run = run_scenario_sync(TargetSpec("stdio", command=command, timeout=30), scenario)
            if run.fatal:
                print(f"  {sid:<42} failed: {run.fatal}")
                break
            totals.append(run.duration)
            hosts.append(run.host_seconds)
            judges.append(judge_seconds(run, scenario["profile"]))
        else:
            t, h = statistics.median(totals), statistics.median(hosts)
            print(f"  {sid:<42} {t:>10.3f} {h:>8.3f} {t - h:>10.3f} {statistics.median(judges) * 1000:>9.2f}")


def full_run(command: str, repeat: int) -> None:
    inproc, cli = [], []
    for _ in range(repeat):
        started = time.perf_counter()
        recs = recorder.record_hosts_sync(TargetSpec("stdio", command=command, timeout=HOST.default_timeout),
                                         recorder.PROFILES, claimed=set(recorder.PROFILES))
        for c in REGISTRY.values():
            if c.role == "host":
                evaluate(c, recs[c.profile])
        inproc.append(time.perf_counter() - started)
        started = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="mcpx-bench-host-") as reports:
            done = subprocess.run([sys.executable, "-m", "conformance", "host", "--command", command, "--report-dir",
                                   reports, *sum((["--profile", p] for p in recorder.PROFILES), [])],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        cli.append(time.perf_counter() - started)
        if done.returncode not in (0, 1):  # 1: a check failed, still a run; else no figure: say so
            tail = " | ".join(done.stderr.strip().splitlines()[-3:])
            print(f"  CLI run failed (exit {done.returncode}): {tail}")
            return
    print(f"  full host-role run, all {len(recorder.PROFILES)} profiles ({len(scenarios())} scenarios): in-process {statistics.median(inproc):.2f} s, "
          f"CLI end to end {statistics.median(cli):.2f} s")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--host", help="benchmark this host command only")
    args = parser.parse_args()
    # From a fresh clone, installed or not: `-m conformance` (the CLI run) and `-m reference_clients.host`
    # (started by the harness in this working directory) must find this checkout's code.
    os.chdir(ROOT)
    hosts = {"given host": args.host} if args.host else dict(HOSTS)
    if not args.host:
        try:
            import reference_clients.host  # noqa: F401
        except ImportError:
            del hosts["reference host"]
    for name, command in hosts.items():
        print(f"\n{name}: {command} (median of {args.repeat})")
        per_scenario(command, args.repeat)
        full_run(command, args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
