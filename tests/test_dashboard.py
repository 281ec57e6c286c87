"""The cross-implementation dashboard: several runs' results.json merged into one static page."""

import json
import re
import subprocess
import sys
from html.parser import HTMLParser

import pytest

from conformance.core import schemas_loader
from conformance.core.model import REGISTRY
from conformance.report import dashboard, html
from tests.helpers import ROOT

FLAG = "preprocessor-tools/server/fixture-flagged"
UNMET = "execution-requirements/server/unmet-requirement-fails-call"
HOST = "preprocessor-tools/host/never-offered-to-model"


def check(check_id, outcome, reason=None):
    profile, role, slug = check_id.split("/")
    return {"id": check_id, "profile": profile, "role": role, "slug": slug, "level": "MUST", "outcome": outcome,
            "rows": ["PT-1"], "requirement": f"requirement of {slug}", "description": "what the suite did",
            "reason": reason, "durationSeconds": 0.01}


def results(role, checks, command="python -m some_server"):
    doc = {"format": "mcp-ext-conformance/results", "formatVersion": 1,
           "suite": {"name": "mcp-ext-conformance", "version": "0.1.0"}, "role": role,
           "target": {"kind": "stdio", "command": command}, "sdk": {"mcp": "2.3.0"},
           "startedAt": "2026-11-23T08:00:00Z", "finishedAt": "2026-11-23T08:00:05Z", "durationSeconds": 5,
           "strict": False, "profiles": {}, "exitCode": 0, "checks": checks,
           "summary": {"total": len(checks), **{o: sum(c["outcome"] == o for c in checks)
                                                for o in ("pass", "fail", "warn", "info", "skip", "xfail", "stale")}}}
    assert schemas_loader.errors("results", doc) == []
    return doc


def write_run(directory, doc, page=True):
    directory.mkdir(parents=True)
    (directory / "results.json").write_text(json.dumps(doc))
    if page:
        (directory / "index.html").write_text("<!doctype html><title>run</title>")
    return directory / "results.json"


class Table(HTMLParser):
    """Rows of the page's table as {row header text: [cell html-ish text and hrefs]}."""

    def __init__(self):
        super().__init__()
        self.rows, self.headers, self.row, self.cell, self.in_cell = {}, [], None, None, None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "tr":
            self.row = []
        elif tag in ("th", "td"):
            self.in_cell = {"tag": tag, "scope": attrs.get("scope"), "text": "", "hrefs": [],
                            "outcome": attrs.get("data-outcome")}
        elif tag == "a" and self.in_cell is not None:
            self.in_cell["hrefs"].append(attrs.get("href"))

    def handle_data(self, data):
        if self.in_cell is not None:
            self.in_cell["text"] += data

    def handle_endtag(self, tag):
        if tag in ("th", "td") and self.in_cell is not None:
            self.row.append(self.in_cell)
            self.in_cell = None
        elif tag == "tr" and self.row:
            first = self.row[0]
            if first["scope"] == "col":
                self.headers = [c["text"] for c in self.row]
            elif first["scope"] == "row":
                key = re.match(r"\S+", first["text"]).group(0) if first["text"].strip() else ""
                self.rows[key] = self.row[1:]
            self.row = None


def parse(page):
    table = Table()
    table.feed(page.read_text())
    return table


@pytest.fixture
def runs(tmp_path):
    alpha = write_run(tmp_path / "ci" / "alpha", results("server", [check(FLAG, "pass"), check(UNMET, "pass")],
                                                         command="python -m alpha_server --stdio"))
    beta = write_run(tmp_path / "ci" / "beta", results("server", [check(FLAG, "fail", "no flag")],
                                                       command="node /opt/beta/dist/index.js"))
    host = write_run(tmp_path / "ci" / "alpha-host", results("host", [check(HOST, "pass")]))
    return alpha, beta, host


def test_page_from_several_runs_names_columns_after_targets_and_links_each_run(tmp_path, runs):
    alpha, beta, _ = runs
    page = dashboard.write([str(alpha), str(beta.parent)], tmp_path / "out")
    table = parse(page)
    assert table.headers[1].startswith("alpha_server") and table.headers[2].startswith("index.js")
    flag = table.rows[FLAG]
    assert [c["outcome"] for c in flag] == ["pass", "fail"]
    assert flag[0]["hrefs"] == [f"../ci/alpha/index.html#{FLAG}"]
    assert flag[1]["hrefs"] == [f"../ci/beta/index.html#{FLAG}"]
    assert all(c["tag"] == "td" for c in flag)


