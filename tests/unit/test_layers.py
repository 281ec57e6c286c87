"""The suite's packages are layers, and no import runs back up: the check model (conformance/core/) at the
bottom, then the transports, the roles, the reports, the option table, the run loop, and the front ends on top.
An import from a lower layer to a higher one, or a circle of imports, fails here with the modules named.

Every import counts, also one inside a function (it is a dependency all the same); an import under
`if TYPE_CHECKING:` serves annotations only and never runs, so it does not."""

import ast
import functools
from pathlib import Path

from tests.helpers import ROOT

PACKAGE = ROOT / "conformance"
# The first name under conformance/ -> its layer, bottom (0) to top.
LAYERS = {
    "core": 0,
    "targets": 1,
    "client": 2, "server": 2, "host": 2, "gateway": 2,
    "report": 3,
    "options": 4,
    "run": 5,
    "cli": 6, "plugin": 6, "console": 6, "test_checks": 6, "__main__": 6, "_sigint": 6,
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@functools.cache  # parsed once for the three tests
def import_graph() -> dict[str, set[str]]:
    """{module: the conformance modules it imports}, from the source (nothing is imported)."""
    paths = {module_name(path): path for path in PACKAGE.rglob("*.py")}

    def resolve(name: str) -> str | None:
        while name and name not in paths:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for module, path in paths.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        typing_only = {id(node) for block in ast.walk(tree)
                       if isinstance(block, ast.If) and ast.unparse(block.test).endswith("TYPE_CHECKING")
                       for inner in block.body for node in ast.walk(inner)}
        package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
        found = set()
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            if isinstance(node, ast.Import):
                found |= {resolve(alias.name) for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = package[:len(package) - node.level + 1] if node.level else []
                stem = ".".join(base + ([node.module] if node.module else []))
                # `from x import y`: y is a module when x.y is one, else a name defined in x
                named = [f"{stem}.{alias.name}" for alias in node.names if f"{stem}.{alias.name}" in paths]
                found |= set(named) if named else {resolve(stem)}
        graph[module] = {name for name in found if name and name != module and name.startswith("conformance.")}
    return graph


def layer(module: str) -> int | None:
    parts = module.split(".")
    if len(parts) == 1:
        return None  # conformance/__init__.py: the version, nothing else
    assert parts[1] in LAYERS, f"{module}: a package or module with no layer in this test's LAYERS"
    return LAYERS[parts[1]]


def test_no_import_runs_from_a_lower_layer_to_a_higher_one():
    graph = import_graph()
    upward = [f"{module} (layer {layer(module)}) imports {name} (layer {layer(name)})"
              for module, names in sorted(graph.items()) for name in sorted(names)
              if layer(module) is not None and layer(name) is not None and layer(name) > layer(module)]
    assert upward == []


def test_no_circle_of_imports():
    graph = import_graph()
    circles = []
    for start in sorted(graph):
        # every module reachable from `start`; `start` among them is a circle through it
        seen, todo = set(), list(graph[start])
        while todo:
            name = todo.pop()
            if name not in seen:
                seen.add(name)
                todo.extend(graph.get(name, ()))
        if start in seen:
            circles.append(start)
    assert circles == []


def test_the_graph_sees_imports_of_every_form():
    """The parser reads relative, absolute and function-level imports (a test of the test)."""
    graph = import_graph()
    assert "conformance.core.model" in graph["conformance.core.runner"]  # from .model import (...)
    assert "conformance.core.spelling" in graph["conformance.core.roles"]  # inside a method
    assert "conformance.report.official" in graph["conformance.report.baseline"]
    assert "conformance.targets" not in graph["conformance.core.wire"]  # under TYPE_CHECKING
