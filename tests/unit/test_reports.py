"""The reports a person reads: the console table, summary.md and index.html say what was not tested and why,
explain themselves, and escape whatever the target sent."""

import re
from html.parser import HTMLParser

from conformance.core import schemas_loader
from conformance.core.model import Result
from conformance.core.spelling import flag
from conformance.report import html, inert, results

META = "conformance_memories: _meta['preprocessor']"
UNCLAIMED = {"claimed": False, "claimedBy": None, "reason": "the server shows nothing of this profile"}


def claim(profile, **extra):
    how = {"preprocessor-tools": 'carry "preprocessor": true on a tool in tools/list',
           "context-middleware": "advertise capabilities.contextMiddleware in the initialize result"}
    return {**UNCLAIMED, "howToClaim": how.get(profile, "advertise it"), **extra}


def result(check_id, outcome, reason=None, **extra):
    return Result(check_id, "MUST", outcome, ["pp.server.flag-boolean"],
                  "where a tool carries `preprocessor`, it is the JSON boolean `true` or `false`",
                  "lists every tool and validates each one carrying `preprocessor`", reason=reason, **extra)


def document(checks, claims, peer=None, role="server"):
    doc = results.results_document(role=role, target={"kind": "stdio", "command": "python my_server.py"},
                                   results=checks, claims=claims, started=0.0, finished=1.25, strict=False,
                                   exit_code=0, peer=peer)
    assert schemas_loader.errors("results", doc) == []
    return doc


NOTHING = {"preprocessor-tools": claim("preprocessor-tools"), "context-middleware": claim("context-middleware")}
NOTHING_RESULTS = [result("preprocessor-tools/server/flag-is-boolean", "skip", "profile not claimed"),
                   result("context-middleware/server/unadvertised-method-rejected", "pass")]


def test_a_run_that_claimed_nothing_says_so_in_the_first_line():
    table = results.terminal_table(NOTHING_RESULTS, NOTHING, role="server")
    assert table[0] == ""  # the separator after pytest's progress line
    assert table[1].startswith("! Nothing of the MCP extensions was tested: the server claimed none of its 2")
    text = "\n".join(table)
    assert "why: the server shows nothing of this profile" in text
    assert "advertise capabilities.contextMiddleware in the initialize result, or run with" in text
    assert f"{flag('profile')} preprocessor-tools" in text  # the flag of the form in use (here the plugin's)
    assert all(len(line) <= 100 for line in table)

    summary = results.summary_markdown(document(NOTHING_RESULTS, NOTHING))
    assert summary.splitlines()[0] == "# ⚠️ Nothing of the MCP extensions was tested: server role"
    assert "Every check that ran passed" not in summary


def test_meta_carriage_is_named_on_the_console_and_in_summary_md_with_the_fix():
    claims = {"preprocessor-tools": claim("preprocessor-tools", misplaced=[META],
                                          reason=f"the field is only under _meta, which the proposal does not "
                                                 f"define ({META})"),
              "context-middleware": {"claimed": True, "claimedBy": "advertisement", "reason": "advertised"}}
    checks = [result("preprocessor-tools/server/flag-is-boolean", "skip", "profile not claimed"),
              result("context-middleware/server/capability-advertised", "pass")]
    table = results.terminal_table(checks, claims, role="server")
    assert table[1].startswith("! Not tested: preprocessor-tools: the tool fields are only under the tool's _meta")
    assert any(results.SDK_SURVIVAL in line for line in table if line.startswith("! "))
    assert "why: the field is only under _meta" in "\n".join(table)
    assert all(len(line) <= 100 for line in table)

    summary = results.summary_markdown(document(checks, claims))
    assert "profile(s) not tested (fields misplaced)" in summary.splitlines()[0]
    assert f"[SDK survival]({results.SDK_SURVIVAL})" in summary and inert.md_text(META) in summary
    assert "Every check that ran passed." not in summary


def test_experimental_capabilities_are_named():
    from conformance.core.judging import experimental_carriage

    caps = {"experimental": {"contextMiddleware": {}, "io.modelcontextprotocol/interceptors": {}}}
    assert experimental_carriage(caps, "context-middleware") == ["capabilities.experimental['contextMiddleware']"]
    assert experimental_carriage(caps, "interceptors") == [
        "capabilities.experimental['io.modelcontextprotocol/interceptors']"]
    assert experimental_carriage(caps, "augmentation") == []
    assert experimental_carriage({"contextMiddleware": {}}, "context-middleware") == []


def test_summary_md_lists_only_the_roles_own_profiles():
    summary = results.summary_markdown(document(NOTHING_RESULTS, NOTHING))
    table = summary.split("| profile | claimed |")[1].split("\n\n")[0]  # the profile table, not the per-proposal one
    rows = [line.split("|")[1].strip() for line in ("| profile |" + table).splitlines()
            if line.startswith("| ") and "---" not in line]
    assert rows[1:] == ["preprocessor-tools", "execution-requirements", "context-middleware", "augmentation",
                        "interceptors"]


class Text(HTMLParser):
    """The page's text, by the tag it sits in."""

    def __init__(self):
        super().__init__()
        self.stack, self.texts = [], []

    def handle_starttag(self, tag, attrs):
        self.stack.append(tag)

    def handle_endtag(self, tag):
        while self.stack and self.stack.pop() != tag:
            pass

    def handle_data(self, data):
        self.texts.append((tuple(self.stack), data))


