"""What a verdict is judged against, and the names a profile goes by outside the suite.

A verdict depends on three things besides the implementation: the suite's version, the catalog's captured
revision of each source a check's rows cite (a proposal's URL and revision, the sha256 of the captured text,
and whatever other revision fields the catalog records for it), and the fixture-contract version. Reports,
JUnit properties, `list --json` and baselines carry them, so a verdict read later says what it was judged
against, and a baseline written against another revision of a proposal says so.

A profile's *catalog revision* is a short digest of its sources' revision fields: it changes exactly when the
catalog starts citing another revision of one of them (an edited row does not change it; the quotes carry
their own hashes). A baseline file may record the digests it was written against (baseline.py).

Extension identifiers: SEP-2133 names an extension `vendor-prefix/name` under `capabilities.extensions`.
SEP-2624 gives the interceptors one; the other proposals define none, so the suite labels them (the choice
and why: docs/check-model.md). The labels name a profile in reports in the official suite's result shape
(report/official.py); the suite never looks for them on the wire.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json

from .. import __version__
from .model import FIXTURE_CONTRACT, PROFILES

SUITE = "mcp-ext-conformance"

# The official MCP conformance suite whose result shape (checks.json) and baseline form the suite follows.
OFFICIAL_SUITE_PACKAGE = "@modelcontextprotocol/conformance"
OFFICIAL_SUITE_VERSION = "0.2.0-alpha.12"

EXTENSION_IDS = {
    "interceptors": "io.modelcontextprotocol/interceptors",  # SEP-2624's own
    # Proposed to the MCP specification repository: the prefix SEP-2133 gives the MCP project's extensions.
    "context-middleware": "io.modelcontextprotocol/context-middleware",
    "augmentation": "io.modelcontextprotocol/augmentation",
    "execution-requirements": "io.modelcontextprotocol/execution-requirements",
    # Proposed to (or shipped by) one vendor's project: that vendor's reverse-DNS prefix.
    "preprocessor-tools": "com.amazonaws/preprocessor-tools",
    "sequential-pipeline": "ai.gatekit/sequential-pipeline",
}
# The profiles whose proposal is a numbered SEP: their official check ids take the official `sep-<N>-<slug>` form.
SEP_NUMBERS = {"execution-requirements": 2487, "interceptors": 2624}

# Fields of a catalog source that describe the document rather than its revision.
_NOT_REVISION = {"name", "profile", "basis", "captured"}


def source_revision(source) -> dict:
    """A catalog source as reports show it: its name, where it is, and every revision field it has."""
    is_instance = dataclasses.is_dataclass(source) and not isinstance(source, type)
    fields = dataclasses.asdict(source) if is_instance else dict(source)
    out = {"name": fields["name"]}
    out.update({k: v for k, v in fields.items() if k not in _NOT_REVISION and v not in (None, "")})
    return out


# Per profile, its sources' revision fields and their digest, worked out once per loaded catalog (reports ask
# for them once per check: JUnit properties, results.json, the official form).
_memo: dict = {}


def _of_catalog() -> dict:
    from . import catalog

    sources = catalog.sources()
    if _memo.get("catalog") is not sources:  # another catalog (tests load their own): start again
        _memo.clear()
        _memo["catalog"] = sources
    return _memo


def profile_sources(profile: str) -> list[dict]:
    """The profile's catalog sources, in the catalog's order, with their revision fields."""
    memo = _of_catalog()
    if ("sources", profile) not in memo:
        memo["sources", profile] = [source_revision(src) for (p, _), src in memo["catalog"].items() if p == profile]
    return [dict(source) for source in memo["sources", profile]]


def catalog_revision(profile: str) -> str:
    """A 12-digit digest of the revision fields of the profile's sources (see the module docstring)."""
    memo = _of_catalog()
    if ("revision", profile) not in memo:
        text = json.dumps(profile_sources(profile), sort_keys=True, ensure_ascii=False)
        memo["revision", profile] = hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
    return memo["revision", profile]


def catalog_revisions(profiles=PROFILES) -> dict[str, str]:
    return {profile: catalog_revision(profile) for profile in profiles}


def check_sources(check_id: str) -> list[str]:
    """The names of the sources the check's catalog rows cite, in catalog order."""
    from . import catalog

    names = []
    for row in catalog.rows_for(check_id):
        src, _ = catalog.cite(row)
        if src is not None and src.name not in names:
            names.append(src.name)
    return names


def judged_against(profiles=PROFILES) -> dict:
    """The suite, the fixture contract, the official shape followed, and per profile its extension id,
    catalog revision and sources: what every verdict of a run was judged against."""
    return {
        "suite": {"name": SUITE, "version": __version__},
        "fixtureContract": FIXTURE_CONTRACT,
        "officialSuite": {"package": OFFICIAL_SUITE_PACKAGE, "version": OFFICIAL_SUITE_VERSION},
        "profiles": {profile: {"extensionId": EXTENSION_IDS[profile], "catalogRevision": catalog_revision(profile),
                               "sources": profile_sources(profile)} for profile in profiles},
    }


def revision_label(source: dict) -> str:
    """One line for a source: `name: revision (sha256 abcdef123456)`, or `name: doc` for a page of ours."""
    parts = [str(v) if k == "revision" else f"{k} {v}" for k, v in source.items()
             if k not in ("name", "url", "doc", "sha256")]
    if source.get("sha256"):
        parts.append(f"sha256 {str(source['sha256'])[:12]}")
    if source.get("doc") and not parts:
        parts.append(str(source["doc"]))
    return f"{source['name']}: {'; '.join(parts)}" if parts else source["name"]


def primary_source(check_id: str) -> str | None:
    """The source a check is counted under in the per-proposal table: the one its rows at the check's level
    cite first (its strongest requirement's source), or None when no row covers it."""
    from . import catalog

    rows = catalog.rows_for(check_id)
    level = catalog.level_of(check_id)
    for row in sorted(rows, key=lambda r: r.level != level):
        src, _ = catalog.cite(row)
        if src is not None:
            return src.name
    return None


def junit_properties(check_id: str) -> list[tuple[str, str]]:
    """JUnit properties naming what the verdict was judged against: the suite's version, the fixture
    contract's, and each source the check's rows cite with its captured revision (core/py)."""
    from .model import FIXTURE_CONTRACT

    profile = check_id.split("/")[0]
    cited = check_sources(check_id)
    sources = [s for s in profile_sources(profile) if s["name"] in cited]
    return [("suite-version", __version__), ("fixture-contract", str(FIXTURE_CONTRACT)),
            ("extension-id", EXTENSION_IDS[profile]),
            ("catalog-revision", catalog_revision(profile)),
            *(("source", revision_label(s)) for s in sources)]
