"""The catalog files themselves (conformance/requirements/*.yaml), read as plain YAML.

Well-formed rows, unique and correctly prefixed ids, a disposition for every MUST/SHOULD row,
quotes that really are in the source documents, and every server check named by some row.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
REQ_DIR = REPO / "conformance" / "requirements"
SPECS = REPO / ".." / "shared" / "specs"
DESIGN = REPO / ".." / "shared" / "DESIGN.md"

PREFIX = {
    "preprocessor-tools": "pp",
    "execution-requirements": "er",
    "context-middleware": "cm",
    "augmentation": "aug",
    "sequential-pipeline": "sp",
    "interceptors": "ic",
}
LEVELS = {"MUST", "SHOULD", "MAY", "BEHAVIOR"}
ROLES = {"server", "host", "gateway"}
REQUIRED = ("id", "level", "role", "source", "quote")
NOT_IN_SOURCE = ("DESIGN.md", "MCP base protocol", "UPSTREAM-NOTES.md", "HARNESS.md")
HARNESS = REQ_DIR.parent / "host" / "HARNESS.md"
BASES = {"fixture-contract", "base-protocol", "upstream-fact", "gateway-contract", "harness-contract"}

SERVER_CHECKS = {
    "preprocessor-tools": [
        "flag-is-boolean", "fixture-flagged", "preprocessor-tool-callable", "ordinary-tool-unaffected",
        "wire-messages-valid",
    ],
    "execution-requirements": [
        "requirements-are-strings", "requirements-namespaced", "fixture-requirements-declared-exactly",
        "satisfied-requirement-allows-call", "unmet-requirement-fails-call", "unmet-requirement-body-not-run",
        "all-requirements-enforced", "requirement-matching-exact", "unmet-error-names-requirement",
        "wire-messages-valid",
    ],
    "context-middleware": [
        "capability-advertised", "list-result-valid", "invoke-result-valid",
        "identity-preserves-every-content-type", "uppercase-transforms-text", "uppercase-leaves-non-text-unchanged",
        "invalid-arguments-rejected", "unknown-middleware-rejected", "malformed-invoke-rejected",
        "unadvertised-method-rejected", "wire-messages-valid",
    ],
    "augmentation": [
        "capability-advertised", "list-result-valid", "augment-result-valid", "identity-returns-context",
        "prepend-note-hint", "unknown-augmentation-rejected", "malformed-augment-rejected",
        "unadvertised-method-rejected", "wire-messages-valid",
    ],
    "interceptors": [
        "capability-advertised", "supported-events-cover-hooks", "list-result-valid", "fixtures-declared",
        "list-filter-by-event", "invoke-result-valid", "result-names-interceptor-and-phase",
        "validator-reports-violation", "validator-does-not-modify", "mutator-transforms-payload",
        "mutator-unchanged-not-modified", "wildcard-hook-any-event", "invoke-outside-hooks-rejected",
        "failure-is-error", "invalid-config-rejected", "unknown-interceptor-rejected", "malformed-invoke-rejected",
        "unadvertised-method-rejected", "wire-messages-valid",
    ],
}
ALL_SERVER_CHECKS = [f"{p}/server/{slug}" for p, slugs in SERVER_CHECKS.items() for slug in slugs]


def load(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


FILES = {p: REQ_DIR / f"{p}.yaml" for p in PREFIX}
DOCS = {p: load(path) for p, path in FILES.items() if path.exists()}
ROWS = [(p, row) for p, doc in DOCS.items() for row in doc.get("rows") or []]


def row_id(entry) -> str:
    return str(entry[1].get("id"))


def normalise(text: str) -> str:
    """Collapse whitespace and drop Markdown emphasis, so quotes need not copy line breaks or `**`."""
    return re.sub(r"\s+", " ", text.replace("*", "")).strip()


def quote_pattern(quote: str) -> re.Pattern:
    """"…" in a quote stands for any elided text."""
    pieces = [normalise(piece) for piece in quote.split("…")]
    return re.compile(".*?".join(re.escape(piece) for piece in pieces), re.S)


def in_text(quote: str, text: str) -> bool:
    return bool(quote_pattern(quote).search(normalise(text)))


# ---------------------------------------------------------------- files and headers

def test_one_file_per_profile():
    assert sorted(p.stem for p in REQ_DIR.glob("*.yaml")) == sorted(PREFIX)


@pytest.mark.parametrize("profile", sorted(PREFIX))
def test_file_header(profile):
    doc = DOCS[profile]
    assert doc["profile"] == profile
    for key in ("title", "source", "revision"):
        assert isinstance(doc.get(key), str) and doc[key].strip(), f"{profile}: header {key!r} missing"
    assert isinstance(doc.get("rows"), list) and doc["rows"], f"{profile}: no rows"
    if SPECS.exists():
        assert (SPECS / Path(doc["source"]).name).is_file(), doc["source"]


# ---------------------------------------------------------------- rows

@pytest.mark.parametrize("entry", ROWS, ids=row_id)
def test_row_is_well_formed(entry):
    profile, row = entry
    missing = [key for key in REQUIRED if not (isinstance(row.get(key), str) and row[key].strip())]
    assert not missing, f"missing or empty: {missing}"
    assert row["level"] in LEVELS, row["level"]
    assert row["role"] in ROLES, row["role"]
    parts = row["id"].split(".")
    assert len(parts) == 3 and all(parts), "id is <prefix>.<role>.<slug>"
    assert parts[0] == PREFIX[profile], f"id prefix {parts[0]!r}, profile {profile} uses {PREFIX[profile]!r}"
    assert parts[1] == row["role"], "the id's role part names the row's role"
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", parts[2]), "slug is lowercase words joined by '-'"
    if "basis" in row:
        assert row["basis"] in BASES, row["basis"]


@pytest.mark.parametrize("entry", ROWS, ids=row_id)
def test_row_has_checks_or_exclusion(entry):
    _, row = entry
    checks, excluded = row.get("checks"), row.get("excluded")
    if checks is not None:
        assert isinstance(checks, list) and all(isinstance(c, str) and c for c in checks), checks
    if excluded is not None:
        assert isinstance(excluded, str) and excluded.strip(), "an exclusion gives its reason"
    assert not (checks and excluded), "checks or an exclusion, not both"
    if row["level"] in ("MUST", "SHOULD"):
        assert checks or excluded, f"a {row['level']} row needs checks or an exclusion"


@pytest.mark.parametrize("entry", ROWS, ids=row_id)
def test_checks_belong_to_the_profile_and_role(entry):
    profile, row = entry
    for check_id in row.get("checks") or ():
        assert check_id.count("/") == 2, check_id
        assert check_id.startswith(f"{profile}/{row['role']}/"), f"{check_id} is not a {profile} {row['role']} check"


def test_ids_unique_across_files():
    ids = [row["id"] for _, row in ROWS]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    assert not dupes, dupes


def test_sourced_outside_the_document_rows_name_their_basis():
    for _, row in ROWS:
        source = row["source"]
        if source.startswith("DESIGN.md §Server fixture contract"):
            assert row.get("basis") == "fixture-contract" and row["level"] == "MUST", row["id"]
        if source.startswith("HARNESS.md"):
            assert row.get("basis") == "harness-contract" and row["role"] == "host", row["id"]
        if source.startswith("MCP base protocol"):
            assert row.get("basis") == "base-protocol", row["id"]
        if source.startswith("UPSTREAM-NOTES.md"):
            assert row.get("basis") == "upstream-fact", row["id"]
        if source.startswith("UPSTREAM-NOTES.md (Gatekit"):
            assert row["level"] == "BEHAVIOR", row["id"]


# ---------------------------------------------------------------- quotes

@pytest.mark.skipif(not SPECS.exists(), reason="the source documents are not beside the repository (../shared/specs)")
@pytest.mark.parametrize("entry", [e for e in ROWS if not e[1]["source"].startswith(NOT_IN_SOURCE)], ids=row_id)
def test_quote_is_in_the_source_document(entry):
    profile, row = entry
    text = (SPECS / Path(DOCS[profile]["source"]).name).read_text(encoding="utf-8")
    assert in_text(row["quote"], text), row["quote"]


@pytest.mark.skipif(not SPECS.exists(), reason="the source documents are not beside the repository (../shared/specs)")
@pytest.mark.parametrize("entry", [e for e in ROWS if e[1]["source"].startswith("UPSTREAM-NOTES.md")], ids=row_id)
def test_upstream_quote_is_in_the_notes(entry):
    row = entry[1]
    assert in_text(row["quote"], (SPECS / "UPSTREAM-NOTES.md").read_text(encoding="utf-8")), row["quote"]


@pytest.mark.skipif(not DESIGN.exists(), reason="DESIGN.md is not beside the repository (../shared)")
@pytest.mark.parametrize("entry", [e for e in ROWS if e[1]["source"].startswith("DESIGN.md")], ids=row_id)
def test_design_quote_is_in_the_design(entry):
    row = entry[1]
    assert in_text(row["quote"], DESIGN.read_text(encoding="utf-8")), row["quote"]


@pytest.mark.parametrize("entry", [e for e in ROWS if e[1]["source"].startswith("HARNESS.md")], ids=row_id)
def test_harness_quote_is_in_the_harness_contract(entry):
    row = entry[1]
    assert in_text(row["quote"], HARNESS.read_text(encoding="utf-8")), row["quote"]


def test_quote_matching_treats_ellipsis_as_wildcard():
    text = "Clients MUST NOT use it unless:\n  • All known.\n  • One unsatisfiable."
    assert in_text("Clients MUST NOT use it unless: … One unsatisfiable.", text)
    assert not in_text("Clients MUST use it", text)
    assert in_text("Non-Disruptive Addition: does", "- **Non-Disruptive Addition**: does")


# ---------------------------------------------------------------- server checks

@pytest.mark.parametrize("check_id", ALL_SERVER_CHECKS)
def test_every_server_check_is_named_by_a_row(check_id):
    named = [row["id"] for _, row in ROWS if check_id in (row.get("checks") or ())]
    assert named, f"{check_id} names no catalog row"


def test_rows_name_only_known_server_checks():
    known = set(ALL_SERVER_CHECKS)
    unknown = sorted({c for _, row in ROWS for c in row.get("checks") or () if c not in known and "/server/" in c})
    assert not unknown, unknown


@pytest.mark.parametrize("profile", ["context-middleware", "augmentation", "interceptors"])
def test_unadvertised_method_has_a_must_and_a_should_row(profile):
    check_id = f"{profile}/server/unadvertised-method-rejected"
    levels = sorted(row["level"] for p, row in ROWS if p == profile and check_id in (row.get("checks") or ()))
    assert "MUST" in levels and "SHOULD" in levels, levels


@pytest.mark.parametrize("slug", ["requirements-namespaced", "unmet-error-names-requirement"])
def test_should_only_checks_stay_warnings(slug):
    # A check's level is the strongest of its rows: these two must not be pulled up to MUST.
    check_id = f"execution-requirements/server/{slug}"
    levels = {row["level"] for _, row in ROWS if check_id in (row.get("checks") or ())}
    assert levels == {"SHOULD"}, levels
