"""The ecosystem snapshot: every implementation the repository can run, checked, on one dashboard.

    python ecosystem/snapshot.py OUT_DIR [--node-sdk DIR]... [--server-everything BIN]
    python ecosystem/snapshot.py OUT_DIR --pages-only

Runs the suite (`python -m conformance`) against the reference server (stdio
and Streamable HTTP), the reference host and gateway, the naive Python SDK
server (tests/servers/naive_sdk_server.py), the TypeScript SDK servers in
ecosystem/typescript/ (naive and low-level; one pair per --node-sdk, a
node_modules directory holding @modelcontextprotocol/sdk) and the npm
server-everything (--server-everything, its binary); each run's reports go
to OUT_DIR/runs/<name>/ (results.json, summary.md, index.html), the
dashboard's columns to OUT_DIR/dashboard.json, then `mcp-ext-conformance
dashboard` writes OUT_DIR/index.html. `nox -s dashboard` installs the npm
packages and calls this. A run that fails is a finding, not an error: the
snapshot records it. Paths under the checkout are written relative to it in
the kept reports.

Git keeps the data (results.json, summary.md, dashboard.json), not the pages:
each index.html is rendered from its results.json alone, so --pages-only
rebuilds every page of a checkout's snapshot in seconds without running
anything (`nox -s dashboard -- --pages-only`).
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from conformance.core.roles import HOST  # noqa: E402

PY = shlex.quote(sys.executable)
CLAIM_SERVER_FIELDS = ["--profile", "preprocessor-tools", "--profile", "execution-requirements"]
CLAIM_HOST = [a for p in HOST.profiles for a in ("--profile", p)]  # every profile the host role has
KEEP = {"results.json", "summary.md", "index.html"}  # index.html is not committed (.gitignore): pages() rebuilds it
TITLE = "MCP extension conformance: the ecosystem"


def suite(out: Path, name: str, argv: list[str], env: dict | None = None) -> tuple[str, int]:
    directory = out / "runs" / name
    print(f"snapshot: {name}", flush=True)
    code = subprocess.call([sys.executable, "-m", "conformance", *argv, "--report-dir", str(directory)], cwd=ROOT,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           env={**os.environ, "MCPX_MEMORY_STORE": ":memory:", **(env or {})})
    for path in directory.iterdir() if directory.exists() else ():
        if path.name not in KEEP:  # junit, raw pytest report and badges: regenerable, not worth a diff
            shutil.rmtree(path) if path.is_dir() else path.unlink()
        else:  # paths relative to the checkout, so the committed snapshot does not name this machine's
            path.write_text(path.read_text(encoding="utf-8").replace(f"{ROOT}/", "")
                            .replace(str(ROOT), "."), encoding="utf-8")
    return name, code


def node_sdk_version(node_modules: Path) -> str:
    return json.loads((node_modules / "@modelcontextprotocol" / "sdk" / "package.json").read_text())["version"]


def pages(out: Path) -> int:
    """Every run's index.html from its results.json, then the dashboard over the columns in dashboard.json."""
    from conformance.report.html import render

    columns = json.loads((out / "dashboard.json").read_text(encoding="utf-8"))
    specs = []
    for entry in columns["runs"]:
        directory = out / "runs" / entry["run"]
        if not (directory / "results.json").exists():
            continue
        doc = json.loads((directory / "results.json").read_text(encoding="utf-8"))
        (directory / "index.html").write_text(render(doc), encoding="utf-8")
        specs.append(f"{entry['column']}={directory / 'results.json'}")
    return subprocess.call([sys.executable, "-m", "conformance", "dashboard", *specs, "--out", str(out),
                            "--title", columns["title"]], cwd=ROOT)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="ecosystem/snapshot.py")
    parser.add_argument("out")
    parser.add_argument("--node-sdk", action="append", default=[], metavar="NODE_MODULES")
    parser.add_argument("--server-everything", metavar="BIN")
    parser.add_argument("--pages-only", action="store_true",
                        help="run nothing: rebuild the HTML pages from the results kept in OUT")
    args = parser.parse_args(argv)
    out = Path(args.out).resolve()
    if args.pages_only:
        if not (out / "dashboard.json").exists():
            print(f"ecosystem/snapshot.py: {out / 'dashboard.json'} not found: no snapshot to rebuild pages from",
                  file=sys.stderr)
            return 2
        return pages(out)
    shutil.rmtree(out / "runs", ignore_errors=True)
    runs: list[tuple[str, str, int]] = []  # (column, run directory, exit code)

    def run(column: str, name: str, argv: list[str], env: dict | None = None) -> None:
        runs.append((column, *suite(out, name, argv, env)))

    run("reference", "reference-server", ["server", "--command", f"{PY} -m reference_servers.everything"])
    from conformance.targets.peerkit import free_port, spawn

    port = free_port()
    with spawn([sys.executable, "-m", "reference_servers.everything", "--http", str(port)], cwd=ROOT,
               env={**os.environ, "MCPX_MEMORY_STORE": ":memory:"}) as server:
        if server.wait_listening(port):
            run("reference (HTTP)", "reference-server-http", ["server", "--url", f"http://127.0.0.1:{port}/mcp"])
    run("reference", "reference-host", ["host", "--command", f"{PY} -m reference_clients.host", *CLAIM_HOST])
    run("reference", "reference-gateway", ["gateway", "--command", f"{PY} -m reference_servers.gateway",
                                           "--adapter", "reference_servers.gateway.adapter:factory"])
    from importlib.metadata import version

    run(f"naive Python mcp {version('mcp')}", "naive-python",
        ["server", "--command", f"{PY} tests/servers/naive_sdk_server.py", *CLAIM_SERVER_FIELDS])
    for node_modules in map(Path, args.node_sdk):
        release = node_sdk_version(node_modules)
        env = {"NODE_PATH": str(node_modules.resolve())}
        for variant in ("naive", "lowlevel"):
            run(f"TypeScript SDK {release} ({'McpServer' if variant == 'naive' else 'low-level Server'})",
                f"typescript-{release}-{variant}",
                ["server", "--command", f"node ecosystem/typescript/naive_server.cjs {variant}",
                 "--env", f"NODE_PATH={env['NODE_PATH']}", *CLAIM_SERVER_FIELDS], env)
    if args.server_everything:
        run("server-everything (npm)", "server-everything",
            ["server", "--command", f"{shlex.quote(args.server_everything)} stdio"])
    (out / "dashboard.json").write_text(json.dumps(
        {"title": TITLE, "runs": [{"column": column, "run": name} for column, name, _ in runs]}, indent=2) + "\n",
        encoding="utf-8")
    code = pages(out)
    for column, name, status in runs:
        print(f"  {name:<32} exit {status}")
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
