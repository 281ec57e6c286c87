"""A user's first run, as a user makes it: the CLI as a subprocess, from a directory of their own, on the
mistakes and the unreachable targets people meet first. Each run must end with one short answer: the exit
code the README promises (2: the run could not start or reach its target), a few lines naming the cause
and the fix, and nothing of the machinery underneath (pytest's exceptions, its test file, tracebacks).

Targets here are small scripts written into the test's directory (a server still downloading, one that
prints a banner, one that writes a marker file when started at all), the suite's fixture server behind a
bearer token and over https with a throwaway CA (tests/servers/guarded_http_server.py), and the reference
server given to the host role by mistake.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from conformance.targets.peerkit import free_port, spawn
from tests.helpers import ROOT, gone_within

PY = shlex.quote(sys.executable)
GUARDED = ROOT / "tests" / "servers" / "guarded_http_server.py"
OLD_SSE = ROOT / "tests" / "servers" / "old_sse_server.py"
MAX_LINES = 8  # a diagnosis or usage error, with the progress line before it
INTERNALS = ("_pytest", "test_checks.py", "no tests ran", "INTERNALERROR", "Traceback", "rootdir:", "conftest",
             "pytest.")


@dataclass
class Run:
    code: int
    output: str  # stdout and stderr as the terminal shows them, interleaved
    cwd: Path

    @property
    def lines(self) -> list[str]:
        return self.output.strip().splitlines()

    def results(self) -> dict:
        return json.loads((self.cwd / "reports" / "latest" / "results.json").read_text())


def cli(cwd: Path, *argv: str, env: dict[str, str] | None = None, timeout: float = 60) -> Run:
    """`mcp-ext-conformance ARGV` from `cwd`, with this checkout's code (PYTHONPATH) as an installed copy."""
    environ = {**os.environ, **(env or {})}
    environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), environ.get("PYTHONPATH")]))
    proc = subprocess.run([sys.executable, "-m", "conformance", *argv], cwd=cwd, env=environ, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
    return Run(proc.returncode, proc.stdout, cwd)


def assert_short_answer(run: Run, code: int, *words: str) -> None:
    """Exit `code`, at most MAX_LINES lines, every one of `words`, no pytest internals."""
    shown = f"exit {run.code}:\n{run.output}"
    assert run.code == code, shown
    assert len(run.lines) <= MAX_LINES, shown
    for word in words:
        assert word in run.output, f"{word!r} missing from\n{shown}"
    for internal in INTERNALS:
        assert internal not in run.output, f"{internal!r} in\n{shown}"


def script(directory: Path, name: str, body: str) -> str:
    """A Python script in `directory`, as the command line that runs it."""
    path = directory / name
    path.write_text(body)
    return f"{PY} {shlex.quote(str(path))}"


# -- targets that never answer initialize ----------------------------------------------------------------

COLD_START = """
import os, sys, time
open("pid", "w").write(str(os.getpid()))
for n in range(60):
    print(f"npm warn exec downloading package {n} of 60", file=sys.stderr, flush=True)
    time.sleep(0.5)
"""

BANNER = """
import sys
print("Weather server v1.2 starting", flush=True)
print("Listening on stdio", flush=True)
for line in sys.stdin:
    pass
"""


def test_a_cold_start_that_outlasts_the_timeout_is_one_block_with_its_stderr_and_the_fix(tmp_path):
    run = cli(tmp_path, "server", "--command", script(tmp_path, "slow.py", COLD_START), "--timeout", "2")
    assert_short_answer(run, 2, "never answered initialize within 2 s", "npm warn exec downloading package",
                        "--timeout 60")
    assert run.output.count("never answered") == 1
    assert gone_within(int((tmp_path / "pid").read_text())), "the target was left running"
    doc = run.results()
    assert doc["exitCode"] == 2 and "never answered initialize" in doc["unavailable"]


def test_a_banner_on_stdout_is_quoted_with_the_rule(tmp_path):
    run = cli(tmp_path, "server", "--command", script(tmp_path, "banner.py", BANNER), "--timeout", "2")
    assert_short_answer(run, 2, "stdout must carry only JSON-RPC", "stdout: Weather server v1.2 starting",
                        "stdout: Listening on stdio")


@pytest.mark.parametrize("argv, words", [
    (["--command", f"{PY} -c pass"], ["exited (code 0) before answering initialize", "run it by hand"]),
    (["--command", f"{PY} missing.py"], ["exited (code 2) before answering initialize", "missing.py"]),
    (["--command", "no-such-command"], ["cannot start 'no-such-command': no such program on PATH"]),
], ids=["exits-at-once", "missing-script", "no-such-program"])
def test_a_command_that_starts_no_server_is_the_reason_alone(tmp_path, argv, words):
    assert_short_answer(cli(tmp_path, "server", *argv, "--timeout", "5"), 2, *words)


def test_a_url_where_nothing_listens_is_the_reason_alone(tmp_path):
    url = f"http://127.0.0.1:{free_port()}/mcp"
    run = cli(tmp_path, "server", "--url", url, "--timeout", "2")
    assert_short_answer(run, 2, f"nothing answers at {url}", "listening at that URL")
    assert run.results()["unavailable"].startswith("the target could not be started or reached")


def test_a_url_of_a_web_server_that_is_no_mcp_endpoint_quotes_its_answer_on_one_line(tmp_path):
    port = free_port()
    with spawn([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"], cwd=tmp_path) as web:
        assert web.wait_listening(port, timeout=20), web.stderr_tail()
        url = f"http://127.0.0.1:{port}/mcp"
        run = cli(tmp_path, "server", "--url", url, "--timeout", "5")
    assert_short_answer(run, 2, "never answered initialize: HTTP 501 (text/html)", "<title>Error response</title>",
                        f"is {url} the server's MCP endpoint?")
    assert len(run.lines) == 3, run.output


# -- usage mistakes: exit 2 before anything starts -------------------------------------------------------

MARKER = """
import pathlib
pathlib.Path(__file__).with_name("started").write_text("the target was started")
"""

USAGE = {  # id: (argv after the subcommand's target, words of the one line)
    "timeout-negative": (["--timeout", "-1"], ["--timeout", "positive number of seconds"]),
    "timeout-zero": (["--timeout", "0"], ["--timeout", "positive number of seconds"]),
    "run-timeout-negative": (["--run-timeout", "-5"], ["--run-timeout", "positive number of seconds"]),
    "env-without-equals": (["--env", "NOEQUALS"], ["'NOEQUALS' is not KEY=VALUE"]),
    "unknown-profile": (["--profile", "nonsense"], ["'nonsense' is not a server-role profile", "augmentation"]),
    "report-dir-is-a-file": (["--report-dir", "afile.txt"], ["'afile.txt' exists and is not a directory"]),
    "report-dir-unwritable": (["--report-dir", "/proc/nope"], ["'/proc/nope' is not a directory the run can write"]),
    "header-on-stdio": (["--header", "X-Api-Key: k"], ["--header goes with an HTTP target"]),
    "profile-typo": (["--profile", "interceptor"], ["'interceptor' is not a server-role profile",
                                                    "did you mean 'interceptors'?"]),
    "profile-of-another-role": (["--profile", "sequential-pipeline"], ["it is the gateway role's"]),
    "profile-typo-of-another-role": (["--profile", "sequential-pipelines"],
                                     ["did you mean 'sequential-pipeline'? it is the gateway role's"]),
    "no-select": (["-k", "nomatch"], ["no check matches -k 'nomatch'", "mcp-ext-conformance list"]),
    "expected-failures-unknown-id": (["--expected-failures", "baseline.yaml"], ["'no/such/check' is no check id"]),
    "expected-failures-not-yaml": (["--expected-failures", "afile.txt"], ["a list or a mapping of check ids"]),
}


@pytest.mark.parametrize("argv, words", USAGE.values(), ids=USAGE.keys())
def test_a_usage_mistake_is_one_line_before_the_target_starts(tmp_path, argv, words):
    (tmp_path / "afile.txt").write_text("not a directory")
    (tmp_path / "baseline.yaml").write_text("- no/such/check\n")
    run = cli(tmp_path, "server", "--command", script(tmp_path, "server.py", MARKER), *argv)
    assert_short_answer(run, 2, *words)
    assert len(run.lines) == 1, run.output
    assert not (tmp_path / "started").exists(), "the target was started before the mistake was reported"


USAGE_ALONE = {  # id: (argv, words): mistakes in the target option itself
    "empty-command": (["server", "--command", ""], ["--command", "the command is empty"]),
    "unquoted-command": (["server", "--command", "npx", "-y", "@acme/weather", "--timeout", "60"],
                         ["unrecognized arguments: -y @acme/weather",
                          "quote it as one argument: --command 'npx -y @acme/weather'"]),
    "url-without-scheme": (["server", "--url", "localhost:8000"], ["did you mean http://localhost:8000?"]),
    "unknown-adapter": (["gateway", "--adapter", "no.such:factory"], ["'no.such:factory' cannot be loaded"]),
    "list-unknown-profile": (["list", "--profile", "nonsense"], ["'nonsense'", "preprocessor-tools"]),
    "header-not-name-value": (["server", "--url", "http://127.0.0.1:9/mcp", "--header", "Bearer x"],
                              ["give a header as 'Name: value'"]),
    "header-unset-variable": (["server", "--url", "http://127.0.0.1:9/mcp", "--header",
                               "Authorization: Bearer ${MCPX_FIRST_CONTACT_UNSET}"],
                              ["${MCPX_FIRST_CONTACT_UNSET}", "not set"]),
    "header-value-with-newline": (["server", "--url", "http://127.0.0.1:9/mcp", "--header",
                                   "Authorization: Bearer ${MCPX_FIRST_CONTACT_NEWLINE}"],
                                  ["${MCPX_FIRST_CONTACT_NEWLINE}", "line break"]),
    "ca-bundle-not-pem": (["server", "--url", "https://127.0.0.1:9/mcp", "--ca-bundle", "afile.txt"],
                          ["'afile.txt' holds no CA certificate"]),
    "docker-port-negative": (["server", "--docker-image", "img", "--docker-port", "-5"],
                             ["--docker-port", "'-5': give a port from 1 to 65535"]),
    "docker-port-not-a-number": (["server", "--docker-image", "img", "--docker-port", "http"],
                                 ["--docker-port", "'http' is not a port"]),
    "docker-port-too-high": (["server", "--docker-image", "img", "--docker-port", "65536"],
                             ["'65536': give a port from 1 to 65535"]),
    "fixture-contract-not-a-number": (["server", "--command", "x", "--fixture-contract", "two"],
                                      ["'two' is not a fixture contract version"]),
    "fixture-contract-out-of-range": (["server", "--command", "x", "--fixture-contract", "0"],
                                      ["'0': give a fixture contract version from 1 to 6"]),
    "claim-without-its-profile": (["host", "--command", "/nonexistent/host", "--claim", "interceptor-overrides"],
                                  ["--claim interceptor-overrides goes with --profile interceptors"]),
    "claim-unknown-feature": (["host", "--command", "/nonexistent/host", "--claim", "overrides"],
                              ["--claim", "invalid choice: 'overrides'", "interceptor-overrides"]),
}


@pytest.mark.parametrize("argv, words", USAGE_ALONE.values(), ids=USAGE_ALONE.keys())
def test_a_target_option_mistake_is_one_line(tmp_path, argv, words):
    (tmp_path / "afile.txt").write_text("not a certificate")
    secret = f"planted-{uuid.uuid4().hex}"
    run = cli(tmp_path, *argv, env={"MCPX_FIRST_CONTACT_NEWLINE": f"{secret}\n"})
    assert_short_answer(run, 2, *words)
    assert len(run.lines) == 1, run.output
    assert secret not in run.output


# -- a server that claims nothing ---------------------------------------------------------------------------

def test_a_server_that_claims_no_profile_says_so_first(tmp_path):
    plain = f"{PY} {shlex.quote(str(ROOT / 'tests' / 'servers' / 'fake_server.py'))} --plain"
    run = cli(tmp_path, "server", "--command", plain)
    assert run.code == 5, run.output  # nothing tested: not a pass
    verdict = [line for line in run.lines if line.strip() and not line.startswith(("recording ", "  ["))]
    assert verdict[0].startswith("! Nothing of the MCP extensions was tested"), run.output
    assert not any(internal in run.output for internal in INTERNALS), run.output


# -- the wrong role ----------------------------------------------------------------------------------------

def test_a_server_given_to_the_host_role_is_told_it_may_not_be_a_host(tmp_path):
    run = cli(tmp_path, "host", "--command", f"{PY} -m reference_servers.everything", "--timeout", "3")
    assert_short_answer(run, 2, "answered no turn", "may not be a host", "mcp-ext-conformance server")
    assert run.output.count("may not be a host") == 1


def test_a_host_given_to_the_server_role_is_told_it_may_be_a_host_when_its_answer_arrives(tmp_path):
    # --timeout 60: the answer line ends the wait, not the timeout (the diagnosis would otherwise say "within 60 s")
    run = cli(tmp_path, "server", "--command", f"{PY} -m reference_clients.host", "--timeout", "60")
    assert_short_answer(run, 2, "never answered initialize", "a host's answer to a turn", "it may be a host",
                        "mcp-ext-conformance host --command", 'stdout: {"role": "assistant"')
    assert "within" not in run.output and "--timeout 60" not in run.output


# -- HTTP servers on the old transport, and redirects -------------------------------------------------------

@pytest.fixture(scope="module")
def old_sse_port():
    """A server of the `mcp` SDK on its HTTP+SSE transport (2024-11-05): GET /sse, POST /messages/."""
    port = free_port()
    with spawn([sys.executable, str(OLD_SSE), "--port", str(port)]) as server:
        assert server.wait_listening(port, timeout=30), server.stderr_tail()
        yield port


def test_a_server_on_the_old_http_sse_transport_is_told_it_is_not_supported_and_what_is(tmp_path, old_sse_port):
    run = cli(tmp_path, "server", "--url", f"http://127.0.0.1:{old_sse_port}/sse", "--timeout", "5")
    assert_short_answer(run, 2, "speaks the HTTP+SSE transport of 2024-11-05", "this suite does not support",
                        "it checks Streamable HTTP", "HTTP 405")
    assert "is it the server's MCP endpoint" not in run.output


@pytest.mark.parametrize("mount, path, location", [
    (None, "/sse/", "/sse"),  # a trailing slash the route does not have
    ("/mcp", "/mcp", "/mcp/"),  # a mounted app: its path without the slash
], ids=["slash-added", "slash-missing"])
def test_a_redirect_shows_where_it_points(tmp_path, mount, path, location):
    port = free_port()
    with spawn([sys.executable, str(OLD_SSE), "--port", str(port), *(["--mount", mount] if mount else [])]) as web:
        assert web.wait_listening(port, timeout=30), web.stderr_tail()
        run = cli(tmp_path, "server", "--url", f"http://127.0.0.1:{port}{path}", "--timeout", "5")
    target = f"http://127.0.0.1:{port}{location}"
    assert_short_answer(run, 2, f"answers HTTP 307, a redirect to {target}", f"--url {target}")


# -- a server given to the gateway role ---------------------------------------------------------------------

NOT_A_GATEWAY = "never contacted the upstream the suite started"


@pytest.mark.parametrize("upstream, variable", [("stdio", "MCPX_UPSTREAM_COMMAND"), ("http", "MCPX_UPSTREAM_URL")])
def test_a_server_given_to_the_gateway_role_is_told_it_never_contacted_the_upstream(tmp_path, upstream, variable):
    # Before: 7 checks passed (the transparency of the tool profiles) though the suite's upstream never started.
    marker = f"mcpx-plain-{uuid.uuid4().hex}"
    run = cli(tmp_path, "gateway", "--command", f"{PY} -m conformance.gateway.upstream --tag {marker}",
              "--upstream", upstream)
    assert_short_answer(run, 2, NOT_A_GATEWAY, f"({variable} / {{upstream}})", "is it a gateway, and does it read "
                        "that variable?")
    assert run.output.count(NOT_A_GATEWAY) == 1
    from tests.test_interrupt import processes_with

    assert processes_with(marker) == []


def test_the_reference_server_given_to_the_gateway_role_is_one_diagnosis(tmp_path):
    run = cli(tmp_path, "gateway", "--command", f"{PY} -m reference_servers.everything")
    assert_short_answer(run, 2, NOT_A_GATEWAY)
    assert run.output.count(NOT_A_GATEWAY) == 1


def test_a_gateway_with_a_static_upstream_of_its_own_is_one_diagnosis(tmp_path):
    # The reference gateway in front of a copy of the fixtures it started itself, not the one the suite started.
    config = tmp_path / "gateway.json"
    config.write_text(json.dumps({"upstreams": {"own": {"command": f"{sys.executable} -m conformance.gateway.upstream"}}}))
    run = cli(tmp_path, "gateway", "--command", f"{PY} -m reference_servers.gateway --config {shlex.quote(str(config))}")
    assert_short_answer(run, 2, NOT_A_GATEWAY)


# -- deployed servers: authorization and a private CA -------------------------------------------------------

@pytest.fixture(scope="module")
def token() -> str:
    return f"mcpx-planted-{uuid.uuid4().hex}"


@pytest.fixture(scope="module")
def guarded_url(token):
    """The fixture server behind `Authorization: Bearer <token>`, over plain HTTP."""
    port = free_port()
    env = {**os.environ, "MCPX_GUARD_TOKEN": token, "PYTHONPATH": str(ROOT)}
    with spawn([sys.executable, str(GUARDED), "--port", str(port)], env=env) as server:
        assert server.wait_listening(port, timeout=20), server.stderr_tail()
        yield f"http://127.0.0.1:{port}/mcp"


def assert_nowhere(secret: str, run: Run) -> None:
    assert secret not in run.output
    for path in (run.cwd / "reports").rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), f"the token is written in {path}"


def test_a_server_that_wants_authorization_says_so_and_how_to_pass_it(tmp_path, guarded_url):
    run = cli(tmp_path, "server", "--url", guarded_url, "--timeout", "5")
    assert_short_answer(run, 2, "wants authorization", "HTTP 401", 'Bearer realm="conformance-test"',
                        "--header 'Authorization: Bearer ${")
    assert "HTTP 401" in run.results()["unavailable"]


def test_a_token_from_the_environment_opens_the_door_and_is_written_nowhere(tmp_path, guarded_url, token):
    run = cli(tmp_path, "server", "--url", guarded_url, "--timeout", "5",
              "--header", "Authorization: Bearer ${MCPX_TEST_TOKEN}", env={"MCPX_TEST_TOKEN": token})
    assert run.code in (0, 1), run.output
    assert run.results()["target"]["headers"] == ["Authorization"]
    assert_nowhere(token, run)


def test_a_token_on_the_command_line_is_written_nowhere_either(tmp_path, guarded_url, token):
    run = cli(tmp_path, "server", "--url", guarded_url, "--timeout", "5",
              "--header", f"Authorization: Bearer {token}")
    assert run.code in (0, 1), run.output
    assert_nowhere(token, run)


@pytest.fixture(scope="module")
def private_ca(tmp_path_factory):
    """A throwaway CA and a loopback certificate it signed: (CA file, server certificate and key file)."""
    trustme = pytest.importorskip("trustme")
    directory = tmp_path_factory.mktemp("ca")
    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(directory / "ca.pem"))
    ca.issue_cert("127.0.0.1", "localhost").private_key_and_cert_chain_pem.write_to_path(str(directory / "server.pem"))
    return directory / "ca.pem", directory / "server.pem"


@pytest.fixture(scope="module")
def https_url(private_ca):
    port = free_port()
    cert = str(private_ca[1])
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("MCPX_GUARD_TOKEN", None)
    with spawn([sys.executable, str(GUARDED), "--port", str(port), "--cert", cert, "--key", cert], env=env) as server:
        assert server.wait_listening(port, timeout=20), server.stderr_tail()
        yield f"https://127.0.0.1:{port}/mcp"


def test_a_certificate_of_a_private_ca_asks_for_the_ca_bundle(tmp_path, https_url):
    run = cli(tmp_path, "server", "--url", https_url, "--timeout", "5")
    assert_short_answer(run, 2, "TLS certificate verification failed", https_url, "--ca-bundle")


def test_the_ca_bundle_lets_the_run_proceed(tmp_path, https_url, private_ca):
    run = cli(tmp_path, "server", "--url", https_url, "--timeout", "5", "--ca-bundle", str(private_ca[0]))
    assert run.code in (0, 1), run.output


def test_https_to_a_plain_http_server_is_a_handshake_failure(tmp_path, guarded_url):
    url = guarded_url.replace("http://", "https://")
    run = cli(tmp_path, "server", "--url", url, "--timeout", "5")
    assert_short_answer(run, 2, "TLS handshake failed", "http:// URL")


def test_an_http_client_error_quoting_a_header_value_is_redacted(guarded_url, token):
    """Behind the option's own check (a value HTTP cannot send is refused before the run): should the HTTP
    client still refuse a value, its error, which quotes the value, reaches the reason redacted."""
    import anyio

    from conformance.targets import TargetSpec

    async def initialize() -> str:
        spec = TargetSpec(kind="http", url=guarded_url, timeout=5, header={"Authorization": f"Bearer {token}\n"})
        async with spec.connect() as conn:
            exchange = await conn.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                                         "clientInfo": {"name": "t", "version": "0"}})
            return exchange.failure or ""

    failure = anyio.run(initialize)
    assert "Illegal header value" in failure and "[header value]" in failure
    assert token not in failure
