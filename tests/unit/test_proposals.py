"""The per-proposal table (MUST and SHOULD pass rates per source, checks not applicable) in the console,
summary.md and the HTML, the rates badge per claimed profile, and the sources' revisions on the page."""

from conformance.core import provenance
from conformance.core.model import Result
from conformance.core.roles import load_all
from conformance.report import badges, html, results

load_all()

CLAIMED = {"claimed": True, "claimedBy": "option", "reason": "--profile"}
UNCLAIMED = {"claimed": False, "claimedBy": None, "reason": "the server shows nothing of this profile"}


def verdict(check_id, level, outcome):
    return Result(check_id, level, outcome, [], "a requirement", "what the suite does", reason="why")


RESULTS = [verdict("execution-requirements/server/all-requirements-enforced", "MUST", "pass"),
           verdict("execution-requirements/server/unmet-requirement-fails-call", "MUST", "fail"),
           verdict("execution-requirements/server/wire-messages-valid", "MUST", "pass"),
           verdict("interceptors/server/list-result-valid", "MUST", "pass"),
           verdict("interceptors/server/supported-events-cover-hooks", "SHOULD", "warn"),
           verdict("interceptors/server/wg-protocol-fixtures", "MUST", "skip"),
           verdict("augmentation/server/list-result-valid", "MUST", "skip")]
CLAIMS = {"execution-requirements": CLAIMED, "interceptors": CLAIMED, "augmentation": UNCLAIMED}


def triples():
    return [(r.id, r.level, r.outcome) for r in RESULTS]


def test_rates_per_source_in_catalog_order():
    table = results.proposal_rates(triples(), unclaimed={"augmentation"})
    assert [(g["profile"], g["source"], g.get("MUST"), g.get("SHOULD"), g.get("na")) for g in table] == [
        ("execution-requirements", "SEP-2487", [1, 2], [0, 0], 0),
        ("execution-requirements", "JSON-RPC 2.0", [1, 1], [0, 0], 0),
        ("augmentation", "", None, None, None),
        ("interceptors", "SEP-2624", [1, 1], [0, 1], 0),
        ("interceptors", "WG conformance suite", [0, 0], [0, 0], 1)]
    # augmentation: not claimed, so one row without a rate
    assert results.rate([1, 2]) == "1/2 50%" and results.rate([0, 0]) == "-"


def test_the_console_closes_with_the_table_within_100_columns():
    lines = results.terminal_table(RESULTS, CLAIMS, role="server")
    start = next(i for i, line in enumerate(lines) if line.startswith("Per proposal"))
    assert lines[start + 1].split() == ["execution-requirements:", "SEP-2487", "MUST", "1/2", "50%", "SHOULD", "-",
                                        "n/a", "0"]
    assert lines[start + 3] == "  augmentation: not claimed"
    assert "interceptors: SEP-2624" in lines[start + 4] and "SHOULD 0/1 0%" in lines[start + 4]
    assert all(len(line) <= 100 for line in lines)


def test_summary_md_and_the_page_carry_the_table_and_the_revisions():
    doc = results.results_document(role="server", target={"kind": "stdio", "command": "python s.py"},
                                   results=RESULTS, claims=CLAIMS, started=0.0, finished=1.0, strict=False,
                                   exit_code=1)
    summary = results.summary_markdown(doc)
    assert "## Per proposal" in summary
    assert "| execution-requirements | SEP-2487 | 1/2 50% | - | 0 |" in summary
    page = html.render(doc)
    assert 'id="per-proposal"' in page and "1/2 50%" in page
    sep = provenance.profile_sources("interceptors")[0]
    assert sep["name"] == "SEP-2624" and sep["sha256"] in page and str(doc["judgedAgainst"]["fixtureContract"]) in page
    assert provenance.catalog_revision("interceptors") in page
    assert "io.modelcontextprotocol/interceptors" in page


def test_a_rates_badge_per_claimed_profile(tmp_path):
    doc = results.results_document(role="server", target={"kind": "stdio", "command": "python s.py"},
                                   results=RESULTS, claims=CLAIMS, started=0.0, finished=1.0, strict=False,
                                   exit_code=1)
    written = {p.name for p in badges.write_badges(tmp_path, doc)}
    assert {"server-execution-requirements-rates.svg", "server-interceptors-rates.svg"} <= written
    assert "server-augmentation-rates.svg" not in written  # not claimed: no rate of its behaviour
    assert badges.rates_value([2, 3], [1, 1]) == ("MUST 2/3 · SHOULD 1/1", "red")
    assert badges.rates_value([3, 3], [0, 1]) == ("MUST 3/3 · SHOULD 0/1", "orange")
    assert badges.rates_value([3, 3], [0, 0]) == ("MUST 3/3", "green")
    svg = (tmp_path / "server-interceptors-rates.svg").read_text()
    assert "io.modelcontextprotocol/interceptors" in svg and "MUST 1/1 · SHOULD 0/1" in svg


def test_an_unclaimed_profile_is_not_rated_even_when_its_refusal_checks_pass(tmp_path):
    """"context-middleware (NOT CLAIMED): MUST 1/1 100%" read as conformance: an unclaimed profile's row in the
    per-proposal table says only "not claimed", in the console, summary.md and the page; its refusal check
    stays in the details."""
    refused = verdict("context-middleware/server/unadvertised-method-rejected", "MUST", "pass")
    claims = {"context-middleware": UNCLAIMED}
    lines = results.terminal_table([refused], claims, role="server")
    table = lines[next(i for i, line in enumerate(lines) if line.startswith("Per proposal")):]
    assert table[1:] == ["  context-middleware: not claimed"]
    doc = results.results_document(role="server", target={"kind": "stdio", "command": "python s.py"},
                                   results=[refused], claims=claims, started=0.0, finished=1.0, strict=False,
                                   exit_code=5)
    summary = results.summary_markdown(doc)
    assert "| context-middleware | not claimed | | | |" in summary and "100%" not in summary
    page = html.render(doc)
    per_proposal = page.split('id="per-proposal"')[1].split("</table>")[0]
    assert "not claimed" in per_proposal and "1/1" not in per_proposal and "100%" not in per_proposal
    assert "context-middleware/server/unadvertised-method-rejected" in page  # the refusal check, in the details
