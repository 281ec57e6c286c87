"""The traceability catalog: one YAML per profile, one row per requirement.

The catalog, not the check code, says which rows a check covers, so a check's
level (and so whether a violation fails or warns) is decided in one place that
people can read and review. `problems()` lists what the self-test rejects.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path

import yaml

from .model import LEVELS, PROFILES, REGISTRY, ROLES, strongest


@dataclass(frozen=True)
class Row:
    id: str
    profile: str
    level: str
    role: str
    source: str
    quote: str
    checks: tuple[str, ...] = ()
    excluded: str | None = None
    notes: dict = field(default_factory=dict, compare=False, hash=False)


def _requirement_files() -> list[tuple[str, str]]:
    try:
        base = resources.files("conformance") / "requirements"
        return sorted((p.name, p.read_text(encoding="utf-8")) for p in base.iterdir() if p.name.endswith(".yaml"))
    except (FileNotFoundError, ModuleNotFoundError):  # pragma: no cover - source tree fallback
        base = Path(__file__).parent / "requirements"
        return sorted((p.name, p.read_text(encoding="utf-8")) for p in base.glob("*.yaml"))


# libyaml's loader where PyYAML was built with it: the catalog loads on every run, ten times faster.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@lru_cache(maxsize=1)
def load() -> dict[str, Row]:
    rows: dict[str, Row] = {}
    for name, text in _requirement_files():
        doc = yaml.load(text, Loader=_LOADER) or {}
        profile = doc.get("profile", name[:-5])
        for raw in doc.get("rows", []):
            known = {"id", "level", "role", "source", "quote", "checks", "excluded"}
            row = Row(id=raw["id"], profile=profile, level=raw["level"], role=raw["role"],
                      source=raw.get("source", ""), quote=raw.get("quote", ""),
                      checks=tuple(raw.get("checks") or ()), excluded=raw.get("excluded"),
                      notes={k: v for k, v in raw.items() if k not in known})
            rows[row.id] = row
    return rows


def rows_for(check_id: str) -> list[Row]:
    return [row for row in load().values() if check_id in row.checks]


def level_of(check_id: str) -> str:
    rows = rows_for(check_id)
    # A check no row covers is a catalog error (see problems()); judge it at full strength meanwhile.
    return strongest(row.level for row in rows) if rows else "MUST"


def problems() -> list[str]:
    """What makes the catalog and the registry disagree; empty when they agree."""
    out = []
    rows = load()
    for row in rows.values():
        if row.level not in LEVELS:
            out.append(f"{row.id}: unknown level {row.level!r}")
        if row.role not in ROLES:
            out.append(f"{row.id}: unknown role {row.role!r}")
        if row.profile not in PROFILES:
            out.append(f"{row.id}: unknown profile {row.profile!r}")
        if row.level in ("MUST", "SHOULD") and not row.checks and not row.excluded:
            out.append(f"{row.id}: a {row.level} row with neither checks nor an exclusion")
        for cid in row.checks:
            if cid not in REGISTRY:
                out.append(f"{row.id}: names check {cid}, which does not exist")
    for cid in REGISTRY:
        if not rows_for(cid):
            out.append(f"{cid}: names no catalog row")
    return out