def test_check_in_one_run_and_not_another_shows_not_run(tmp_path, runs):
    alpha, beta, _ = runs
    table = parse(dashboard.write([str(alpha), str(beta)], tmp_path / "out"))
    unmet = table.rows[UNMET]
    assert unmet[0]["outcome"] == "pass"
    assert unmet[1]["outcome"] == "absent" and unmet[1]["text"] == "not run" and unmet[1]["hrefs"] == []


def test_runs_given_one_name_share_a_column_and_other_roles_are_marked(tmp_path, runs):
    alpha, beta, host = runs
    table = parse(dashboard.write([f"alpha={alpha}", f"alpha={host}", f"beta={beta}"], tmp_path / "out"))
    assert table.headers[0] == "check" and len(table.headers) == 3
    assert table.headers[1].startswith("alpha") and table.headers[2].startswith("beta")
    assert table.rows[HOST][0]["outcome"] == "pass"
    assert table.rows[HOST][0]["hrefs"] == [f"../ci/alpha-host/index.html#{HOST}"]
    assert table.rows[HOST][1]["outcome"] is None and table.rows[HOST][1]["text"] == "·"


def test_summary_row_counts_each_column(tmp_path, runs):
    alpha, beta, _ = runs
    summary = parse(dashboard.write([str(alpha), str(beta)], tmp_path / "out")).rows["summary"]
    assert "pass 2" in summary[0]["text"]
    assert "pass 0" in summary[1]["text"] and "fail 1" in summary[1]["text"] and "not run 1" in summary[1]["text"]


def test_merging_does_not_depend_on_order_beyond_the_columns(tmp_path, runs):
    alpha, beta, host = runs
    one = parse(dashboard.write([f"a={alpha}", f"b={beta}", f"a={host}"], tmp_path / "one"))
    two = parse(dashboard.write([f"a={host}", f"b={beta}", f"a={alpha}"], tmp_path / "two"))
    assert list(one.rows) == list(two.rows)
    assert {k: [c["outcome"] for c in v] for k, v in one.rows.items()} == \
           {k: [c["outcome"] for c in v] for k, v in two.rows.items()}


def test_a_run_without_index_html_has_verdicts_without_links(tmp_path):
    path = write_run(tmp_path / "bare", results("server", [check(FLAG, "pass")]), page=False)
    table = parse(dashboard.write([str(path)], tmp_path / "out"))
    assert table.rows[FLAG][0]["outcome"] == "pass" and table.rows[FLAG][0]["hrefs"] == []


def test_page_is_static_with_real_headers_and_filters_that_start_hidden(tmp_path, runs):
    text = dashboard.write([str(p) for p in runs], tmp_path / "out").read_text()
    assert '<th scope="col"' in text and '<th scope="row"' in text
    assert '<form id="filters" hidden' in text  # shown by the script; the table reads without it
    assert not re.search(r"<(script|link|img)[^>]+(src|href)=", text)  # nothing fetched


def test_target_names():
    assert dashboard.target_name({"kind": "stdio", "command": "python3 -m pkg.server --x"}) == "pkg.server"
    assert dashboard.target_name({"kind": "stdio", "command": "node /a/b/server.js stdio"}) == "server.js"
    assert dashboard.target_name({"kind": "stdio", "command": "/usr/bin/python3 srv.py"}) == "srv.py"
    assert dashboard.target_name({"kind": "http", "url": "http://h:1/mcp"}) == "http://h:1/mcp"
    assert dashboard.target_name({"kind": "docker", "image": "img:1"}) == "img:1"


def cli(*argv):
    return subprocess.run([sys.executable, "-m", "conformance", "dashboard", *argv], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)


@pytest.mark.parametrize("content, message", [
    ("{not json", "not JSON"),
    ('{"format": "something-else"}', "not an mcp-ext-conformance results.json"),
    ('{"format": "mcp-ext-conformance/results", "formatVersion": 1}', "does not match schemas/results.json"),
])
def test_invalid_results_file_is_a_clear_error(tmp_path, content, message):
    bad = tmp_path / "results.json"
    bad.write_text(content)
    proc = cli(str(bad), "--out", str(tmp_path / "out"))
    assert proc.returncode == 2
    assert message in proc.stderr and str(bad) in proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    assert not (tmp_path / "out" / "index.html").exists()


