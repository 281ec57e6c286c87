"""The traceability catalog: one YAML per profile, one row per requirement.

The catalog, not the check code, says which rows a check covers, so a check's
level (and so whether a violation fails or warns) is decided in one place that
people can read and review. `problems()` lists what the self-test rejects.

Each file declares its `sources` (a proposal by public URL and captured
revision, or a page of this repository) and each row cites one by name,
`"<name> §<section>"`. The captured texts themselves are other projects'
documents and are not shipped; a row's `quote_sha256` lets an edited quote be
noticed without them. The format is described in docs/check-model.md.

A proposal still in review moves. A source may name the `commit` its text was
captured at; `capture_diff` compares a later capture with the catalog (which
quotes no longer occur in it, which normative sentences of it no row quotes,
and, given the earlier capture too, which sentences are new or gone):

    python -m conformance.core.catalog diff interceptors LATER.md [--earlier CAPTURED.md] [--json]
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path

from .model import LEVELS, PROFILES, REGISTRY, strongest
from .roles import ROLES


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
    quote_sha256: str = ""
    notes: dict = field(default_factory=dict, compare=False, hash=False)


@dataclass(frozen=True)
class Source:
    """A document rows cite: `url` + `revision` (+ `sha256` of the captured text), or `doc` in this repository."""

    name: str
    profile: str
    url: str | None = None
    revision: str | None = None
    sha256: str | None = None
    captured: str | None = None
    doc: str | None = None
    basis: str | None = None
    commit: str | None = None  # the commit of the public repository the captured text is a file of


SOURCE_KEYS = {"name", "url", "revision", "sha256", "captured", "doc", "basis", "commit"}


def normalise_quote(text: str) -> str:
    """Whitespace collapsed and Markdown emphasis dropped: quotes need not copy line breaks or `**`."""
    return re.sub(r"\s+", " ", text.replace("*", "")).strip()


def quote_digest(quote: str) -> str:
    return hashlib.sha256(normalise_quote(quote).encode("utf-8")).hexdigest()


def _requirement_files() -> list[tuple[str, str]]:
    try:
        base = resources.files("conformance") / "requirements"
        return sorted((p.name, p.read_text(encoding="utf-8")) for p in base.iterdir() if p.name.endswith(".yaml"))
    except (FileNotFoundError, ModuleNotFoundError):  # pragma: no cover - source tree fallback
        base = Path(__file__).resolve().parents[1] / "requirements"
        return sorted((p.name, p.read_text(encoding="utf-8")) for p in base.glob("*.yaml"))


def cache_dir() -> Path:
    """Where the suite keeps what it derives from its own files: $XDG_CACHE_HOME (or ~/.cache)/mcp-ext-conformance."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mcp-ext-conformance"


def _requirement_docs() -> list[tuple[str, dict]]:
    """(file name, parsed YAML) of every catalog file.

    Parsing the catalog's YAML takes 40 ms, on every run. The parsed files are kept as JSON in the cache
    directory under the sha256 of their names and text, so an edited file is parsed again and an entry can
    only ever stand for the text it was made from; an unreadable entry is parsed again and rewritten."""
    files = _requirement_files()
    digest = hashlib.sha256(json.dumps(files).encode("utf-8")).hexdigest()
    path = cache_dir() / f"catalog-{digest}.json"
    try:
        return [(name, doc) for name, doc in json.loads(path.read_text(encoding="utf-8"))]
    except (OSError, ValueError, TypeError):
        pass
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's, where PyYAML was built with it
    docs = [(name, yaml.load(text, Loader=loader) or {}) for name, text in files]
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{path.name}.{os.getpid()}")
        partial.write_text(json.dumps(docs), encoding="utf-8")
        os.replace(partial, path)  # whole or not at all, also with runs side by side
        for stale in path.parent.glob("catalog-*.json"):
            if stale != path:
                stale.unlink(missing_ok=True)
    except (OSError, TypeError, ValueError):  # a read-only home, or a value JSON cannot hold: parse every time
        pass
    return docs


