"""A fork server for the suite's own test doubles (the fake server, broken proxy, fake host and fake interceptor
server), on reference_servers/prefork.py: their imports (the upstream fixture server, asyncio, httpx) are most of
what a mutant's short run costs, and the mutant tests start several hundred of them.

    python tests/prefork_doubles.py SOCKET

A double started with MCPX_DOUBLES_PREFORK=SOCKET in its environment (`hand_over()`, the first lines of each
double's script) runs its script as the fork server's child, on the starter's own pipes, arguments and
environment, as the interpreter would run it. Only the mutant and variant tests use it (conftest.py,
`doubles_env`): the tests of what a start itself does (a target that hangs, ignores signals or leaves
processes behind: tests/test_zoo.py, tests/test_interrupt.py, tests/test_host_zoo.py) start their doubles plainly.
"""

from __future__ import annotations

import os
import sys

ENV = "MCPX_DOUBLES_PREFORK"
NAME = "test double"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPTS = ["tests/servers/fake_server.py", "tests/gateway/broken_proxy.py", "tests/hosts/fake_host.py",
           "tests/servers/fake_interceptor_server.py"]
_compiled: dict[str, object] = {}  # a script's real path -> its code, compiled once in the fork server


def hand_over() -> None:
    """In a double's script, before its imports, when ENV names a fork server (the script's first lines check,
    and put ROOT on sys.path to import this): run as its child and exit with its code; return (the script runs
    here) when none answers."""
    from reference_servers.prefork import hand_over as starter

    starter(os.environ[ENV], NAME)


def _preload() -> None:
    import argparse  # noqa: F401
    import asyncio  # noqa: F401
    import concurrent.futures  # noqa: F401
    import ctypes  # noqa: F401 - prefork's _die_with_parent
    import shlex  # noqa: F401
    import unicodedata  # noqa: F401

    import httpx  # noqa: F401

    import conformance.gateway.upstream  # noqa: F401
    import conformance.targets.peerkit  # noqa: F401

    for script in SCRIPTS:
        path = os.path.realpath(os.path.join(ROOT, script))
        with open(path, encoding="utf-8") as handle:
            _compiled[path] = compile(handle.read(), path, "exec")


def _run() -> int:
    """The starter's script, as `python SCRIPT ARGS` runs it: its own `__main__` module, its folder first on
    sys.path. A script not compiled beforehand is compiled now."""
    import types

    path = os.path.realpath(sys.argv[0])
    code = _compiled.get(path)
    if code is None:
        with open(path, encoding="utf-8") as handle:
            code = compile(handle.read(), path, "exec")
    sys.path[0] = os.path.dirname(path)  # in place of ROOT (below): the path `python SCRIPT` starts with
    main = types.ModuleType("__main__")
    main.__file__ = sys.argv[0]
    main.__builtins__ = __builtins__  # type: ignore[attr-defined]
    sys.modules["__main__"] = main
    exec(code, main.__dict__)  # noqa: S102 - a test double's own script, as the interpreter would run it
    return 0


if __name__ == "__main__":
    sys.path[0] = ROOT  # in place of this script's folder (tests/), which a double's path would not have
    from reference_servers.prefork import serve

    sys.exit(serve(sys.argv[1], NAME, ENV, _preload, _run))
