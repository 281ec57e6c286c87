"""The render memo (conformance/core/memo.py): the same output as rendering, never a stale one, and a cache that
cannot be used changes nothing but speed."""

from __future__ import annotations

import json
import re

import pytest

from conformance.core import memo
from conformance.report import badges, html


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    return tmp_path / "mcp-ext-conformance"


def test_a_kept_output_is_read_back_and_a_new_input_rendered_once(cache):
    calls = []

    def render(text):
        calls.append(text)
        return text.upper()

    first = memo.Memo("probe", "v1")
    assert first.get("a", render) == "A" and first.get("a", render) == "A"
    first.save()
    second = memo.Memo("probe", "v1")
    assert second.get("a", render) == "A" and second.get("b", render) == "B"
    assert calls == ["a", "b"]


def test_what_the_output_depends_on_names_another_file(cache):
    one = memo.Memo("probe", "library 1.0")
    one.get("a", lambda text: "old")
    one.save()
    assert memo.Memo("probe", "library 1.1").get("a", lambda text: "new") == "new"
    assert memo.Memo("probe", "library 1.0").get("a", lambda text: "new") == "old"


@pytest.mark.parametrize("content", ["not json", "[1, 2]", '{"a": 3}', ""])
def test_a_damaged_file_is_rendered_again_and_rewritten(cache, content):
    kept = memo.Memo("probe", "v1")
    kept.path.parent.mkdir(parents=True)
    kept.path.write_text(content)
    assert kept.get("a", lambda text: "fresh") == "fresh"
    kept.save()
    assert json.loads(kept.path.read_text()) == {"a": "fresh"}


def test_a_folder_that_cannot_be_written_leaves_rendering_as_without(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache folder would be")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    kept = memo.Memo("probe", "v1")
    assert kept.get("a", lambda text: "x") == "x"
    kept.save()  # says nothing, raises nothing


def test_entries_past_the_cap_are_rendered_but_not_kept(cache, monkeypatch):
    monkeypatch.setattr(memo, "MAX_ENTRIES", 2)
    kept = memo.Memo("probe", "v1")
    for text in "abc":
        assert kept.get(text, str.upper) == text.upper()
    assert sorted(kept.load()) == ["a", "b"]


def test_the_stamp_changes_with_the_installed_library(tmp_path, monkeypatch):
    package = tmp_path / "probe_library"
    package.mkdir()
    (package / "__init__.py").write_text("VERSION = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    before = memo.library_stamp("probe_library")
    (package / "__init__.py").write_text("VERSION = 22\n")
    assert memo.library_stamp("probe_library") != before
    assert memo.library_stamp("no_such_library_here") == "no_such_library_here:missing"


def test_badges_and_markdown_are_what_the_libraries_draw(cache):
    import anybadge
    from markdown_it import MarkdownIt

    drawn = anybadge.Badge("MCP ext server", "35 passed", default_color="green").badge_svg_text
    for _ in range(2):  # rendered, then read back
        svg = badges.svg("MCP ext server", "35 passed", "green")
        assert re.sub(r"anybadge_\w+", "ID", svg) == re.sub(r"anybadge_\w+", "ID", drawn)
        assert len(set(re.findall(r"anybadge_\w+", svg))) == 1
        badges._memo().save()
    assert re.findall(r"anybadge_\w+", badges.svg("other", "1 failed", "red"))[0] not in svg
    text = "a `code` span, *emphasis*, <b>raw</b> and [a link](https://example.org)"
    expected = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).renderInline(text)
    html.markdown_memo.cache_clear()
    assert str(html.markdown(text)) == expected
    html.markdown_memo().save()
    html.markdown_memo.cache_clear()
    assert str(html.markdown(text)) == expected