def test_missing_file_and_clashing_names_are_clear_errors(tmp_path, runs):
    alpha, beta, _ = runs
    proc = cli(str(tmp_path / "nowhere.json"), "--out", str(tmp_path / "out"))
    assert proc.returncode == 2 and "no such file" in proc.stderr and "Traceback" not in proc.stderr
    proc = cli(f"x={alpha}", f"x={beta}", "--out", str(tmp_path / "out"))
    assert proc.returncode == 2 and "both server-role runs named 'x'" in proc.stderr


def test_cli_writes_the_page(tmp_path, runs):
    proc = cli(*map(str, runs), "--out", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "out" / "index.html").exists()


def test_run_report_has_an_anchor_per_check_for_the_dashboard_links():
    from conformance.report.html import render

    page = render(results("server", [check(FLAG, "pass"), check(UNMET, "fail", "ran anyway")]))
    assert f'id="{FLAG}"' in page and f'id="{UNMET}"' in page


def test_run_report_cites_each_rows_source_by_name_and_link():
    from conformance.report.html import render

    real = {**check(UNMET, "fail", "ran anyway"), "rows": ["er.server.fail-unmet", "PT-1"]}  # PT-1: not a row here
    page = render(results("server", [real]))
    assert '<dt>sources</dt><dd><a href="https://github.com/modelcontextprotocol/modelcontextprotocol/pull/2487">' \
           "SEP-2487 §" in page
    assert "<dt>sources</dt><dd>—</dd>" in render(results("server", [check(FLAG, "pass")]))


def test_the_dashboard_escapes_what_runs_say_and_renders_requirement_markdown(tmp_path):
    hostile = {**check(FLAG, "fail", "<script>alert(1)</script>"), "requirement": "the `preprocessor` field"}
    path = write_run(tmp_path / "evil", results("server", [hostile], command="python <img src=x>.py"))
    text = dashboard.write([f"<b>evil</b>={path}"], tmp_path / "out").read_text()
    assert "<script>alert" not in text and "<img" not in text and "<b>evil" not in text
    assert "&lt;b&gt;evil&lt;/b&gt;" in text
    # The requirement is this suite's catalog text for the id, rendered; never the file's.
    assert "the `preprocessor` field" not in text
    assert '<span class="req">' + str(html.markdown(REGISTRY[FLAG].must)) + "</span>" in text


def test_runs_whose_targets_shorten_alike_are_named_by_their_whole_command(tmp_path):
    one = write_run(tmp_path / "one", results("server", [check(FLAG, "pass")], command="node srv.cjs naive"))
    two = write_run(tmp_path / "two", results("server", [check(FLAG, "fail")], command="node srv.cjs lowlevel"))
    table = parse(dashboard.write([str(one), str(two)], tmp_path / "out"))
    assert table.headers[1].startswith("node srv.cjs naive") and table.headers[2].startswith("node srv.cjs lowlevel")


