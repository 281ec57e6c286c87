"""The repository's own contract pages stand alone: they cover what the code requires, and nothing in the
repository points at documents a clean clone does not have."""

from __future__ import annotations

import re
import subprocess

import pytest

from conformance.core.model import REGISTRY
from conformance.core.roles import load_all
from tests.helpers import ROOT

load_all()

FIXTURE_CONTRACT = (ROOT / "docs" / "fixture-contract.md").read_text(encoding="utf-8")
CHECK_MODEL = (ROOT / "docs" / "check-model.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("need", sorted({need for check in REGISTRY.values() for need in check.needs}))
def test_every_fixture_a_check_needs_is_in_the_fixture_contract(need):
    kind, _, name = need.split("@")[0].partition(":")
    assert f"`{name}`" in FIXTURE_CONTRACT, f"{need} is needed by a check but not described in docs/fixture-contract.md"


def test_checks_named_in_the_fixture_contract_exist():
    from conformance.core.model import PROFILES
    slugs = {check.id.rsplit("/", 1)[1] for check in REGISTRY.values()} | {check.id for check in REGISTRY.values()}
    named = {slug for section in re.split(r"\n## ", FIXTURE_CONTRACT)[2:]
             for slug in re.findall(r"`([a-z]+(?:[-/][a-z]+)+)`", section)} - set(PROFILES) - {"tools/call", "resources/read"}
    assert named and named <= slugs, sorted(named - slugs)


def test_check_model_names_every_outcome_and_level():
    from conformance.core.model import LEVELS, OUTCOMES
    for word in (*LEVELS, *OUTCOMES, "--profile", "--strict", "not observed", "quote_sha256", "MCPX_SPECS_DIR"):
        assert word in CHECK_MODEL, word


def _tracked_text_files():
    try:
        names = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    for name in names:
        path = ROOT / name
        if path.suffix in {".py", ".md", ".yaml", ".yml", ".json", ".toml", ".txt", ".html", ".ini"} and path.is_file():
            yield name, path.read_text(encoding="utf-8", errors="replace")


# Built from pieces so that this file does not match itself.
OUTSIDE = re.compile("|".join([r"/wo" r"rk/", r"DESIGN\.m" "d", r"UPSTREAM-" "NOTES", r"specs/0\d\d", r"\(source 0\d\d"]))


def test_nothing_points_at_documents_outside_the_repository():
    found = [f"{name}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0)}"
             for name, text in _tracked_text_files() for m in OUTSIDE.finditer(text)]
    assert not found, found