@lru_cache(maxsize=1)
def _load() -> tuple[dict[str, Row], dict[tuple[str, str], Source], tuple[str, ...]]:
    rows: dict[str, Row] = {}
    sources: dict[tuple[str, str], Source] = {}
    errors: list[str] = []
    for name, doc in _requirement_docs():
        profile = doc.get("profile", name[:-5])
        for raw in doc.get("sources") or []:
            if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
                errors.append(f"{name}: a source without a name: {raw!r}")
                continue
            if (profile, raw["name"]) in sources:
                errors.append(f"{name}: source {raw['name']!r} declared twice")
            if set(raw) - SOURCE_KEYS:
                errors.append(f"{name}: source {raw['name']!r} has unknown keys {sorted(set(raw) - SOURCE_KEYS)}")
            sources[(profile, raw["name"])] = Source(profile=profile, **{k: v for k, v in raw.items() if k in SOURCE_KEYS})
        for raw in doc.get("rows", []):
            known = {"id", "level", "role", "source", "quote", "quote_sha256", "checks", "excluded"}
            row = Row(id=raw["id"], profile=profile, level=raw["level"], role=raw["role"],
                      source=raw.get("source", ""), quote=raw.get("quote", ""),
                      checks=tuple(raw.get("checks") or ()), excluded=raw.get("excluded"),
                      quote_sha256=raw.get("quote_sha256", ""),
                      notes={k: v for k, v in raw.items() if k not in known})
            rows[row.id] = row
    return rows, sources, tuple(errors)


def load() -> dict[str, Row]:
    return _load()[0]


def sources() -> dict[tuple[str, str], Source]:
    """Every declared source, keyed by (profile, name)."""
    return _load()[1]


class _Index:
    """What reports ask the catalog once per check, indexed once per loaded catalog: the rows that name a check,
    and each profile's source names (a run asked rows_for and cite hundreds of times, each a scan of every row)."""

    def __init__(self, loaded) -> None:
        rows, sources, _ = self.loaded = loaded
        self.by_check: dict[str, list[Row]] = {}
        for row in rows.values():
            for cid in dict.fromkeys(row.checks):
                self.by_check.setdefault(cid, []).append(row)
        self.names: dict[str, list[str]] = {}
        for profile, name in sources:
            self.names.setdefault(profile, []).append(name)


_index: _Index | None = None


def _indexed() -> _Index:
    """The index of the catalog `_load()` gives now (made again when it gives another: tests replace it)."""
    global _index
    loaded = _load()
    if _index is None or _index.loaded is not loaded:
        _index = _Index(loaded)
    return _index


def cite(row: Row) -> tuple[Source | None, str]:
    """The source a row cites and the section within it ("" when none); (None, "") when it names none declared."""
    names = [name for name in _indexed().names.get(row.profile, ())
             if row.source == name or row.source.startswith(name + " §")]
    if not names:
        return None, ""
    name = max(names, key=len)  # "SEP-2487 revision 2026-04-14 §…" is not a section of "SEP-2487"
    return sources()[(row.profile, name)], row.source[len(name) + 2:].strip()


def _source_problems(src: Source) -> list[str]:
    out = []
    if src.doc and (src.url or src.sha256):
        out.append(f"source {src.name!r} ({src.profile}): a repository page (doc) or a public document (url), not both")
    elif not src.doc and not (src.url and src.revision):
        out.append(f"source {src.name!r} ({src.profile}): needs doc, or url and revision")
    if src.sha256 is not None and not re.fullmatch(r"[0-9a-f]{64}", str(src.sha256)):
        out.append(f"source {src.name!r} ({src.profile}): sha256 is not 64 lowercase hex digits")
    if src.commit is not None and not re.fullmatch(r"[0-9a-f]{40}", str(src.commit)):
        out.append(f"source {src.name!r} ({src.profile}): commit is not 40 lowercase hex digits")
    if src.sha256 and not src.captured:
        out.append(f"source {src.name!r} ({src.profile}): says what its captured text is (captured)")
    return out


def revisions(rows) -> dict[str, str]:
    """{source name: the commit its quotes were captured at, else its revision} for the sources `rows` cite."""
    out: dict[str, str] = {}
    for row in rows:
        src, _ = cite(row)
        pinned = (src.commit or src.revision) if src is not None else None
        if src is not None and pinned:
            out[src.name] = pinned
    return dict(sorted(out.items()))


def rows_for(check_id: str) -> list[Row]:
    return list(_indexed().by_check.get(check_id, ()))


def level_of(check_id: str) -> str:
    rows = rows_for(check_id)
    # A check no row covers is a catalog error (see problems()); judge it at full strength meanwhile.
    return strongest(row.level for row in rows) if rows else "MUST"


def problems() -> list[str]:
    """What makes the catalog and the registry disagree; empty when they agree."""
    out = list(_load()[2])
    rows = load()
    for src in sources().values():
        out.extend(_source_problems(src))
    for row in rows.values():
        cited, _ = cite(row)
        if cited is None:
            out.append(f"{row.id}: source {row.source!r} names no source declared in {row.profile}.yaml")
        elif row.notes.get("basis") != cited.basis:
            out.append(f"{row.id}: basis {row.notes.get('basis')!r}, but its source {cited.name!r} is "
                       f"{cited.basis!r}")
        if row.quote_sha256 != quote_digest(row.quote):
            out.append(f"{row.id}: quote_sha256 does not match the quote (an edited quote must be checked "
                       f"against its source again before its hash is updated)")
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


