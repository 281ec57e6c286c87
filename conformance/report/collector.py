"""The pytest side of the reports: collects every verdict from the test reports (local, or from
pytest-xdist workers, where it travels in `user_properties`), and at the end writes results.json,
summary.md, the HTML page and the badges (report/results.py) and prints the profile table."""

from __future__ import annotations

import json
import os
import time
from typing import Any, Callable

import pytest

from ..core.model import Result
from ..core.roles import SERVER, Role

PROPERTY = "mcpx"  # the user_properties key a verdict travels under
NOTHING_TESTED = 5  # pytest's "no tests ran": no profile claimed, or every check of every claimed one skipped
INTERRUPTED = 130  # 128 + SIGINT, the shell's code for a Ctrl-C


def crash_line(report) -> str:
    """A failed report's exception in one line ("RuntimeError: boom"), as pytest recorded it."""
    crash = getattr(getattr(report, "longrepr", None), "reprcrash", None)
    error = getattr(crash, "message", None) or (report.longreprtext.strip().splitlines() or ["?"])[-1]
    return error.strip().splitlines()[0] if error.strip() else "?"


def suite_error_of(report) -> str:
    """The sentence for a check's failed setup: the suite's own error (its exception, in one line), not the target's."""
    return (f"the suite failed before judging ({crash_line(report)}): an error of the suite, not of the target; "
            "please report it")


