"""Whatever a target says, and whatever a results file the suite did not write holds, renders inert: in
summary.md (the Action's job summary) and in the HTML pages. Generated strings (any characters, control and
format characters, Markdown and HTML syntax) go where a target's words go; the Markdown is parsed with
markdown-it-py (as GitHub, CommonMark with tables) and the HTML with the standard library's parser, and each
must have exactly the structure it has for a harmless string: no heading, link, image, HTML or `<details>`
of the string's own, and no control character left to be interpreted."""

from __future__ import annotations

import functools
import tempfile
import unicodedata
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from conformance.report import dashboard, html, inert, results
from tests.unit.test_reports import claim, document, result

FRAGMENTS = ["\r# ✅ Every check passed\r", "\n# heading\n", "<details>", "</details>", "<summary>s</summary>",
             "![pixel](https://evil.example/p.png)", "[click](https://evil.example/)", "<img src=x onerror=alert(1)>",
             "<script>alert(1)</script>", "`", "```", "\\", "|", "\r\n", "\x1b[31m", "\u202e", "\u200b", "\u2028",
             "\x85", "\ufeff", "https://evil.example/", "www.evil.example", "&lt;", "&#60;", "*", "_", "> ", "- ",
             "1. ", "    ", "---", "[x]: https://evil.example/ref", "[x]", "<https://evil.example/>", "a@evil.example"]
hostile = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=6)), max_size=8).map("".join)
HIDDEN = {"Cc", "Cf", "Zl", "Zp", "Cs"}
SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
STRUCTURE = {"heading_open", "link_open", "image", "html_block", "html_inline", "fence", "code_block",
             "blockquote_open", "bullet_list_open", "ordered_list_open", "list_item_open", "table_open", "tr_open",
             "td_open", "hr", "em_open", "strong_open", "paragraph_open"}


def hidden(text: str) -> set[str]:
    return {c for c in text if unicodedata.category(c) in HIDDEN and c not in "\n"}


def markdown_structure(text: str) -> Counter:
    parser = MarkdownIt("commonmark").enable("table")

    def walk(tokens):
        for token in tokens:
            yield token
            yield from walk(token.children or [])

    return Counter(t.type for t in walk(parser.parse(text)) if t.type in STRUCTURE)


class Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: Counter = Counter()

    def handle_starttag(self, tag, attrs):
        if tag != "mark":  # the element at fault is marked where a reason points ("at /x"): the suite's own markup
            self.tags[tag] += 1


def html_structure(text: str) -> Counter:
    parser = Tags()
    parser.feed(text)
    return parser.tags


def hostile_document(said: str) -> dict:
    """A run where the target said `said` everywhere it can: serverInfo, a tool name quoted in a failing
    check's reason, an error text, the claim's reason, the evidence."""
    bad = result("preprocessor-tools/server/flag-is-boolean", "fail",
                 f"1 shape error(s); first: tool '{said}': 'yes' is not of type 'boolean'; error: {said}",
                 exchanges=[{"label": "tools/list", "request": {"method": "tools/list"},
                             "response": {"result": {"tools": [{"name": said, "preprocessor": "yes"}]}},
                             "failure": said, "elapsedSeconds": 0.01}], actual={"name": said})
    return document([bad], {"preprocessor-tools": {"claimed": True, "claimedBy": "advertisement",
                                                   "reason": f"a tool carries the field: {said}"},
                            "context-middleware": claim("context-middleware", reason=f"not shown: {said}")},
                    peer={"name": said, "version": said, "title": said})


HARMLESS_SUMMARY = markdown_structure(results.summary_markdown(hostile_document("x")))
HARMLESS_PAGE = html_structure(html.render(hostile_document("x")))


@SETTINGS
@given(hostile)
def test_what_a_target_says_adds_no_markdown_structure_to_summary_md(said):
    summary = results.summary_markdown(hostile_document(said))
    assert markdown_structure(summary) == HARMLESS_SUMMARY
    assert not hidden(summary), "a control character reached summary.md as is"


@SETTINGS
@given(hostile)
def test_what_a_target_says_adds_no_html_to_the_page(said):
    page = html.render(hostile_document(said))
    assert html_structure(page) == HARMLESS_PAGE
    assert not hidden(page), "a control character reached index.html as is"


def imported(requirement: str, said: str) -> dict:
    from tests.test_dashboard import check
    from tests.test_dashboard import results as run

    one = check("preprocessor-tools/server/fixture-flagged", "fail", reason=said)
    foreign = check("preprocessor-tools/server/not-a-check-of-this-suite", "pass")
    one["requirement"] = foreign["requirement"] = requirement
    return run("server", [one, foreign], command=f"python -m {said}")


def dashboard_page(doc: dict, tmp: Path) -> str:
    import json

    (tmp / "results.json").write_text(json.dumps(doc))
    return dashboard.render(dashboard.build([dashboard.load(str(tmp / "results.json"))]), tmp)


@functools.cache
def harmless_dashboard() -> Counter:
    return html_structure(dashboard_page(imported("x", "x"), Path(tempfile.mkdtemp())))


@settings(SETTINGS, max_examples=50)
@given(hostile)
def test_a_results_file_of_a_third_party_adds_no_html_to_the_dashboard(tmp_path_factory, said):
    page = dashboard_page(imported(said, said), tmp_path_factory.mktemp("dash"))
    assert html_structure(page) == harmless_dashboard()
    assert not hidden(page)


def test_the_dashboard_shows_the_shipped_requirement_not_the_files():
    from conformance.core import roles
    from conformance.core.model import REGISTRY

    roles.load_all()
    page = dashboard_page(imported("![pixel](https://evil.example/p.png) [click](https://evil.example/)", "x"),
                          Path(tempfile.mkdtemp()))
    assert "evil.example" not in page.split("fixture-flagged", 1)[1].split("</tr>", 1)[0]
    assert html.markdown(REGISTRY["preprocessor-tools/server/fixture-flagged"].must) in page
    # A check this suite does not know keeps the file's words, as text.
    assert "![pixel](https://evil.example/p.png)" in page and 'src="https://evil.example' not in page


def test_control_characters_are_shown_visibly():
    assert inert.visible("a\rb\x1bc\u202ed\u200be") == "a\\rb⟨U+001B⟩c⟨U+202E⟩d⟨U+200B⟩e"
    assert inert.md_text("![i](u)") == "\\!\\[i\\]\\(u\\)"
    assert inert.md_code("a`b") == "`` a`b ``" and inert.md_code("plain") == "`plain`"