def page(doc) -> str:
    return html.render(doc)


def test_the_page_has_a_legend_for_every_outcome_and_claim_kind():
    text = page(document(NOTHING_RESULTS, NOTHING))
    legend = text.split('<details class="legend"', 1)[1].split("</details>", 1)[0]
    for outcome in ("pass", "fail", "warn", "info", "skip", "xfail", "stale"):
        assert f">{outcome}</span></dt>" in legend, outcome
    for kind in ("advertisement", "option", "default", "not claimed"):
        assert f">{kind}</span></dt>" in legend, kind


def test_requirement_markdown_is_rendered_without_raw_backticks():
    text = page(document(NOTHING_RESULTS, NOTHING))
    parser = Text()
    parser.feed(text)
    requirement = text.split("<dt>requirement</dt><dd>", 1)[1].split("</dd>", 1)[0]
    assert "<code>preprocessor</code>" in requirement and "`" not in requirement
    assert not any("`" in data for tags, data in parser.texts if "dd" in tags and "pre" not in tags)


def test_whatever_the_target_sent_is_escaped():
    hostile = "<script>alert(1)</script>"
    bad = result("preprocessor-tools/server/flag-is-boolean", "fail",
                 f"1 shape error(s); first: tool '{hostile}': at /preprocessor: 'yes' is not of type 'boolean'",
                 exchanges=[{"label": "tools/list", "request": {"method": "tools/list"},
                             "response": {"result": {"tools": [{"name": hostile, "preprocessor": "yes"}]}},
                             "failure": None, "elapsedSeconds": 0.01}])
    doc = document([bad], {"preprocessor-tools": {"claimed": True, "claimedBy": "advertisement",
                                                  "reason": f"tools carry the preprocessor field: {hostile}"}},
                   peer={"name": hostile, "version": "`<img src=x onerror=alert(1)>"})
    text = page(doc)
    assert "<script" not in text and "<img" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    # In summary.md the target's words stay inside one code span, which Markdown never reads as HTML (its
    # fence longer than any run of backticks in them).
    assert "serverInfo `` <script>alert(1)</script> `<img src=x onerror=alert(1)> ``" in results.summary_markdown(doc)


def test_the_target_is_named_by_its_own_server_info():
    doc = document(NOTHING_RESULTS, NOTHING, peer={"name": "acme-notes", "version": "4.2.0"})
    header = page(doc).split("</header>", 1)[0]
    assert "<strong>acme-notes</strong> version 4.2.0" in header
    assert "its mcp SDK: " in header  # the suite's own SDK, said to be the suite's
    assert "serverInfo `acme-notes 4.2.0`" in results.summary_markdown(doc)
    assert "the target sent no serverInfo" in page(document(NOTHING_RESULTS, NOTHING))


def test_the_element_at_fault_is_marked_in_the_exchange():
    tools = [{"name": "fine", "preprocessor": True}, {"name": "notes_lookup", "preprocessor": "yes"}]
    bad = result("preprocessor-tools/server/flag-is-boolean", "fail",
                 "1 shape error(s); first: tool 'notes_lookup': at /preprocessor: 'yes' is not of type 'boolean'",
                 exchanges=[{"label": "tools/list", "request": {"method": "tools/list"},
                             "response": {"result": {"tools": tools}}, "failure": None, "elapsedSeconds": 0.01}])
    text = page(document([bad], {"preprocessor-tools": {"claimed": True, "claimedBy": "advertisement",
                                                        "reason": "flagged"}}))
    assert "At <code>response /result/tools/1/preprocessor</code>, in <code>/result/tools/1 (notes_lookup)</code>" \
        in text
    assert re.findall(r"<mark>(.*?)</mark>", text).count("&#34;yes&#34;") == 2  # the excerpt and the whole answer


def test_profiles_and_sections_in_one_order_and_durations_in_one_format():
    checks = [result("context-middleware/server/capability-advertised", "fail", "not advertised"),
              result("preprocessor-tools/server/flag-is-boolean", "pass", duration=0.0004)]
    claims = {p: {"claimed": True, "claimedBy": "advertisement", "reason": "shown"}
              for p in ("preprocessor-tools", "context-middleware")}
    text = page(document(checks, claims))
    sections = re.findall(r'<section class="profile" id="([^"]+)"', text)
    table = re.findall(r'<td><a href="#([^"]+)"', text)
    assert sections == table == ["preprocessor-tools", "context-middleware"]  # the role's order, not severity
    durations = re.findall(r"\d+\.\d+ s\b", text)
    assert durations and all(re.fullmatch(r"\d+\.\d{3} s", d) for d in durations)


def test_the_page_templates_are_compiled_once_into_the_cache_and_a_cache_that_cannot_be_used_changes_nothing(
        tmp_path, monkeypatch):
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    try:
        for home in (tmp_path / "cache", blocked):
            monkeypatch.setenv("XDG_CACHE_HOME", str(home))
            html.environment.cache_clear()
            first = html.environment().get_template("report.html.j2")
            html.environment.cache_clear()
            again = html.environment().get_template("report.html.j2")  # a later run: from the cache, if any
            assert first.name == again.name == "report.html.j2"  # compiled, or loaded, without an error
        assert list((tmp_path / "cache" / "mcp-ext-conformance").glob("templates-*/__jinja2_*.cache"))
    finally:
        html.environment.cache_clear()
