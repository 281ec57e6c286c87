"""The suite's client (conformance/client/) is role-neutral: the server and the gateway role both build on it,
it imports no role package, and the gateway imports nothing of the server role."""

import ast
from pathlib import Path

import pytest

from tests.helpers import ROOT

PACKAGE = ROOT / "conformance"


def imported(path: Path, source: str | None = None) -> set[str]:
    """Every module `path` imports, relative imports resolved, at any depth (imports inside functions too)."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    package = parts[:-1]  # a module's package; an __init__.py's is its own directory, the same parts
    out = set()
    source = path.read_text(encoding="utf-8") if source is None else source
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            out.add(module)
            out.update(f"{module}.{alias.name}" for alias in node.names)  # `from .. import server`
    return out


def imports_into(package: str, forbidden: tuple[str, ...]) -> dict[str, list[str]]:
    found = {}
    for path in sorted((PACKAGE / package).rglob("*.py")):
        bad = sorted(m for m in imported(path) if any(m == f or m.startswith(f + ".") for f in forbidden))
        if bad:
            found[str(path.relative_to(ROOT))] = bad
    return found


@pytest.mark.parametrize("package, forbidden", [
    ("client", ("conformance.server", "conformance.gateway", "conformance.host")),
    ("gateway", ("conformance.server",)),
])
def test_role_packages_import_only_downward(package, forbidden):
    assert imports_into(package, forbidden) == {}


@pytest.mark.parametrize("line, module", [
    ("from ..server.session import Session", "conformance.server.session"),
    ("from .. import server", "conformance.server"),
    ("def f():\n    from conformance.server import record", "conformance.server"),
])
def test_the_scan_resolves_what_a_gateway_module_imports(line, module):
    """The scan the test above relies on (so that test can fail): each spelling of a server import is seen."""
    assert module in imported(PACKAGE / "gateway" / "common.py", line)
