"""The reference server passes every server-role check, over stdio and over Streamable HTTP. The first test
starts it as a user does; the others run it as a child of the worker's fork server (`reference_server_env`)."""

import os

import pytest

from conformance.targets import TargetSpec
from tests.helpers import not_ok, reference_command, reference_http_server, server_verdicts

EXPECTED_SKIPS = {"context-middleware/server/unadvertised-method-rejected",
                  "augmentation/server/unadvertised-method-rejected",
                  "interceptors/server/unadvertised-method-rejected"}


def assert_all_pass(verdicts, skips=EXPECTED_SKIPS):
    assert not_ok(verdicts) == {}
    assert {cid for cid, r in verdicts.items() if r.outcome == "skip"} == skips
    assert all(r.claim["claimed"] for cid, r in verdicts.items() if cid not in skips)


def test_reference_server_stdio_passes_every_check():
    assert_all_pass(server_verdicts(TargetSpec("stdio", command=reference_command())))


@pytest.fixture
def reference_http(reference_server_env):
    with reference_http_server(env={**os.environ, **reference_server_env}) as port:
        yield f"http://127.0.0.1:{port}/mcp"


def test_reference_server_http_passes_every_check(reference_http):
    assert_all_pass(server_verdicts(TargetSpec("http", url=reference_http)))


def test_reference_server_with_every_profile_claimed(reference_server_env):
    claimed = {"preprocessor-tools", "execution-requirements", "context-middleware", "augmentation", "interceptors"}
    verdicts = server_verdicts(TargetSpec("stdio", command=reference_command(), env=reference_server_env),
                               claimed=claimed)
    assert not_ok(verdicts) == {}
    assert all(r.claim["claimedBy"] == "option" for r in verdicts.values())


SDK_MAJOR = int(__import__("importlib.metadata").metadata.version("mcp").split(".")[0])


@pytest.mark.skipif(SDK_MAJOR < 2, reason="the 2026-07-28 connection mode exists from mcp 2.0 on")
def test_reference_server_in_the_2026_mode_over_stdio_and_http(reference_http, reference_server_env):
    for spec in (TargetSpec("stdio", command=reference_command(), connection_mode="2026-07-28",
                            env=reference_server_env),
                 TargetSpec("http", url=reference_http, connection_mode="2026-07-28")):
        # The 2026-07-28 revision has no ping: its check skips, saying so.
        assert_all_pass(server_verdicts(spec), EXPECTED_SKIPS | {"preprocessor-tools/server/ping-answered"})
