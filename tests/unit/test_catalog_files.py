"""The catalog files themselves (conformance/requirements/*.yaml), read as plain YAML.

Well-formed rows, unique and correctly prefixed ids, a disposition for every MUST/SHOULD row, every row
citing a declared source, quotes that match their recorded hash and really are in their source, and
every check of the registry named by some row. The file format is described in docs/check-model.md.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

import pytest
import yaml

from conformance.core import model, roles
from conformance.core.model import REGISTRY
from conformance.core.roles import load_all

REPO = Path(__file__).resolve().parents[2]
REQ_DIR = REPO / "conformance" / "requirements"
# The captured source documents are other projects' text (a GitHub page, an RFC and an ADR under their
# authors' terms, some under no licence at all), so they are not vendored here. Each catalog records the
# sha256 of what it was checked against and each quote its own hash: a clean clone checks the hashes, and
# where the documents are at hand (MCPX_SPECS_DIR, by default ../shared/specs beside the checkout) the
# quotes are also checked against them. Files there are matched by content hash, never by name.
SPECS = Path(os.environ.get("MCPX_SPECS_DIR") or REPO.parent / "shared" / "specs")

PREFIX = {
    "preprocessor-tools": "pp",
    "execution-requirements": "er",
    "context-middleware": "cm",
    "augmentation": "aug",
    "sequential-pipeline": "sp",
    "interceptors": "ic",
}
LEVELS = set(model.LEVELS)
ROLES = set(roles.ROLES)
REQUIRED = ("id", "level", "role", "source", "quote", "quote_sha256")
SOURCE_KEYS = {"name", "url", "revision", "sha256", "captured", "doc", "basis", "commit"}
BASES = {"fixture-contract", "base-protocol", "upstream-fact", "gateway-contract", "harness-contract",
         "suite-decision", "wg-fixture-suite"}

# The checks come from the registry, never from a list kept here: a new check needs only its catalog row.
load_all()
ALL_CHECKS = sorted(REGISTRY)


def load(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


FILES = {p: REQ_DIR / f"{p}.yaml" for p in PREFIX}
DOCS = {p: load(path) for p, path in FILES.items() if path.exists()}
ROWS = [(p, row) for p, doc in DOCS.items() for row in doc.get("rows") or []]
SOURCES = {(p, src["name"]): src for p, doc in DOCS.items() for src in doc.get("sources") or []
           if isinstance(src, dict) and "name" in src}


def captured_documents() -> dict[str, Path]:
    """{sha256: path} of the files in SPECS; empty when the documents are not at hand."""
    if not SPECS.is_dir():
        return {}
    return {hashlib.sha256(p.read_bytes()).hexdigest(): p for p in sorted(SPECS.iterdir()) if p.is_file()}


CAPTURED = captured_documents()


def row_id(entry) -> str:
    return str(entry[1].get("id"))


def cited(profile: str, row: dict) -> dict | None:
    """The declared source a row's `source` names ("<name>" or "<name> §<section>"), the longest name winning."""
    names = [name for (p, name) in SOURCES if p == profile
             and (row["source"] == name or row["source"].startswith(name + " §"))]
    return SOURCES[(profile, max(names, key=len))] if names else None


def normalise(text: str) -> str:
    """Collapse whitespace and drop Markdown emphasis, so quotes need not copy line breaks or `**`."""
    return re.sub(r"\s+", " ", text.replace("*", "")).strip()


def quote_digest(quote: str) -> str:
    return hashlib.sha256(normalise(quote).encode("utf-8")).hexdigest()


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
    assert isinstance(doc.get("title"), str) and doc["title"].strip(), f"{profile}: header 'title' missing"
    assert not {"source", "revision"} & set(doc), "sources are declared in the `sources` table"
    assert isinstance(doc.get("rows"), list) and doc["rows"], f"{profile}: no rows"
    sources = doc.get("sources")
    assert isinstance(sources, list) and sources, f"{profile}: no sources"
    names = [src.get("name") for src in sources]
    assert len(names) == len(set(names)), f"{profile}: a source declared twice"
    first = sources[0]
    assert "basis" not in first and first.get("sha256"), "the first source is the profile's proposal, as captured"


@pytest.mark.parametrize("entry", [(p, s) for p, doc in DOCS.items() for s in doc.get("sources") or []],
                         ids=lambda e: f"{e[0]}:{e[1].get('name')}")
def test_source_is_well_formed(entry):
    _, src = entry
    assert isinstance(src.get("name"), str) and src["name"].strip() and "§" not in src["name"], src
    assert not set(src) - SOURCE_KEYS, sorted(set(src) - SOURCE_KEYS)
    if "basis" in src:
        assert src["basis"] in BASES, src["basis"]
    if "doc" in src:
        # A page of this repository: a relative path that exists here.
        assert not {"url", "sha256", "captured"} & set(src), "a repository page has no url or capture"
        assert not Path(src["doc"]).is_absolute() and (REPO / src["doc"]).is_file(), src["doc"]
    else:
        assert str(src.get("url", "")).startswith("https://"), "a public document is named by its https URL"
        assert isinstance(src.get("revision"), str) and src["revision"].strip(), "the revision the rows follow"
    if "sha256" in src:
        assert re.fullmatch(r"[0-9a-f]{64}", str(src["sha256"])), src["sha256"]
        assert isinstance(src.get("captured"), str) and src["captured"].strip(), "what the captured text is"


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