# -- a later capture against the catalog -----------------------------------------------------------------------------
NORMATIVE = re.compile(r"\b(MUST|SHALL|SHOULD|REQUIRED|RECOMMENDED|MAY|OPTIONAL)\b")


def sentences(text: str) -> list[str]:
    """The sentences of a Markdown text, normalised as quotes are: split at line breaks (list items, table rows,
    code lines) and after . ! ? followed by a space; empty pieces and fence lines dropped."""
    out = []
    for line in text.splitlines():
        line = line.strip().lstrip("-*>|#").strip()
        if not line or line.startswith("```"):
            continue
        for piece in re.split(r"(?<=[.!?])\s+(?=[A-Z`\"(*_])", line):
            piece = normalise_quote(piece)
            if piece:
                out.append(piece)
    return list(dict.fromkeys(out))


def quote_found(quote: str, text: str) -> bool:
    """The quote occurs in the text ("…" in a quote stands for elided text), whitespace and emphasis aside."""
    pattern = r".*?".join(re.escape(normalise_quote(piece)) for piece in quote.split("…"))
    return re.search(pattern, normalise_quote(text)) is not None


def capture_diff(profile: str, later: str, earlier: str | None = None, source: str | None = None) -> dict:
    """What moved between the text a profile's catalog quotes (its first source unless `source` names one) and a
    later capture of it: quotes the later text no longer holds (`quotes_missing`, with their rows), normative
    sentences of the later text no row quotes (`normative_unquoted`), and, given the earlier capture, the
    sentences `added` and `removed`."""
    declared = [src for (p, _), src in sources().items() if p == profile]
    if not declared:
        raise KeyError(f"no catalog for profile {profile!r}")
    src = next((s for s in declared if s.name == source), None) if source else declared[0]
    if src is None:
        raise KeyError(f"{profile} has no source {source!r}; it has {', '.join(s.name for s in declared)}")
    rows = [row for row in load().values() if row.profile == profile and cite(row)[0] == src]
    quotes = [row.quote for row in rows]
    later_sentences = sentences(later)
    out: dict = {
        "profile": profile, "source": src.name, "revision": src.revision, "commit": src.commit,
        "sha256": src.sha256, "later_sha256": hashlib.sha256(later.encode("utf-8")).hexdigest(),
        "quotes_missing": [{"row": row.id, "quote": row.quote} for row in rows if not quote_found(row.quote, later)],
        "normative_unquoted": [s for s in later_sentences if NORMATIVE.search(s)
                               and not any(quote_found(q, s) or quote_found(s, q) for q in quotes)],
    }
    if earlier is not None:
        before, after = set(sentences(earlier)), set(later_sentences)
        out["added"] = [s for s in later_sentences if s not in before]
        out["removed"] = [s for s in sentences(earlier) if s not in after]
    return out


def main(argv=None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m conformance.core.catalog",
                                     description="compare a later capture of a proposal with the catalog's quotes")
    sub = parser.add_subparsers(dest="command", required=True)
    diff = sub.add_parser("diff", help="quotes gone, normative sentences unquoted, sentences added/removed")
    diff.add_argument("profile")
    diff.add_argument("later", type=Path, help="the later capture (Markdown or text)")
    diff.add_argument("--earlier", type=Path, help="the capture the catalog was made from, to list added/removed")
    diff.add_argument("--source", help="the catalog source to compare (default: the profile's proposal)")
    diff.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    try:
        later = args.later.read_text(encoding="utf-8")
        earlier = args.earlier.read_text(encoding="utf-8") if args.earlier else None
        found = capture_diff(args.profile, later, earlier, args.source)
    except (OSError, UnicodeDecodeError, KeyError) as exc:
        print(f"catalog diff: {exc}", file=__import__("sys").stderr)
        return 2
    if args.json:
        print(json.dumps(found, indent=2, ensure_ascii=False))
        return 0
    print(f"{found['profile']}: {found['source']} {found['commit'] or found['revision']} against a capture "
          f"with sha256 {found['later_sha256'][:16]}…")
    for title, key in (("quotes the later capture no longer holds", "quotes_missing"),
                       ("normative sentences no row quotes", "normative_unquoted"),
                       ("sentences added", "added"), ("sentences removed", "removed")):
        if key not in found:
            continue
        print(f"\n{title}: {len(found[key])}")
        for item in found[key]:
            print(f"  {item['row']}: {item['quote']}" if isinstance(item, dict) else f"  {item}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
