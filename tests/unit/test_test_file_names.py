"""Every test module has a name of its own, so a failing test's file name says which file it is."""

from collections import defaultdict

from tests.helpers import ROOT


def test_test_module_names_are_unique_under_tests():
    paths = defaultdict(list)
    for path in (ROOT / "tests").rglob("test_*.py"):
        paths[path.name].append(str(path.relative_to(ROOT)))
    assert {name: found for name, found in paths.items() if len(found) > 1} == {}