def test_unreachable_run_and_bad_output_directory(tmp_path):
    doc = results("server", [])
    doc["unavailable"], doc["exitCode"] = "the server exited before answering initialize", 2
    path = write_run(tmp_path / "down", doc)
    text = dashboard.write([f"down={path}"], tmp_path / "out").read_text()
    assert "server (unreachable)" in text
    blocker = tmp_path / "file"
    blocker.write_text("")
    proc = cli(str(path), "--out", str(blocker / "sub"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and proc.stderr.strip()


def test_each_profile_is_a_row_group(tmp_path, runs):
    text = dashboard.write([str(p) for p in runs], tmp_path / "out").read_text()
    assert text.count("<tbody>") == text.count("</tbody>") == text.count('scope="rowgroup"') == 2


def _implementation_run(tmp_path, name, role, kind, version=None, started="2026-11-23T08:00:00Z", check_id=FLAG):
    doc = results(role, [check(check_id, "pass")], command=f"python -m {name.replace(' ', '_')}")
    doc["startedAt"] = started
    doc["implementation"] = {"name": name, "kind": kind, **({"version": version} if version else {})}
    assert schemas_loader.errors("results", doc) == []
    return f"{name}={write_run(tmp_path / 'runs' / name.replace(' ', '-'), doc)}"


class Groups(HTMLParser):
    """The header's column groups (label, colspan) and each column header's data attributes, in order."""

    def __init__(self):
        super().__init__()
        self.groups, self.columns = [], []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "th" and attrs.get("scope") == "colgroup":
            self.groups.append((attrs["title"], int(attrs["colspan"])))
        elif tag == "th" and "col" in (attrs.get("class") or "").split():
            self.columns.append(attrs)


def test_columns_are_grouped_by_role_then_kind(tmp_path):
    specs = [_implementation_run(tmp_path, "fw stock", "host", "third-party", check_id=HOST),
             _implementation_run(tmp_path, "their server", "server", "third-party"),
             _implementation_run(tmp_path, "our host", "host", "reference", check_id=HOST),
             _implementation_run(tmp_path, "sdk server", "server", "sdk"),
             _implementation_run(tmp_path, "our server", "server", "reference"),
             _implementation_run(tmp_path, "other server", "server", "third-party"),
             f"unnamed={write_run(tmp_path / 'bare', results('server', [check(FLAG, 'fail')]))}"]
    page = dashboard.write(specs, tmp_path / "out")
    table, groups = parse(page), Groups()
    groups.feed(page.read_text())
    # Grouped (server, then host; reference, SDK, third party, then runs that name no kind), in the order given
    # within a group.
    names = ["our server", "sdk server", "their server", "other server", "unnamed", "our host", "fw stock"]
    assert all(header.startswith(name) for header, name in zip(table.headers[1:], names, strict=True))
    assert groups.groups == [("server · reference", 1), ("server · SDK", 1), ("server · third party", 2),
                             ("server · other", 1), ("host · reference", 1), ("host · third party", 1)]
    assert [(c["data-roles"], c["data-kind"]) for c in groups.columns][:3] == [
        ("server", "reference"), ("server", "sdk"), ("server", "third-party")]
    assert [c["outcome"] for c in table.rows[FLAG]][:5] == ["pass", "pass", "pass", "pass", "fail"]


def test_a_column_of_several_roles_is_a_group_of_its_own(tmp_path, runs):
    alpha, beta, host = runs
    page = dashboard.write([f"alpha={alpha}", f"alpha={host}", f"beta={beta}"], tmp_path / "out")
    groups = Groups()
    groups.feed(page.read_text())
    assert groups.groups == [("server + host · other", 1), ("server · other", 1)]  # beside its first role's


def test_each_column_carries_its_version_and_the_day_it_ran(tmp_path):
    named = _implementation_run(tmp_path, "gw", "server", "third-party", version="4.0.0",
                                started="2026-11-25T23:59:00Z")
    announced = results("server", [check(FLAG, "pass")], command="python -m announced")
    announced["targetInfo"] = {"name": "announced-server", "version": "9.8.7"}
    page = dashboard.write([named, f"announced={write_run(tmp_path / 'announced', announced)}"], tmp_path / "out")
    text = page.read_text()
    headers = parse(page).headers
    assert "4.0.0" in headers[1] and "2026-11-25" in headers[1]
    assert "9.8.7" in headers[2] and "2026-11-23" in headers[2]  # the version the target announced, else
    assert '<small class="version" title="version">4.0.0</small>' in text
    assert '<small class="date" title="the day it ran (UTC)">2026-11-25</small>' in text


def test_the_filter_has_a_text_box_and_role_and_kind_toggles(tmp_path):
    specs = [_implementation_run(tmp_path, "ours", "server", "reference"),
             _implementation_run(tmp_path, "theirs", "host", "third-party", check_id=HOST)]
    text = dashboard.write(specs, tmp_path / "out").read_text()
    form = text[text.index('<form id="filters"'):text.index("</form>")]
    assert '<input type="search" name="q"' in form
    assert re.findall(r'<input type="checkbox" name="role" value="(\w+)" checked>', form) == ["server", "host"]
    assert re.findall(r'<input type="checkbox" name="kind" value="([\w-]+)" checked>', form) == [
        "reference", "third-party"]
    # the header rows and the first column stay in view while the table scrolls
    css = (ROOT / "conformance" / "report" / "templates" / "dashboard.css").read_text()
    assert re.search(r"thead tr\.groups>\*,thead tr\.names>\*\{position:sticky;top:0", css)
    assert re.search(r"th\[scope=row\],\.corner\{position:sticky;left:0", css)


def test_the_implementation_name_is_escaped(tmp_path):
    doc = results("server", [check(FLAG, "pass")])
    doc["implementation"] = {"name": "x", "version": "<u>v1</u>", "kind": "sdk"}
    text = dashboard.write([f"<i>x</i>={write_run(tmp_path / 'x', doc)}"], tmp_path / "out").read_text()
    assert "<u>" not in text and "&lt;u&gt;v1&lt;/u&gt;" in text and "<i>x</i>" not in text
