"""Long and matrix runs, kept out of the default test run.

    nox -s tests                 the suite's own tests (what CI runs)
    nox -s lint                  ruff
    nox -s sdk                   the reference server on each mcp release, every server check, stdio and HTTP
    nox -s "sdk(mcp='1.9.4')"    one release
    nox -s matrix                the SDK matrix: reference and naive servers on each release -> reports/sdk-matrix.md
    nox -s determinism           twenty full runs against the reference implementations give identical verdicts
"""

import nox

nox.options.sessions = ["tests", "lint"]
nox.options.reuse_existing_virtualenvs = True

# Releases the reference implementations must run on (DESIGN.md "SDK matrix").
SDK_RELEASES = ["1.9.4", "1.23.3", "1.30.0", "2.0.0", "2.3.0"]


@nox.session
def tests(session):
    session.install("-e", ".[reference,test]")
    session.run("python", "-m", "pytest", *session.posargs)


@nox.session
def lint(session):
    session.install("ruff")
    session.run("ruff", "check", "conformance", "reference_servers", "reference_clients", "tests", "bench")


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
    session.run("python", "-m", "conformance.matrix", "run", "reports/sdk-matrix")


@nox.session
def determinism(session):
    """Twenty reruns of every role against the reference implementations, and xdist against serial."""
    session.install("-e", ".[reference,test]")
    session.run("python", "-m", "pytest", "tests/test_determinism.py", "-q", *session.posargs,
                env={"MCPX_RERUNS": "20", "MCPX_DETERMINISM_TARGETS": "reference"})


@nox.session
def gateway_third_party(session):
    """Gatekit 0.3.0 and mcp-proxy 0.13.0 in front of the suite's upstream, each in its own virtualenv
    (both conflict with the project's mcp 2.x); pins their transparency findings."""
    session.install("-e", ".[reference,test]")
    tools = {}
    for name, package, binary in (("gatekit", "gatekit==0.3.0", "gatekit-gateway"),
                                  ("mcp-proxy", "mcp-proxy==0.13.0", "mcp-proxy")):
        venv = f"{session.virtualenv.location}-{name}"
        session.run("python", "-m", "venv", venv)
        session.run(f"{venv}/bin/python", "-m", "pip", "install", "-q", package, external=True)
        tools[name] = f"{venv}/bin/{binary}"
    session.run("python", "-m", "pytest", "tests/test_gateway_third_party.py", "-q", "-rs", *session.posargs,
                env={"MCPX_GATEKIT": tools["gatekit"], "MCPX_MCP_PROXY": tools["mcp-proxy"]})
