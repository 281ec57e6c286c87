"""The catalog files themselves: well-formed rows, unique ids, and quotes that really are in the sources."""

import re
from pathlib import Path

import pytest
import yaml

from conformance.model import LEVELS, ROLES

REQ_DIR = Path(__file__).resolve().parents[2] / "conformance" / "requirements"
SPECS = Path(__file__).resolve().parents[3] / "shared" / "specs"
PREFIX = {"preprocessor-tools": "pp", "execution-requirements": "er", "context-middleware": "cm",
          "augmentation": "aug", "sequential-pipeline": "sp"}
NOT_IN_SOURCE = ("DESIGN.md", "MCP base protocol", "UPSTREAM-NOTES.md")
FILES = sorted(REQ_DIR.glob("*.yaml"))


def rows():
    for path in FILES:
        doc = yaml.safe_load(path.read_text())
        for row in doc["rows"]:
            yield path.stem, doc, row


def normalise(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace("*", "")).strip()


def test_one_file_per_profile():
    assert sorted(p.stem for p in FILES) == sorted(PREFIX)


def test_ids_unique_and_prefixed():
    ids = [row["id"] for _, _, row in rows()]
    assert len(ids) == len(set(ids))
    for profile, _, row in rows():
        assert row["id"].startswith(PREFIX[profile] + "."), row["id"]
        assert row["id"].split(".")[1] == row["role"], row["id"]


@pytest.mark.parametrize("row", [r for _, _, r in rows()], ids=lambda r: r["id"])
def test_row_is_well_formed(row):
    assert {"id", "level", "role", "source", "quote"} <= set(row)
    assert row["level"] in LEVELS and row["role"] in ROLES
    has_checks, has_exclusion = bool(row.get("checks")), bool(row.get("excluded"))
    assert not (has_checks and has_exclusion), "checks or an exclusion, not both"
    if row["level"] in ("MUST", "SHOULD"):
        assert has_checks or has_exclusion


@pytest.mark.skipif(not SPECS.exists(), reason="the source documents are not beside the repository")
@pytest.mark.parametrize("entry", [(p, d, r) for p, d, r in rows() if not r["source"].startswith(NOT_IN_SOURCE)],
                         ids=lambda e: e[2]["id"])
def test_quote_is_in_the_source(entry):
    _, doc, row = entry
    text = normalise((SPECS / Path(doc["source"]).name).read_text())
    pieces = [normalise(p) for p in row["quote"].split("…")]
    pattern = ".*?".join(re.escape(p) for p in pieces)
    assert re.search(pattern, text, re.S), row["quote"]


@pytest.mark.skipif(not SPECS.exists(), reason="the source documents are not beside the repository")
@pytest.mark.parametrize("entry", [(p, d, r) for p, d, r in rows() if r["source"].startswith("UPSTREAM-NOTES.md")],
                         ids=lambda e: e[2]["id"])
def test_upstream_quote_is_in_the_notes(entry):
    row = entry[2]
    assert normalise(row["quote"]) in normalise((SPECS / "UPSTREAM-NOTES.md").read_text()), row["quote"]
