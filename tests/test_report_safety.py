"""A hostile target through the CLI (tests/servers/hostile_http_server.py): it echoes the user's secret (the
`--header` value over Streamable HTTP, a `--secret-env` value over stdio) into serverInfo, tool results and
error messages, and fills what it says with Markdown and HTML meant to rewrite the reports.

Every file of the report directory and the console hold no trace of the secret (JSON files still parse, the
marker in place of the secret), summary.md has no heading, link, image or HTML of the target's, and
index.html no tag and no control character of the target's."""

from __future__ import annotations

import json
import sys
import unicodedata

import pytest
from markdown_it import MarkdownIt

from conformance.targets.peerkit import free_port, spawn
from tests.helpers import ROOT
from tests.test_first_contact import cli

HOSTILE = ROOT / "tests" / "servers" / "hostile_http_server.py"
SECRET = "tok-7f3a9c-s3cret"


@pytest.fixture
def hostile_url():
    port = free_port()
    with spawn([sys.executable, str(HOSTILE), "--port", str(port)]) as server:
        assert server.wait_listening(port, timeout=20), server.stderr_tail()
        yield f"http://127.0.0.1:{port}/mcp"


def assert_no_secret(run, marker: str) -> None:
    assert SECRET not in run.output, "the secret is on the console"
    written = [p for p in (run.cwd / "reports").rglob("*") if p.is_file()]
    assert {"results.json", "summary.md", "index.html", "junit.xml", "pytest-report.json",
            "checks.json"} <= {p.name for p in written}
    for path in written:
        data = path.read_bytes()
        assert SECRET.encode() not in data and SECRET[4:].encode() not in data, f"the secret is in {path}"
        if path.suffix == ".json":
            json.loads(data)  # still JSON
    results = (run.cwd / "reports" / "latest" / "results.json").read_text()
    assert marker in results  # the evidence is kept, the secret replaced


def assert_inert(run) -> None:
    report = run.cwd / "reports" / "latest"
    summary = (report / "summary.md").read_text()
    tokens = list(MarkdownIt("commonmark").enable("table").parse(summary))
    tokens += [child for t in tokens for child in t.children or ()]
    headings = [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open"]
    assert all(h.startswith(("MCP extension conformance", "Per proposal", "Not passing")) for h in headings), headings
    assert not [t for t in tokens if t.type in ("image", "html_block", "html_inline")]
    assert not [t for t in tokens if t.type == "link_open" and "evil" in str(t.attrs.get("href"))]
    page = (report / "index.html").read_text()
    for text in (summary, page):
        assert "\r" not in text and "\x1b" not in text and "\u202e" not in text
        assert not [c for c in text if unicodedata.category(c) in ("Cf", "Zl", "Zp")]
    assert "<img" not in page and "<script" not in page and "evil.example/p.png" in page  # shown, as text
    assert "⟨U+202E⟩" in page and "\\r# ✅ Every check passed\\r" in summary


def test_an_echoed_header_reaches_no_report_and_the_target_writes_no_markup(tmp_path, hostile_url):
    run = cli(tmp_path, "server", "--url", hostile_url, "--header", "Authorization: Bearer ${MCPX_TEST_TOKEN}",
              "--timeout", "5", env={"MCPX_TEST_TOKEN": SECRET})
    assert run.code == 1, run.output  # the hostile extra tool fails a check
    assert_no_secret(run, "[redacted:header Authorization]")
    assert_inert(run)


def test_a_secret_env_value_the_target_echoes_reaches_no_report(tmp_path):
    run = cli(tmp_path, "server", "--command", f"{sys.executable} {HOSTILE} --stdio",
              "--secret-env", f"MCPX_ECHO_SECRET={SECRET}", "--timeout", "5")
    assert run.code == 1, run.output
    assert_no_secret(run, "[redacted:env MCPX_ECHO_SECRET]")