class Reporter:
    """Collects verdicts from test reports (local or from xdist workers) and writes reports."""

    def __init__(self, config, role: Role | None, describe: Callable[[Any], dict]) -> None:
        self.config = config
        self.role = role  # the run's role (None: no target given)
        self.describe = describe  # config -> the target's description, for results.json
        self.results: dict[str, Result] = {}
        self.claims: dict[str, dict] = {}
        self.peer: dict | None = None  # the target's own name and version (serverInfo), once a verdict brings it
        self.suite_error: str | None = None  # what failed in the suite itself before a check could be judged
        self.interrupted = False  # Ctrl-C (KeyboardInterrupt) ended the session
        self.doc: dict | None = None  # the results document, once the session ends
        self.started = time.time()

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report):
        if report.when == "setup" and report.failed:
            self._not_judged(report)
        properties = getattr(report, "user_properties", ())
        for key, value in properties:
            if key == PROPERTY:
                data = json.loads(value) if isinstance(value, str) else dict(value)  # dict: the verdict of this process
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

    def _not_judged(self, report) -> None:
        """A check whose setup failed (the recording raised: an error of the suite, not of the target) is in the
        reports as failed, with that error: never left out, so no report reads as if the rest had been judged."""
        from ..core import catalog
        from ..core.model import REGISTRY

        check_id = report.nodeid.partition("[")[2].rstrip("]")
        check = REGISTRY.get(check_id)
        if check is None or check_id in self.results:
            return
        self.suite_error = self.suite_error or suite_error_of(report)
        self.results[check_id] = Result(
            check_id, catalog.level_of(check_id), "fail", [r.id for r in catalog.rows_for(check_id)], check.must,
            check.does, reason=f"not judged: {self.suite_error}")

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
        """130 interrupted, 2 no target reached, 1 a check failed (or a stale baseline entry), 5 nothing
        tested (unless --allow-nothing-tested), else 0 (README: exit codes)."""
        if self.interrupted:
            return INTERRUPTED
        if getattr(self.config, "_mcpx_unavailable", None):
            return 2
        if self.stale_profiles():
            return 1
        strict = self.config.getoption("mcpx_strict")
        bad = [r for r in self.results.values() if r.outcome in ("fail", "stale") or (strict and r.outcome == "warn")]
        if bad:
            return 1
        if session_status not in (0, 5):
            return int(session_status)
        if self.nothing_tested() and not self.config.getoption("mcpx_allow_nothing_tested", False):
            return NOTHING_TESTED
        return 0

    def nothing_tested(self) -> bool:
        from .counts import nothing_tested

        return nothing_tested(self.results.values(), self.claims)

    def pytest_keyboard_interrupt(self, excinfo):
        if isinstance(excinfo.value, KeyboardInterrupt):  # pytest.exit() comes this way too
            self.interrupted = True

    def document(self, exitstatus: int) -> dict:
        from . import results as reports

        results = [self.results[k] for k in sorted(self.results)]
        return reports.results_document(
            role=self.role_name(), target=getattr(self.config, "_mcpx_target", None) or self.describe(self.config),
            results=results, claims=self.claims, started=self.started, finished=time.time(),
            strict=self.config.getoption("mcpx_strict"), exit_code=self.exit_code(exitstatus),
            unavailable=getattr(self.config, "_mcpx_unavailable", None), peer=self.peer,
            baseline=self.baseline_info(), interrupted=self.interrupted, suite_error=self.suite_error)

    @pytest.hookimpl(hookwrapper=True, trylast=True)
    def pytest_sessionfinish(self, session, exitstatus):
        """Around every other plugin's end of session (pytest's junit.xml and pytest-report.json are written in
        it): the results document first, so the console and junit.xml read its counts; the reports written
        and moved into the report directory last (report/files.py). Ctrl-C meanwhile marks the run
        interrupted rather than cutting the writing short."""
        from .files import InterruptsDeferred

        if hasattr(self.config, "workerinput"):  # xdist workers leave it to the controller
            yield
            return
        with InterruptsDeferred() as deferred:
            if self.stale_profiles() and session.exitstatus == 0:
                session.exitstatus = 1  # a whole-profile baseline entry nothing fails any more
            self.doc = self.document(session.exitstatus)
            if self.doc["exitCode"] == NOTHING_TESTED and session.exitstatus == 0:
                session.exitstatus = NOTHING_TESTED  # pytest's own "no tests ran"
            self._junit_counts()
            yield
            self._write_pytest_report()
            if deferred.pending:  # Ctrl-C while pytest wrote junit.xml: written again, saying interrupted
                self.interrupted = True
                self.doc = self.document(session.exitstatus)
                self._junit_counts(rewrite=True)
            if self.interrupted:
                session.exitstatus = pytest.ExitCode.INTERRUPTED
            self._publish(self.doc)
            if deferred.pending and not self.interrupted:  # Ctrl-C while the reports were written: they say so
                from .files import Staging

                self.interrupted = True
                session.exitstatus = pytest.ExitCode.INTERRUPTED
                self.doc = self.document(session.exitstatus)
                staging = getattr(self.config, "_mcpx_staging", None)
                if staging is not None:
                    self.config._mcpx_staging = Staging(staging.final)
                self._publish(self.doc)

    def _write_pytest_report(self) -> None:
        """pytest-report.json, the document pytest-json-report built in its end of session (before this), written
        with the indent asked of it by report/pretty.py: the same document, non-ASCII characters as they are."""
        path = getattr(self.config, "_mcpx_pytest_report", None)
        plugin = getattr(self.config, "_json_report", None)
        document = getattr(plugin, "report", None)
        if path is None or document is None:
            return
        from .pretty import pretty_json

        indent = self.config.getoption("json_report_indent", None)
        text = pretty_json(document) if indent == 2 else json.dumps(document, default=str, indent=indent)
        try:
            path.write_text(text, encoding="utf-8")
        except OSError:  # as pytest-json-report: a report it cannot save does not end the run
            pass

    def _junit_counts(self, rewrite: bool = False) -> None:
        """The suite's count of each outcome as junit.xml's suite properties (its testcases say
        passed for a warning or an info, as pytest does); `rewrite`: the file is written already, so the
        properties are set anew and it is written again."""
        try:
            from _pytest.junitxml import xml_key
        except ImportError:  # pragma: no cover - pytest moved it
            return
        xml = self.config.stash.get(xml_key, None)
        if xml is None or self.doc is None:
            return
        xml.global_properties[:] = [(k, v) for k, v in xml.global_properties if not k.startswith("mcpx-")]
        for outcome, n in self.doc["summary"].items():
            xml.add_global_property(f"mcpx-{outcome}", n)
        if self.doc.get("interrupted"):
            xml.add_global_property("mcpx-interrupted", "true")
        if rewrite:
            xml.pytest_sessionfinish()

    def _publish(self, doc: dict) -> None:
        staging = getattr(self.config, "_mcpx_staging", None)
        if staging is None or staging.done:
            return
        from ..core import redact
        from .files import write_all

        try:
            write_all(staging.path, redact.value(doc))  # the user's secrets never reach a report
        except BaseException:
            staging.discard()
            raise
        staging.publish()
        try:  # pytest's line "generated xml file: ..." names where the file now is
            from _pytest.junitxml import xml_key

            xml = self.config.stash.get(xml_key, None)
            if xml is not None and os.path.dirname(os.path.abspath(xml.logfile)) == str(staging.path.resolve()):
                xml.logfile = str(staging.final / os.path.basename(xml.logfile))
        except ImportError:  # pragma: no cover
            pass

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

    def counts_line(self) -> str:
        """The suite's own count of each outcome (report/counts.py), the same as every report's."""
        from .counts import outcome_counts, phrase

        return phrase(outcome_counts(self.results.values())) or "no check judged"

    def pytest_terminal_summary(self, terminalreporter):
        """Under pytest's own terminal: the profile table, then the suite's counts, which pytest's line does not
        give (it counts a warning and an info as passed)."""
        if self.doc and self.doc.get("interrupted"):
            return
        from . import results as reports

        for line in self.summary_lines() if self.results else ():
            attention = line.startswith(reports.ATTENTION)  # the run's one warning stands out
            terminalreporter.write_line(line, yellow=attention, bold=attention)
        if self.results:
            terminalreporter.write_line(f"mcp-ext-conformance: {self.counts_line()}")

    def pytest_unconfigure(self, config):
        staging = getattr(config, "_mcpx_staging", None)
        if staging is not None and not staging.done:
            if self.interrupted:  # before the session began: the run's reports say so, and only that
                self.doc = self.document(pytest.ExitCode.INTERRUPTED)
                self._publish(self.doc)
            else:  # a usage error before the session: the earlier run's reports stay as they are
                staging.discard()
        writer = config.pluginmanager.get_plugin("terminalreporter")
        if writer is None or self.interrupted:
            return
        closing = self.closing_line()
        if closing:
            writer.write_line(closing, yellow=True, bold=True)
        if self.doc and self.doc["exitCode"] == NOTHING_TESTED:
            writer.write_line(nothing_tested_line(self.role_name()), yellow=True, bold=True)


def nothing_tested_line(role: str) -> str:
    """Why the run exits 5, and the flag that keeps it 0, in the words of the form in use."""
    from ..core.spelling import flag

    return (f"mcp-ext-conformance: exit code {NOTHING_TESTED}: nothing of the MCP extensions was tested (no "
            f"profile claimed, or every check of every claimed profile skipped); claim a profile with "
            f"{flag('profile')} P, or give {flag('allow-nothing-tested')} to exit 0 for a survey")
