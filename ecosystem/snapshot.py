"""The ecosystem snapshot: every implementation the repository can run or has judged, checked, on one dashboard.

    python ecosystem/snapshot.py OUT_DIR [--python-sdk PYTHON]... [--fastmcp PYTHON]... [--node-sdk DIR]...
                                 [--node-sdk-v2 DIR]... [--server-everything BIN] [--only NAME]...
    python ecosystem/snapshot.py OUT_DIR --pages-only

Runs the suite (`python -m conformance`) against, column by column:

- ours: the reference server (stdio and Streamable HTTP), host and gateway (transparency and pipeline),
  and the reference adapter replaying the interceptors working group's fixtures (tests/data/interceptor-fixtures);
- SDKs: the naive Python SDK server (tests/servers/naive_sdk_server.py) on the installed mcp and on the
  mcp of each --python-sdk interpreter; FastMCP's servers in ecosystem/fastmcp/ (naive and subclass; one
  pair per --fastmcp interpreter); the TypeScript SDK servers in ecosystem/typescript/ (naive and
  low-level; one pair per --node-sdk, a node_modules directory holding @modelcontextprotocol/sdk), and on its
  v2 packages in ecosystem/typescript-v2/ (one pair per --node-sdk-v2, a node_modules directory holding
  @modelcontextprotocol/server);
- third parties, each found through the variable its pinning test reads (tests/test_*_third_party.py), so
  one installation serves both: the npm server-everything (--server-everything, its binary); the agent
  frameworks as hosts, stock and through their recipes (MCPX_FW_*); the gateways in front of the suite's
  upstream (MCPX_GATEKIT, MCPX_MCP_PROXY, MCPX_SUPERGATEWAY, MCPX_MCP_PROXY_NPM, MCPX_LASSO,
  MCPX_CONTEXTFORGE_PYTHON) and Gatekit's and ContextForge's plugin pipelines through their adapters (the
  CLI run by the gateway's own interpreter, which must also have the suite's dependencies); mcp-hangar
  (MCPX_HANGAR) on its MCP endpoint, through its interceptor-route bridge and through its WG adapter.
  A third party whose variable is unset is not run, and the summary says so.

Each run's reports go to OUT_DIR/runs/<name>/ (results.json, summary.md, index.html), with an
`implementation` object added to results.json (name, version as installed, kind, and the recipe, adapter
or launcher of this repository it ran through): the dashboard groups columns by role and kind and shows
each one's version and the day it ran. The columns go to OUT_DIR/dashboard.json, then `mcp-ext-conformance
dashboard` writes OUT_DIR/index.html. `nox -s ecosystem_snapshot` installs everything and calls this.
A column not run this time (its third party is not installed here, or `--only NAME`, repeatable, named
other runs) keeps its last real run, whose date the dashboard shows; the summary lists what was kept. A
run that fails is a finding, not an error: the snapshot records it. The kept reports name no place on this
machine: paths under the checkout relative to it, the suite's own interpreter as `python`, and a path outside
the checkout (another interpreter, a third party's binary, a node_modules) by its last part, marked
"(outside the checkout)".

Git keeps the data (results.json, summary.md, dashboard.json), not the pages:
each index.html is rendered from its results.json alone, so --pages-only
rebuilds every page of a checkout's snapshot in seconds without running
anything (`nox -s dashboard -- --pages-only`).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from conformance.core.roles import HOST  # noqa: E402

PY = shlex.quote(sys.executable)
CLAIM_SERVER_FIELDS = ["--profile", "preprocessor-tools", "--profile", "execution-requirements"]
CLAIM_HOST = [a for p in HOST.profiles for a in ("--profile", p)]  # every profile the host role has
HOSTS = ROOT / "ecosystem" / "hosts"
KEPT_BYTES = 4_000_000  # git keeps every run's results.json: larger ones lose their recorded exchanges (slim)
KEEP = {"results.json", "summary.md", "index.html"}  # index.html is not committed (.gitignore): pages() rebuilds it
TITLE = "MCP extension conformance: the ecosystem"


def suite(out: Path, name: str, argv: list[str], env: dict | None, implementation: dict,
          python: str = sys.executable) -> tuple[str, int]:
    """One run of the CLI into OUT/runs/<name>/; its results.json then names the implementation it judged."""
    directory = out / "runs" / name
    print(f"snapshot: {name}", flush=True)
    # A survey: an implementation that claims nothing is a finding, not a failed run (exit 0, not 5).
    code = subprocess.call([python, "-m", "conformance", *argv, "--report-dir", str(directory),
                            "--allow-nothing-tested"], cwd=ROOT,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           env={**os.environ, "MCPX_MEMORY_STORE": ":memory:", **(env or {})})
    for path in directory.iterdir() if directory.exists() else ():
        if path.name not in KEEP:  # junit, raw pytest report and badges: regenerable, not worth a diff
            shutil.rmtree(path) if path.is_dir() else path.unlink()
        else:
            path.write_text(machine_free(path.read_text(encoding="utf-8"), [python, *argv, *(env or {}).values()]),
                            encoding="utf-8")
    results = directory / "results.json"
    if results.is_file():
        doc = json.loads(results.read_text(encoding="utf-8"))
        doc["implementation"] = {k: v for k, v in implementation.items() if v}
        results.write_text(json.dumps(slim(doc), indent=2) + "\n", encoding="utf-8")
    return name, code


def outside(named: list[str]) -> list[str]:
    """The absolute paths outside the checkout that the words of a run name (interpreters, binaries,
    node_modules), longest first: the ones a report would otherwise show as this machine has them."""
    found = set()
    for word in named:
        try:
            words = shlex.split(word)
        except ValueError:
            words = word.split()
        for part in words:
            part = part.partition("=")[2] if "=" in part and not part.startswith("/") else part
            if os.path.isabs(part) and not Path(part).resolve().is_relative_to(ROOT) and part != sys.executable:
                found.add(part)
    return sorted(found, key=len, reverse=True)


def machine_free(text: str, named: list[str]) -> str:
    """`text` naming no place on this machine: the suite's own interpreter as a reader would start it,
    `python` (nox's is under the checkout), paths under the checkout relative to it, and a path outside it
    (another interpreter, a third party's binary, a node_modules) by its last part and "(outside the checkout)"."""
    text = text.replace(f"{sys.executable} ", "python ").replace(f'"{sys.executable}"', '"python"')
    for path in outside(named):
        text = text.replace(path, f"{Path(path).name} (outside the checkout)")
    return text.replace(f"{ROOT}/", "").replace(str(ROOT), ".")


def slim(doc: dict) -> dict:
    """A run whose results.json would pass KEPT_BYTES keeps its verdicts, reasons, expected and actual, not each
    check's recorded exchanges (a host looping to its step limit repeats a growing history in every check's
    evidence); `implementation.exchangesDropped` says so, and a rerun shows the traffic."""
    if len(json.dumps(doc, indent=2)) > KEPT_BYTES:
        for check in doc["checks"]:
            check.pop("exchanges", None)
        doc["implementation"]["exchangesDropped"] = True
    return doc


def node_sdk_version(node_modules: Path, package: str = "sdk") -> str:
    return json.loads((node_modules / "@modelcontextprotocol" / package / "package.json").read_text())["version"]


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


def py_version(python: str | None, distribution: str) -> str | None:
    """The version of `distribution` installed beside `python` (a virtualenv's interpreter), if any."""
    if not python:
        return None
    proc = subprocess.run([python, "-c", f"from importlib.metadata import version; print(version({distribution!r}))"],
                          capture_output=True, text=True, timeout=60)
    return proc.stdout.strip() or None if proc.returncode == 0 else None


def venv_python(binary: str) -> str:
    """The interpreter of the virtualenv a console script was installed into."""
    return str(Path(binary).parent / "python")


def npm_version(binary: str, package: str) -> str | None:
    """The version of `package` in the node_modules whose .bin holds `binary`."""
    manifest = Path(binary).parent.parent / package / "package.json"
    return json.loads(manifest.read_text())["version"] if manifest.is_file() else None


def tool(variable: str) -> str | None:
    """What the variable names, when it is a file (the pinning tests' convention: unset means not installed)."""
    value = os.environ.get(variable)
    return value if value and Path(value).is_file() else None


# Agent frameworks as hosts: directory under ecosystem/hosts, the variable naming its virtualenv's python,
# its distribution and the name its column carries (tests/test_hosts_third_party.py pins the same runs).
FRAMEWORKS = [
    ("openai-agents", "MCPX_FW_OPENAI_AGENTS", "openai-agents", "openai-agents"),
    ("pydantic-ai", "MCPX_FW_PYDANTIC_AI", "pydantic-ai-slim", "pydantic-ai"),
    ("langchain", "MCPX_FW_LANGCHAIN", "langchain-mcp-adapters", "langchain-mcp-adapters"),
    ("mcp-use", "MCPX_FW_MCP_USE", "mcp-use", "mcp-use"),
    ("smolagents", "MCPX_FW_SMOLAGENTS", "smolagents", "smolagents"),
    ("fast-agent", "MCPX_FW_FAST_AGENT", "fast-agent-mcp", "fast-agent"),
]
HOST_STOCK = ["--profile", "preprocessor-tools", "--profile", "execution-requirements", "--profile",
              "context-middleware"]
HOST_RECIPE = [a for p in HOST.profiles if p != "interceptors" for a in ("--profile", p)]  # the recipes predate it
# ecosystem/fastmcp/naive_server.py, the field-survival probe, declares two of the fixture contract's tools
# (conformance_memories, conformance_gated_ok): the checks needing another tool are left out, not failed.
FASTMCP_CHECKS = ("not (ordinary-tool-unaffected or all-requirements-enforced or fixture-requirements-declared-exactly"
                  " or requirement-matching-exact or unmet-requirement-body-not-run or unmet-requirement-fails-call"
                  " or unmet-error-names-requirement)")
HTTP_GATEWAY = ["--url", "http://127.0.0.1:{port}/mcp"]  # the gateway serves Streamable HTTP on {port}
GATEWAYS = ROOT / "ecosystem" / "gateways"
HANGAR_HEADER = "MCP-Interceptor-Ext: io.modelcontextprotocol/interceptors"
WG_FIXTURES = "tests/data/interceptor-fixtures"


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="ecosystem/snapshot.py")
    parser.add_argument("out")
    parser.add_argument("--node-sdk", action="append", default=[], metavar="NODE_MODULES")
    parser.add_argument("--node-sdk-v2", action="append", default=[], metavar="NODE_MODULES",
                        help="node_modules with @modelcontextprotocol/server: the v2 servers on it (repeatable)")
    parser.add_argument("--python-sdk", action="append", default=[], metavar="PYTHON",
                        help="an interpreter with another mcp release: the naive server on it (repeatable)")
    parser.add_argument("--fastmcp", action="append", default=[], metavar="PYTHON",
                        help="an interpreter with a fastmcp release: its naive and subclass servers (repeatable)")
    parser.add_argument("--server-everything", metavar="BIN")
    parser.add_argument("--only", action="append", default=[], metavar="NAME",
                        help="run only these runs (their directory names); keep the snapshot's other columns")
    parser.add_argument("--pages-only", action="store_true",
                        help="run nothing: rebuild the HTML pages from the results kept in OUT")
    return parser.parse_args(argv)


class Snapshot:
    """The runs of one invocation: what it ran, what it could have run, and what is not installed here."""

    def __init__(self, out: Path, only: list[str]):
        self.out, self.only = out, only
        self.runs: list[tuple[str, str, int]] = []  # (column, run directory, exit code)
        self.left_out: list[str] = []
        self.planned: list[str] = []  # every run this invocation could make, in the snapshot's order

    def run(self, column: str, name: str, argv: list[str], about: dict, env: dict | None = None,
            python: str = sys.executable) -> None:
        self.planned.append(name)
        if self.only and name not in self.only:
            return
        shutil.rmtree(self.out / "runs" / name, ignore_errors=True)
        self.runs.append((column, *suite(self.out, name, argv, env, {"name": column, **about}, python)))


def run_ours(snap: Snapshot) -> None:
    """The reference server (stdio, HTTP), the reference adapter on the WG fixtures, host and gateway."""
    from conformance import __version__
    from conformance.targets.peerkit import free_port, spawn

    ours = {"version": __version__, "kind": "reference"}
    snap.run("reference server", "reference-server",
             ["server", "--command", f"{PY} -m reference_servers.everything"], ours)
    port = free_port()
    with spawn([sys.executable, "-m", "reference_servers.everything", "--http", str(port)], cwd=ROOT,
               env={**os.environ, "MCPX_MEMORY_STORE": ":memory:"}) as server:
        if server.wait_listening(port):
            snap.run("reference server (HTTP)", "reference-server-http",
                     ["server", "--url", f"http://127.0.0.1:{port}/mcp"], ours)
    snap.run("reference adapter, WG fixtures", "reference-wg-fixtures",
             ["server", "--adapter", "reference_servers.interceptor_chain:wg_adapter", "--wg-fixtures", WG_FIXTURES],
             {**ours, "via": f"the interceptors working group's fixture format and adapter contract ({WG_FIXTURES})"})
    snap.run("reference host", "reference-host",
             ["host", "--command", f"{PY} -m reference_clients.host", *CLAIM_HOST], ours)
    snap.run("reference gateway", "reference-gateway",
             ["gateway", "--command", f"{PY} -m reference_servers.gateway",
              "--adapter", "reference_servers.gateway.adapter:factory"], ours)


def run_sdks(snap: Snapshot, args: argparse.Namespace) -> None:
    """The naive servers on each SDK release given: Python mcp, FastMCP, the TypeScript SDK (v1 and v2)."""
    from importlib.metadata import version

    mcp = version("mcp")
    snap.run(f"naive Python mcp {mcp}", "naive-python",
             ["server", "--command", f"{PY} tests/servers/naive_sdk_server.py", *CLAIM_SERVER_FIELDS],
             {"version": mcp, "kind": "sdk", "via": "tests/servers/naive_sdk_server.py"})
    for python in args.python_sdk:
        release = py_version(python, "mcp")
        if release and release != mcp:
            snap.run(f"naive Python mcp {release}", f"naive-python-{release}",
                     ["server", "--command", f"{shlex.quote(python)} tests/servers/naive_sdk_server.py",
                      *CLAIM_SERVER_FIELDS],
                     {"version": release, "kind": "sdk", "via": "tests/servers/naive_sdk_server.py"})
    for python in args.fastmcp:
        release = py_version(python, "fastmcp")
        for variant in ("naive", "subclass"):
            snap.run(f"FastMCP {release} ({'decorators' if variant == 'naive' else 'FunctionTool subclass'})",
                     f"fastmcp-{release}-{variant}",
                     ["server", "--command", f"{shlex.quote(python)} ecosystem/fastmcp/naive_server.py {variant}",
                      *CLAIM_SERVER_FIELDS, "-k", FASTMCP_CHECKS],
                     {"version": release, "kind": "sdk",
                      "via": f"ecosystem/fastmcp/naive_server.py {variant} (the field-survival probe: two fixture "
                             "tools, so the checks needing the others are not run)"})
    node_sdks = [(Path(d), "sdk", "typescript", "TypeScript SDK") for d in args.node_sdk] + \
        [(Path(d), "server", "typescript-v2", "TypeScript SDK v2") for d in args.node_sdk_v2]
    for node_modules, package, folder, title in node_sdks:
        release = node_sdk_version(node_modules, package)
        env = {"NODE_PATH": str(node_modules.resolve())}
        for variant in ("naive", "lowlevel"):
            snap.run(f"{title} {release} ({'McpServer' if variant == 'naive' else 'low-level Server'})",
                     f"{folder}-{release}-{variant}",
                     ["server", "--command", f"node ecosystem/{folder}/naive_server.cjs {variant}",
                      "--env", f"NODE_PATH={env['NODE_PATH']}", *CLAIM_SERVER_FIELDS],
                     {"version": release, "kind": "sdk", "via": f"ecosystem/{folder}/naive_server.cjs {variant}"}, env)


def run_third_party_servers(snap: Snapshot, args: argparse.Namespace) -> None:
    """server-everything (npm) and mcp-hangar: its MCP endpoint, its interceptor routes, its WG adapter."""
    if args.server_everything:
        snap.run("server-everything (npm)", "server-everything",
                 ["server", "--command", f"{shlex.quote(args.server_everything)} stdio"],
                 {"version": npm_version(args.server_everything, "@modelcontextprotocol/server-everything"),
                  "kind": "third-party"})
    else:
        snap.left_out.append("server-everything (--server-everything)")
    hangar = tool("MCPX_HANGAR")
    if not hangar:
        snap.left_out.append("mcp-hangar (MCPX_HANGAR)")
        return
    about = {"version": py_version(venv_python(hangar), "mcp-hangar"), "kind": "third-party"}
    with hangar_serving(hangar) as base:
        if base is None:
            snap.left_out.append("mcp-hangar (did not start listening)")
            return
        snap.run("mcp-hangar (MCP endpoint)", "mcp-hangar-mcp",
                 ["server", "--url", f"{base}/mcp", "--header", HANGAR_HEADER], about)
        snap.run("mcp-hangar (interceptor routes)", "mcp-hangar-routes",
                 ["server", "--command", f"{PY} ecosystem/gateways/hangar/bridge.py --url {base}"],
                 {**about, "via": "ecosystem/gateways/hangar/bridge.py"})
        snap.run("mcp-hangar (WG adapter)", "mcp-hangar-wg-adapter",
                 ["server", "--adapter", "ecosystem.gateways.hangar.wg_adapter:factory", "--wg-fixtures", WG_FIXTURES],
                 {**about, "via": "ecosystem/gateways/hangar/wg_adapter.py"}, {"MCPX_HANGAR_URL": base})


def gateway_runs() -> list[tuple]:
    """(installed, column, run, gateway options, distribution's version, via) of each third-party gateway."""
    gatekit, mcp_proxy, lasso = tool("MCPX_GATEKIT"), tool("MCPX_MCP_PROXY"), tool("MCPX_LASSO")
    supergateway, mcp_proxy_npm = tool("MCPX_SUPERGATEWAY"), tool("MCPX_MCP_PROXY_NPM")
    contextforge = tool("MCPX_CONTEXTFORGE_PYTHON")
    return [
        (gatekit, "Gatekit", "gatekit-stdio", lambda: ["--command", f"{PY} {GATEWAYS}/gatekit/launcher.py {gatekit}"],
         lambda: py_version(venv_python(gatekit), "gatekit"), "ecosystem/gateways/gatekit/launcher.py"),
        (mcp_proxy, "mcp-proxy (PyPI), stdio to HTTP", "mcp-proxy-stdio-to-http",
         lambda: ["--command", f"{mcp_proxy} --transport streamablehttp {{upstream}}", "--upstream", "http"],
         lambda: py_version(venv_python(mcp_proxy), "mcp-proxy"), None),
        (mcp_proxy, "mcp-proxy (PyPI), HTTP to stdio", "mcp-proxy-http-to-stdio",
         lambda: ["--command", f"{mcp_proxy} --port {{port}} -- sh -c {{upstream}}", *HTTP_GATEWAY],
         lambda: py_version(venv_python(mcp_proxy), "mcp-proxy"), None),
        (supergateway, "supergateway, HTTP to stdio", "supergateway-http-to-stdio",
         lambda: ["--command", f"{supergateway} --stdio {{upstream}} --outputTransport streamableHttp "
                               "--port {port} --logLevel none", *HTTP_GATEWAY],
         lambda: npm_version(supergateway, "supergateway"), None),
        (supergateway, "supergateway, stdio to HTTP", "supergateway-stdio-to-http",
         lambda: ["--command", f"{supergateway} --streamableHttp {{upstream}} --logLevel none", "--upstream", "http"],
         lambda: npm_version(supergateway, "supergateway"), None),
        (mcp_proxy_npm, "mcp-proxy (npm), HTTP to stdio", "mcp-proxy-npm-http-to-stdio",
         lambda: ["--command", f"{mcp_proxy_npm} --port {{port}} --server stream -- sh -c {{upstream}}",
                  *HTTP_GATEWAY],
         lambda: npm_version(mcp_proxy_npm, "mcp-proxy"), None),
        (lasso, "Lasso mcp-gateway", "lasso-stdio", lambda: ["--command", f"{PY} {GATEWAYS}/lasso/launcher.py {lasso}"],
         lambda: py_version(venv_python(lasso), "mcp-gateway"), "ecosystem/gateways/lasso/launcher.py"),
        # It takes 20-30 s to start (minutes on a loaded machine), hence the long bounds.
        (contextforge, "ContextForge, stdio to HTTP", "contextforge-stdio-to-http",
         lambda: ["--command", f"{PY} {GATEWAYS}/contextforge/launcher.py {contextforge}", "--upstream", "http",
                  "--timeout", "180", "--run-timeout", "400"],
         lambda: py_version(contextforge, "mcp-contextforge-gateway"), "ecosystem/gateways/contextforge/launcher.py"),
    ]


def run_gateways(snap: Snapshot) -> None:
    """The third-party gateways in front of the suite's upstream, then their plugin pipelines."""
    for installed, column, name, options, found_version, via in gateway_runs():
        if not installed:
            snap.left_out.append(f"{column} ({name})")
            continue
        snap.run(column, name, ["gateway", *options(), *([] if "--timeout" in options() else ["--timeout", "10"])],
                 {"version": found_version(), "kind": "third-party", **({"via": via} if via else {})})
    # Plugin pipelines: the CLI run by the interpreter that has the gateway (and the suite's dependencies).
    gatekit, contextforge = tool("MCPX_GATEKIT"), tool("MCPX_CONTEXTFORGE_PYTHON")
    pipelines = [(gatekit and venv_python(gatekit), "Gatekit pipeline", "gatekit-pipeline", "gatekit", "gatekit"),
                 (contextforge, "ContextForge pipeline (CPEX)", "contextforge-pipeline", "contextforge",
                  "mcp-contextforge-gateway")]
    for python, column, name, directory, distribution in pipelines:
        if not python:
            snap.left_out.append(f"{column} ({name})")
            continue
        snap.run(column, name, ["gateway", "--adapter", f"ecosystem.gateways.{directory}.adapter:factory"],
                 {"version": py_version(python, distribution), "kind": "third-party",
                  "via": f"ecosystem/gateways/{directory}/adapter.py"}, {"PYTHONPATH": str(ROOT)}, python)


def run_frameworks(snap: Snapshot) -> None:
    """The agent frameworks as hosts, stock and through their recipes."""
    for directory, variable, distribution, label in FRAMEWORKS:
        python = tool(variable)
        if not python:
            snap.left_out.append(f"{label} ({variable})")
            continue
        found = py_version(python, distribution)
        for program, claims in (("host", HOST_STOCK), ("recipe", HOST_RECIPE)):
            if (HOSTS / directory / f"{program}.py").is_file():
                snap.run(f"{label} {'stock' if program == 'host' else 'with the recipe'}", f"{directory}-{program}",
                         ["host", "--command", f"{shlex.quote(python)} ecosystem/hosts/{directory}/{program}.py",
                          *claims, "--timeout", "30"],
                         {"version": found, "kind": "third-party", "via": f"ecosystem/hosts/{directory}/{program}.py"})


def write_dashboard(snap: Snapshot, previous: list[dict]) -> int:
    """dashboard.json over this invocation's runs and the kept ones, the pages, and what was run, kept, left out."""
    out = snap.out
    # A column not run this time (not installed here, or not named by --only) keeps its last real run, dated.
    done = {name for _, name, _ in snap.runs}
    kept = [entry for entry in previous
            if entry["run"] not in done and (out / "runs" / entry["run"] / "results.json").is_file()]
    # In the snapshot's order; a kept column this invocation could not have made goes after, as it was.
    planned = snap.planned
    columns = sorted([{"column": column, "run": name} for column, name, _ in snap.runs] + kept,
                     key=lambda c: planned.index(c["run"]) if c["run"] in planned else len(planned))
    (out / "dashboard.json").write_text(json.dumps({"title": TITLE, "runs": columns}, indent=2) + "\n",
                                        encoding="utf-8")
    code = pages(out)
    for column, name, status in snap.runs:
        print(f"  {name:<32} exit {status}")
    for entry in kept:
        print(f"  kept from an earlier run: {entry['run']}")
    for what in snap.left_out if not snap.only else ():
        print(f"  not installed here: {what}")
    return code


def main(argv: list[str]) -> int:
    args = parse(argv)
    out = Path(args.out).resolve()
    if args.pages_only:
        if not (out / "dashboard.json").exists():
            print(f"ecosystem/snapshot.py: {out / 'dashboard.json'} not found: no snapshot to rebuild pages from",
                  file=sys.stderr)
            return 2
        return pages(out)
    previous = json.loads((out / "dashboard.json").read_text())["runs"] if (out / "dashboard.json").exists() else []
    snap = Snapshot(out, args.only)
    run_ours(snap)
    run_sdks(snap, args)
    run_third_party_servers(snap, args)
    run_gateways(snap)
    run_frameworks(snap)
    return write_dashboard(snap, previous)


@contextlib.contextmanager
def hangar_serving(hangar: str):
    """mcp-hangar serving Streamable HTTP on loopback with an empty fleet; its HTTP base, or None."""
    from conformance.targets.peerkit import free_port, spawn

    with tempfile.TemporaryDirectory(prefix="mcpx-hangar-") as home:
        (Path(home) / "config.yaml").write_text("mcp_servers: {}\n")
        port = free_port()
        env = {"PATH": os.environ.get("PATH", ""), "HOME": home}
        with spawn([hangar, "--config", f"{home}/config.yaml", "serve", "--http", "--port", str(port)],
                   env=env, cwd=home, grace=5.0) as server:
            yield f"http://127.0.0.1:{port}" if server.wait_listening(port, timeout=90) else None


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
