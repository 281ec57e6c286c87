"""The test run's own settings (the suite's checks live in conformance/, not here)."""

from __future__ import annotations

import os

import pytest

from tests.helpers import doubles_fork_server, server_fork_server


def pytest_xdist_auto_num_workers(config) -> int | None:
    """`-n auto` (the README's test command): two workers per core this process may use. Most tests wait on
    subprocesses, loopback servers and timeouts rather than compute, so a second worker per core fills the
    waits (on the 2-core development machine: about 5 min with four workers against 6 min 30 s with two).
    PYTEST_XDIST_AUTO_NUM_WORKERS, when set, decides instead (xdist's own rule)."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # xdist reads it
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return 2 * cores


@pytest.fixture(scope="session")
def reference_server_env(tmp_path_factory) -> dict[str, str]:
    """The environment that runs a reference server as a child of this worker's fork server
    (reference_servers/prefork.py): its start-up, 1.3 s of CPU importing the mcp SDK, is paid once per worker
    rather than once per server. The child is the same code on the starter's own pipes and environment; the tests
    of what a start itself does (the limits, a bind that must fail, the demo, the installed wheel) start it plainly."""
    with server_fork_server(str(tmp_path_factory.mktemp("server-prefork") / "server.sock")) as env:
        yield env


@pytest.fixture(scope="session")
def doubles_env(tmp_path_factory) -> dict[str, str]:
    """The environment that runs a test double (the fake server, broken proxy, fake host, fake interceptor server)
    as a child of this worker's doubles fork server (tests/prefork_doubles.py), for the mutant and variant tests,
    which start several hundred of them."""
    with doubles_fork_server(str(tmp_path_factory.mktemp("doubles-prefork") / "doubles.sock")) as env:
        yield env
