"""The pytest side of the reports: collects every verdict from the test reports (local, or from
pytest-xdist workers, where it travels in `user_properties`), and at the end writes results.json,
summary.md, the HTML page and the badges (report/results.py) and prints the profile table."""

from __future__ import annotations

import json
import time
from typing import Any, Callable

import pytest

from ..core.model import Result
from ..core.roles import SERVER, Role

PROPERTY = "mcpx"  # the user_properties key a verdict travels under


class Reporter:
    """Collects verdicts from test reports (local or from xdist workers) and writes reports."""

    def __init__(self, config, role: Role | None, describe: Callable[[Any], dict]) -> None:
        self.config = config
        self.role = role  # the run's role (None: no target given)
        self.describe = describe  # config -> the target's description, for results.json
        self.results: dict[str, Result] = {}
        self.claims: dict[str, dict] = {}
        self.peer: dict | None = None  # the target's own name and version (serverInfo), once a verdict brings it
        self.started = time.time()

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report):
        properties = getattr(report, "user_properties", ())
        for key, value in properties:
            if key == PROPERTY:
                data = json.loads(value)
                claim = data.pop("claim", None)
                self.peer = data.pop("peer", None) or self.peer
                result = Result.from_json(data, claim)
                self.results[result.id] = result
                if claim is not None:
                    self.claims[result.profile] = claim
                if not hasattr(self.config, "workerinput"):  # on an xdist worker it has yet to cross
                    # Taken in, the verdict leaves pytest's own reports (JUnit XML, pytest-report.json)
                    # with a summary: the whole of it, exchanges included, is results.json's, and copying
                    # it into junit.xml made up nine tenths of that file and of writing it.
                    from ..core import provenance

                    report.user_properties = [(k, v) for k, v in properties if k != PROPERTY] + [
                        ("check", result.id), ("outcome", result.outcome), ("level", result.level),
                        ("rows", " ".join(result.rows)), *provenance.junit_properties(result.id)]

    def baseline_drift(self) -> list[str]:
        """Why the expected-failures file may be out of date: it records other catalog revisions."""
        baseline = self.config._mcpx_baseline
        if baseline is None:
            return []
        from ..core import provenance

        return baseline.revision_drift(provenance.catalog_revisions())

    def baseline_info(self) -> dict | None:
        baseline = self.config._mcpx_baseline
        if baseline is None:
            return None
        return {"file": self.config.getoption("mcpx_expected_failures"),
                "writtenAgainst": dict(baseline.written_against), "warnings": self.baseline_drift()}

    def stale_profiles(self) -> list[str]:
        baseline = self.config._mcpx_baseline
        if baseline is None:
            return []
        return baseline.stale_profiles({cid: r.outcome for cid, r in self.results.items()})

    def exit_code(self, session_status: int) -> int:
        if getattr(self.config, "_mcpx_unavailable", None):
            return 2
        if self.stale_profiles():
            return 1
        strict = self.config.getoption("mcpx_strict")
        bad = [r for r in self.results.values() if r.outcome in ("fail", "stale") or (strict and r.outcome == "warn")]
        if bad:
            return 1
        return 0 if session_status in (0, 5) and self.results else int(session_status) or 0

    def pytest_sessionfinish(self, session, exitstatus):
        if self.stale_profiles() and session.exitstatus == 0:
            session.exitstatus = 1  # a whole-profile baseline entry nothing fails any more
        directory = self.config.getoption("mcpx_report_dir")
        if not directory or hasattr(self.config, "workerinput"):  # xdist workers leave it to the controller
            return
        from . import results as reports

        finished = time.time()
        results = [self.results[k] for k in sorted(self.results)]
        document = reports.results_document(
            role=self.role_name(), target=getattr(self.config, "_mcpx_target", None) or self.describe(self.config),
            results=results, claims=self.claims, started=self.started, finished=finished,
            strict=self.config.getoption("mcpx_strict"), exit_code=self.exit_code(exitstatus),
            unavailable=getattr(self.config, "_mcpx_unavailable", None), peer=self.peer,
            baseline=self.baseline_info())
        from . import redact
        from .files import write_all

        write_all(directory, redact.value(document))

    def role_name(self) -> str:
        return (self.role or SERVER).name

    def summary_lines(self) -> list[str]:
        from . import results as reports

        lines = reports.terminal_table(list(self.results.values()), self.claims, role=self.role_name())
        lines += [f"  STALE expected-failures entry {profile!r}: no check of it fails now"
                  for profile in self.stale_profiles()]
        for sentence in self.baseline_drift():
            lines += reports.wrap(sentence, reports.ATTENTION, reports.ATTENTION)
        baseline = self.config._mcpx_baseline
        if baseline is not None:
            lines += baseline.ignored_note()  # one line, unwrapped: the names it shows are the point
        directory = self.config.getoption("mcpx_report_dir")
        if directory:
            from .official import mixing_warning

            mixing = mixing_warning(directory)
            if mixing:
                lines += reports.wrap(mixing, reports.ATTENTION, reports.ATTENTION)
        return lines

    def closing_line(self) -> str | None:
        """The run's one warning again after the counts, which alone would read as a clean bill of health."""
        from . import results as reports

        return reports.closing_line(self.role_name(), self.claims) if self.results else None

    def pytest_terminal_summary(self, terminalreporter):
        if not self.results:
            return
        from . import results as reports

        for line in self.summary_lines():
            attention = line.startswith(reports.ATTENTION)  # the run's one warning stands out
            terminalreporter.write_line(line, yellow=attention, bold=attention)

    def pytest_unconfigure(self, config):
        writer = config.pluginmanager.get_plugin("terminalreporter")
        closing = self.closing_line()
        if closing and writer is not None:
            writer.write_line(closing, yellow=True, bold=True)
