"""Every line of the fixture contract is exercised: each fixture's line in docs/fixture-contract.md maps to the
checks that drive it (CONTRACT_LINES), so a fixture the suite describes but never calls shows here.

A contract line is a paragraph or a table row that opens with a fixture's name (`` `conformance_x` ``): what that
fixture must do. Version 2's gated tools are described mid-paragraph, so their line is keyed by the paragraph's
first fixture name. A line without a mapping, a mapping without its line, a mapped check that does not exist, or
one that does not need the fixture (or the fixture it is reached through) fails.
"""

from __future__ import annotations

import re

import pytest

from conformance.core.model import REGISTRY
from conformance.core.roles import load_all
from tests.helpers import ROOT

load_all()

CONTRACT = (ROOT / "docs" / "fixture-contract.md").read_text(encoding="utf-8")
S, ER, CM, AUG, IC = ("preprocessor-tools/server/", "execution-requirements/server/", "context-middleware/server/",
                      "augmentation/server/", "interceptors/server/")

# (section, fixture that opens the line) -> (the checks that exercise it, the fixture those checks need to reach it).
CONTRACT_LINES: dict[tuple[str, str], tuple[list[str], str]] = {
    ("preprocessor-tools", "conformance_memories"): ([S + "fixture-flagged", S + "preprocessor-tool-callable"], ""),
    ("preprocessor-tools", "conformance_echo"): ([S + "ordinary-tool-unaffected"], ""),
    ("execution-requirements", "conformance_side_effects"): ([ER + "unmet-requirement-body-not-run"], ""),
    # "The four gated tools ...": keyed by its first fixture.
    ("execution-requirements", "conformance_gated_ok"): (
        [ER + "fixture-requirements-declared-exactly", ER + "satisfied-requirement-allows-call"], ""),
    ("execution-requirements", "conformance_gated_unicode_ok"): ([ER + "near-miss-requirements-unmet"], ""),
    ("context-middleware", "conformance_identity"): ([CM + "identity-preserves-every-content-type"], ""),
    ("context-middleware", "conformance_uppercase"): (
        [CM + "uppercase-transforms-text", CM + "uppercase-leaves-non-text-unchanged"], ""),
    ("context-middleware", "conformance_strict_args"): ([CM + "invalid-arguments-rejected"], ""),
    ("augmentation", "conformance_identity"): ([AUG + "identity-returns-context"], ""),
    ("augmentation", "conformance_prepend_note"): ([AUG + "prepend-note-hint"], ""),
    ("augmentation", "conformance_list_toggle"): ([AUG + "list-changed-notified"], ""),
    # Listed only between the two toggles, so it is reached through the toggle.
    ("augmentation", "conformance_transient"): ([AUG + "transient-augmentation-answers"], "conformance_list_toggle"),
    ("interceptors", "conformance_validator"): (
        [IC + "validator-reports-violation", IC + "invalid-config-rejected"], ""),
    ("interceptors", "conformance_uppercase"): (
        [IC + "mutator-transforms-payload", IC + "mutator-unchanged-not-modified"], ""),
    ("interceptors", "conformance_audit"): ([IC + "wildcard-hook-any-event", IC + "fixtures-declared"], ""),
    ("interceptors", "conformance_response_only"): (
        [IC + "invoke-outside-hooks-rejected", IC + "list-filter-by-event"], ""),
    ("interceptors", "conformance_failing"): ([IC + "failure-is-error"], ""),
    ("interceptors", "conformance_slow"): (
        [IC + "timeout-cancels", IC + "timeout-error-code", IC + "timeout-error-data"], ""),
    ("interceptors", "conformance_guarded_echo"): (
        [IC + "invoker-rejects-invalid-call", IC + "invoker-applies-mutations", IC + "invoker-validation-error-shape"],
        ""),
    ("interceptors", "conformance_guarded_failing"): ([IC + "invoker-mutation-failure-error"], ""),
    ("interceptors", "conformance_dot_star"): ([IC + "custom-wildcards-match-as-glob"], ""),
}
SECTIONS = ("preprocessor-tools", "execution-requirements", "context-middleware", "augmentation", "interceptors")
OPENS = re.compile(r"^(?:\| )?`(conformance_\w+)`")
FIRST_FIXTURE = re.compile(r"`(conformance_\w+)`")


def contract_lines(text: str) -> set[tuple[str, str]]:
    """(section, fixture) for each paragraph or table row of a profile's section that opens with a fixture's name,
    and for each paragraph that introduces fixtures mid-sentence ("The four gated tools ...", "**Contract version
    2** adds ... tools ...")."""
    lines: set[tuple[str, str]] = set()
    section = None
    for block in re.split(r"\n\s*\n", text):
        heading = re.match(r"^## `([\w-]+)`", block)
        if heading:
            section = heading.group(1) if heading.group(1) in SECTIONS else None
            continue
        if block.startswith("## "):
            section = None
        if section is None:
            continue
        for row in block.splitlines() if block.startswith("|") else [block]:
            opened = OPENS.match(row)
            if opened:
                lines.add((section, opened.group(1)))
            elif re.search(r"gated tools", row) and FIRST_FIXTURE.search(row):
                lines.add((section, FIRST_FIXTURE.search(row).group(1)))
    return lines


def test_every_contract_line_maps_to_a_check():
    found = contract_lines(CONTRACT)
    assert sorted(found - CONTRACT_LINES.keys()) == [], "contract lines no check is mapped to"
    assert sorted(CONTRACT_LINES.keys() - found) == [], "mapped lines that are not in docs/fixture-contract.md"


@pytest.mark.parametrize("line", sorted(CONTRACT_LINES), ids=lambda line: f"{line[0]}:{line[1]}")
def test_the_mapped_checks_exist_and_need_the_fixture(line):
    checks, via = CONTRACT_LINES[line]
    assert checks, f"{line}: no check exercises this line"
    missing = [cid for cid in checks if cid not in REGISTRY]
    assert missing == [], f"{line}: no such check"
    reached = via or line[1]
    needing = [cid for cid in checks
               if any(need.split("@")[0].partition(":")[2] == reached for need in REGISTRY[cid].needs)]
    assert needing == checks, f"{line}: checks that do not need {reached}: {sorted(set(checks) - set(needing))}"


def test_a_line_without_a_check_fails():
    # The map is judged by what the text holds: a fixture added to the contract without a check shows.
    extra = CONTRACT + "\n\n## `augmentation`\n\n`conformance_new_fixture` answers nothing.\n"
    assert ("augmentation", "conformance_new_fixture") in contract_lines(extra) - CONTRACT_LINES.keys()
