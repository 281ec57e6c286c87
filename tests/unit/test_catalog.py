"""The catalog and the check registry agree: every check names a row, every MUST/SHOULD row is covered."""

from conformance.core import catalog
from conformance.core.model import REGISTRY
from conformance.core.roles import load_all

load_all()


def test_catalog_and_registry_agree():
    assert catalog.problems() == []


def test_every_check_has_two_sentences_and_a_level():
    for check in REGISTRY.values():
        assert check.does and check.must, check.id
        assert catalog.level_of(check.id) in ("MUST", "SHOULD", "MAY", "BEHAVIOR")


def test_check_descriptions_are_unique():
    musts = [c.must for c in REGISTRY.values() if c.slug != "wire-messages-valid"]
    assert len(musts) == len(set(musts)) or _only_shared_by_siblings(musts)


def _only_shared_by_siblings(musts):
    # The same rule may be checked per profile (e.g. unadvertised-method-rejected): allow those pairs only.
    dupes = {m for m in musts if musts.count(m) > 1}
    slugs = {c.slug for c in REGISTRY.values() if c.must in dupes}
    return slugs <= {"unadvertised-method-rejected"}


def _with(monkeypatch, rows, sources):
    monkeypatch.setattr(catalog, "_load", lambda: ({r.id: r for r in rows}, {(s.profile, s.name): s for s in sources},
                                                   ()))


def _row(**kw):
    quote = kw.pop("quote", "Servers MUST enforce it.")
    base = dict(id="er.server.x", profile="execution-requirements", level="BEHAVIOR", role="server",
                source="SEP-2487 §Server Behavior", quote=quote, quote_sha256=catalog.quote_digest(quote))
    return catalog.Row(**{**base, **kw})


SEP = catalog.Source("SEP-2487", "execution-requirements", url="https://example.invalid/2487", revision="draft",
                     sha256="0" * 64, captured="the SEP's text")
LATER = catalog.Source("SEP-2487 revision 2", "execution-requirements", url="https://example.invalid/2487",
                       revision="later", basis="upstream-fact")


def _source_problems(monkeypatch, rows, sources=(SEP, LATER)):
    _with(monkeypatch, rows, list(sources))
    return [p for p in catalog.problems() if "names no catalog row" not in p]


def test_a_row_cites_a_declared_source_by_name(monkeypatch):
    assert _source_problems(monkeypatch, [_row()]) == []
    assert catalog.cite(_row())[1] == "Server Behavior"
    [problem] = _source_problems(monkeypatch, [_row(source="002 §Server Behavior")])
    assert "names no source declared" in problem


def test_the_longest_declared_name_wins(monkeypatch):
    _with(monkeypatch, [], [SEP, LATER])
    src, section = catalog.cite(_row(source="SEP-2487 revision 2 §Client Behavior", notes={"basis": "upstream-fact"}))
    assert (src.name, section) == ("SEP-2487 revision 2", "Client Behavior")


def test_a_row_carries_its_sources_basis(monkeypatch):
    [problem] = _source_problems(monkeypatch, [_row(source="SEP-2487 revision 2")])
    assert "basis None" in problem and "upstream-fact" in problem


def test_an_edited_quote_is_caught_without_the_document(monkeypatch):
    row = _row()
    edited = catalog.Row(**{**row.__dict__, "quote": "Servers SHOULD enforce it."})
    [problem] = _source_problems(monkeypatch, [edited])
    assert "quote_sha256 does not match" in problem
    # whitespace and emphasis are not edits
    assert catalog.quote_digest("Servers **MUST**\n  enforce it.") == row.quote_sha256


def test_a_source_is_a_public_document_or_a_repository_page(monkeypatch):
    bad = [catalog.Source("A", "execution-requirements"),
           catalog.Source("B", "execution-requirements", url="https://example.invalid", revision="r", sha256="xyz",
                          captured="c"),
           catalog.Source("C", "execution-requirements", url="https://example.invalid", revision="r", sha256="0" * 64),
           catalog.Source("D", "execution-requirements", url="https://example.invalid", doc="docs/check-model.md")]
    problems = _source_problems(monkeypatch, [], bad)
    assert len(problems) == 4, problems


def test_the_parsed_catalog_is_cached_by_the_text_it_came_from(tmp_path, monkeypatch):
    import builtins
    import json

    from conformance.core import catalog

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    files = catalog._requirement_files()
    first = catalog._requirement_docs()
    (entry,) = (tmp_path / "mcp-ext-conformance").glob("catalog-*.json")

    real_import = builtins.__import__

    def no_yaml(name, *args, **kwargs):
        if name == "yaml":
            raise AssertionError("parsed the YAML again although the cache holds it")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_yaml)
    assert catalog._requirement_docs() == first  # from the cache
    monkeypatch.setattr(builtins, "__import__", real_import)

    entry.write_text("{not json", encoding="utf-8")  # a broken entry is parsed again and rewritten
    assert catalog._requirement_docs() == first
    assert json.loads(entry.read_text(encoding="utf-8"))

    edited = [(name, text.replace("level: MUST", "level: SHOULD", 1)) for name, text in files]
    monkeypatch.setattr(catalog, "_requirement_files", lambda: edited)
    assert catalog._requirement_docs() != first  # other text, another entry
    assert [p.name for p in (tmp_path / "mcp-ext-conformance").glob("catalog-*.json")] != [entry.name]


def test_a_later_capture_shows_what_moved():
    rows = [r for r in catalog.load().values() if r.profile == "interceptors" and r.source.startswith("SEP-2624 §")]
    kept, dropped = rows[1:], rows[0]
    earlier = "\n".join(r.quote for r in rows)
    new = "Interceptor servers MUST answer a conformance probe within one second."
    later = "\n".join([r.quote for r in kept] + [new])
    found = catalog.capture_diff("interceptors", later, earlier)
    assert found["commit"] and found["source"] == "SEP-2624"
    assert [m["row"] for m in found["quotes_missing"]] == [dropped.id]
    assert found["normative_unquoted"] == [new]
    assert found["added"] == [new]
    assert catalog.normalise_quote(dropped.quote) in found["removed"]


def test_list_names_the_revision_each_check_was_written_against():
    rows = catalog.rows_for("interceptors/server/timeout-cancels")
    assert catalog.revisions(rows) == {"SEP-2624": "3a2760642010e30037231ef4d7586750b0654e65"}
