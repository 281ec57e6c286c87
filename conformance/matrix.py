"""The SDK matrix: which profiles a server built on each `mcp` release can carry.

    python -m conformance.matrix run OUT      # in an environment with one mcp release installed
    python -m conformance.matrix table OUT    # (re)write OUT/../sdk-matrix.md from every run found

`run` checks, with the installed release, the reference server over stdio and
over Streamable HTTP (on 2.x also in the 2026-07-28 connection mode), and the naive server (tests/servers/naive_sdk_server.py:
extension fields put straight on the SDK's Tool, no adapter) over stdio, each
with every server profile it offers claimed. Results go to OUT/<release>/<target>/.
`nox -s matrix` runs it once per release of the matrix, then writes the table.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

from .cli import free_port, wait_for_port

ROOT = Path(__file__).resolve().parent.parent
ALL = ["preprocessor-tools", "execution-requirements", "context-middleware", "augmentation"]
TARGETS = {
    "reference-stdio": ALL,
    "reference-http": ALL,
    "reference-stdio-2026": ALL,  # the 2026-07-28 connection mode (mcp 2.x only)
    "reference-http-2026": ALL,
    "naive-stdio": ["preprocessor-tools", "execution-requirements"],
}
MODERN = ["--connection-mode", "2026-07-28"]


def cli(out: Path, target: list[str], profiles: list[str]) -> int:
    argv = [sys.executable, "-m", "conformance", "server", *target, "--report-dir", str(out),
            "--env", "MCPX_MEMORY_STORE=:memory:"]
    for profile in profiles:
        argv += ["--profile", profile]
    return subprocess.call(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           env={**os.environ, "MCPX_MEMORY_STORE": ":memory:"})


def run(out_root: Path) -> None:
    release = version("mcp")
    base = out_root / release
    python = sys.executable
    modern = int(release.split(".")[0]) >= 2
    reference = ["--command", f"{python} -m reference_servers.everything"]
    cli(base / "reference-stdio", reference, ALL)
    if modern:
        cli(base / "reference-stdio-2026", reference + MODERN, ALL)
    port = free_port()
    proc = subprocess.Popen([python, "-m", "reference_servers.everything", "--http", str(port)], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                            env={**os.environ, "MCPX_MEMORY_STORE": ":memory:"})
    try:
        if wait_for_port(port, proc):
            url = ["--url", f"http://127.0.0.1:{port}/mcp"]
            cli(base / "reference-http", url, ALL)
            if modern:
                cli(base / "reference-http-2026", url + MODERN, ALL)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass  # it never started, or already ended
        proc.wait(timeout=10)
    naive = ROOT / "tests" / "servers" / "naive_sdk_server.py"
    cli(base / "naive-stdio", ["--command", f"{python} {naive}"], TARGETS["naive-stdio"])


def cell(doc: dict | None, profile: str) -> str:
    if doc is None:
        return "—"
    checks = [c for c in doc["checks"] if c["profile"] == profile]
    failed = sorted(c["slug"] for c in checks if c["outcome"] in ("fail", "stale"))
    if failed:
        return f"❌ {len(failed)} failed ({', '.join(failed[:3])}{'…' if len(failed) > 3 else ''})"
    warned = sum(c["outcome"] == "warn" for c in checks)
    passed = sum(c["outcome"] in ("pass", "info") for c in checks)
    skipped = sum(c["outcome"] == "skip" for c in checks)
    return (f"✅ {passed} passed" + (f", {warned} warn" if warned else "")
            + (f", {skipped} n/a" if skipped else ""))


def table(out_root: Path) -> str:
    def key(release: str):
        return tuple(int(p) if p.isdigit() else p for p in release.split("."))

    releases = sorted((p.name for p in out_root.iterdir() if p.is_dir()), key=key) if out_root.exists() else []
    lines = ["# SDK matrix", "",
             "Server-role checks per `mcp` release, target and profile (each profile claimed with `--profile`).",
             "`naive` is tests/servers/naive_sdk_server.py: extension fields put straight on the SDK's `Tool`, "
             "no adapter. Regenerate with `nox -s matrix`.", ""]
    for target, profiles in TARGETS.items():
        lines += [f"## {target}", "", "| mcp | " + " | ".join(profiles) + " |",
                  "|---|" + "---|" * len(profiles)]
        for release in releases:
            path = out_root / release / target / "results.json"
            doc = json.loads(path.read_text()) if path.exists() else None
            lines.append(f"| {release} | " + " | ".join(cell(doc, p) for p in profiles) + " |")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("run", "table"):
        print(__doc__, file=sys.stderr)
        return 2
    out_root = Path(argv[1])
    if argv[0] == "run":
        run(out_root)
    text = table(out_root)
    (out_root.parent / "sdk-matrix.md").write_text(text + "\n", encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