@pytest.mark.parametrize("entry", ROWS, ids=row_id)
def test_row_cites_a_declared_source(entry):
    profile, row = entry
    src = cited(profile, row)
    assert src is not None, f"{row['source']!r} names no source in {profile}.yaml's sources"
    assert row.get("basis") == src.get("basis"), "a row carries the basis of the source it cites"


def test_sourced_outside_the_proposal_rows_keep_their_level_and_role():
    for profile, row in ROWS:
        basis = (cited(profile, row) or {}).get("basis")
        if basis == "fixture-contract":
            assert row["level"] == "MUST", row["id"]
        if basis == "harness-contract":
            assert row["role"] == "host", row["id"]
        if row["source"].startswith("Gatekit 0.3.0 code"):
            assert row["level"] == "BEHAVIOR", row["id"]


def test_no_row_cites_a_document_outside_the_repository_by_file():
    # Rows cite sources by name; files beside the checkout (design notes, captured texts) are not citable.
    for _, row in ROWS:
        assert not re.search(r"DESIGN\.md|UPSTREAM[-]NOTES|specs/|^\d{3}\b", row["source"]), (row["id"], row["source"])


# ---------------------------------------------------------------- quotes

@pytest.mark.parametrize("entry", ROWS, ids=row_id)
def test_quote_matches_its_hash(entry):
    # Runs everywhere: a quote edited without being checked against its source again shows up here.
    row = entry[1]
    assert row["quote_sha256"] == quote_digest(row["quote"]), "quote edited: check it against its source, then rehash"


@pytest.mark.parametrize("entry", [e for e in ROWS if "doc" in (cited(*e) or {})], ids=row_id)
def test_quote_is_in_its_repository_page(entry):
    profile, row = entry
    page = REPO / cited(profile, row)["doc"]
    assert in_text(row["quote"], page.read_text(encoding="utf-8")), row["quote"]


@pytest.mark.parametrize("entry", [e for e in ROWS if (cited(*e) or {}).get("sha256")], ids=row_id)
def test_quote_is_in_the_captured_document(entry):
    # Optional: needs the captured documents (see SPECS above).
    profile, row = entry
    src = cited(profile, row)
    path = CAPTURED.get(src["sha256"])
    if path is None:
        pytest.skip(f"the captured text of {src['name']!r} is not in {SPECS} (set MCPX_SPECS_DIR)")
    assert in_text(row["quote"], path.read_text(encoding="utf-8")), row["quote"]


@pytest.mark.skipif(not CAPTURED, reason=f"no captured documents in {SPECS} (set MCPX_SPECS_DIR)")
def test_every_captured_document_is_at_hand():
    # Where the documents are given, they are the very texts the catalogs were checked against.
    missing = sorted({f"{src['name']} ({src['sha256'][:12]})" for src in SOURCES.values()
                      if src.get("sha256") and src["sha256"] not in CAPTURED})
    assert not missing, f"captured texts differ from those declared: {missing}"


def test_quote_matching_treats_ellipsis_as_wildcard():
    text = "Clients MUST NOT use it unless:\n  • All known.\n  • One unsatisfiable."
    assert in_text("Clients MUST NOT use it unless: … One unsatisfiable.", text)
    assert not in_text("Clients MUST use it", text)
    assert in_text("Non-Disruptive Addition: does", "- **Non-Disruptive Addition**: does")


# ---------------------------------------------------------------- the registry's checks

@pytest.mark.parametrize("check_id", ALL_CHECKS)
def test_every_check_is_named_by_a_row(check_id):
    named = [row["id"] for _, row in ROWS if check_id in (row.get("checks") or ())]
    assert named, f"{check_id} names no catalog row"


def test_rows_name_only_known_checks():
    unknown = sorted({c for _, row in ROWS for c in row.get("checks") or () if c not in REGISTRY})
    assert not unknown, unknown


@pytest.mark.parametrize("profile", ["context-middleware", "augmentation", "interceptors"])
def test_unadvertised_method_has_a_must_and_a_should_row(profile):
    check_id = f"{profile}/server/unadvertised-method-rejected"
    levels = sorted(row["level"] for p, row in ROWS if p == profile and check_id in (row.get("checks") or ()))
    assert "MUST" in levels and "SHOULD" in levels, levels


@pytest.mark.parametrize("check_id", ["execution-requirements/server/requirements-namespaced",
                                      "execution-requirements/server/unmet-error-names-requirement",
                                      "interceptors/server/custom-wildcards-glob",
                                      "interceptors/server/custom-events-namespaced"])
def test_should_only_checks_stay_warnings(check_id):
    # A check's level is the strongest of its rows: these must not be pulled up to MUST.
    levels = {row["level"] for _, row in ROWS if check_id in (row.get("checks") or ())}
    assert "SHOULD" in levels and "MUST" not in levels, levels
