"""The servers in examples/, one per SDK a user would pick, each pass every check of what they claim.

The Python `mcp` 2.x example runs wherever this interpreter has `mcp` 2.x. The FastMCP example needs an
interpreter with FastMCP 4.x (MCPX_FASTMCP_PYTHON; .ci/run builds one). The TypeScript examples need their
packages (`npm install` in the example's folder; .ci/run does it where npm is reachable).
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from conformance.targets import TargetSpec
from tests.helpers import ROOT, not_ok, server_verdicts

EXAMPLES = ROOT / "examples"
CLAIMED = {"preprocessor-tools", "execution-requirements", "context-middleware", "interceptors"}
FASTMCP_PYTHON = os.environ.get("MCPX_FASTMCP_PYTHON", "")


def python_command(python: str, example: str) -> str:
    return f"{shlex.quote(python)} {shlex.quote(str(EXAMPLES / example / 'server.py'))}"


def node_command(example: str) -> str:
    return f"{shutil.which('node') or 'node'} {shlex.quote(str(EXAMPLES / example / 'server.mjs'))}"


def installed(example: str) -> bool:
    return shutil.which("node") is not None and (EXAMPLES / example / "node_modules").is_dir()


EXAMPLE_TARGETS = [
    pytest.param(lambda: python_command(sys.executable, "python-mcp2"), id="python-mcp2", marks=pytest.mark.skipif(
        int(version("mcp").split(".")[0]) < 2, reason="this interpreter has mcp 1.x; the example is for 2.x")),
    pytest.param(lambda: python_command(FASTMCP_PYTHON, "fastmcp4"), id="fastmcp4", marks=pytest.mark.skipif(
        not Path(FASTMCP_PYTHON).is_file(), reason="no FastMCP 4.x interpreter (MCPX_FASTMCP_PYTHON)")),
    pytest.param(lambda: node_command("typescript-sdk1"), id="typescript-sdk1", marks=pytest.mark.skipif(
        not installed("typescript-sdk1"), reason="npm install in examples/typescript-sdk1 first")),
    pytest.param(lambda: node_command("typescript-v2"), id="typescript-v2", marks=pytest.mark.skipif(
        not installed("typescript-v2"), reason="npm install in examples/typescript-v2 first")),
]


@pytest.mark.parametrize("command", EXAMPLE_TARGETS)
def test_example_passes_every_check_of_what_it_claims(command):
    verdicts = server_verdicts(TargetSpec("stdio", command=command()))
    assert not_ok(verdicts) == {}
    judged = {cid.split("/")[0] for cid, r in verdicts.items() if r.outcome == "pass"}
    assert CLAIMED <= judged  # each claimed profile had checks that ran and passed
    claimed = {cid.split("/")[0] for cid, r in verdicts.items()
               if r.outcome != "skip" and not cid.endswith("/unadvertised-method-rejected")}
    assert claimed == CLAIMED


def test_every_example_has_its_files_and_is_tested():
    folders = sorted(p.name for p in EXAMPLES.iterdir() if p.is_dir())
    assert folders == sorted(p.id for p in EXAMPLE_TARGETS)
    for name in folders:
        files = {p.name for p in (EXAMPLES / name).iterdir() if p.name != "node_modules"}
        assert files >= ({"server.py", "requirements.txt"} if (EXAMPLES / name / "server.py").exists()
                         else {"server.mjs", "package.json"}), name
