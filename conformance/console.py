"""What the CLI prints: progress, each failure as requirement then expected against actual, the profile
table, one closing line, and, for a run that could not start or reach its target, one diagnosis instead.

The CLI runs pytest with its terminal reporter off and this plugin in its place, so the user reads about
checks and targets, never about test files, fixtures or pytest's own exceptions. Run as a pytest plugin
(`pytest --pyargs conformance`), the suite keeps pytest's own output and conventions instead.
"""

from __future__ import annotations

import sys
import time

import pytest

from .report.collector import NOTHING_TESTED, crash_line, nothing_tested_line

OUTCOME_WORDS = {"pass": "PASS", "fail": "FAIL", "warn": "WARN", "info": "INFO", "skip": "SKIP", "xfail": "XFAIL",
                 "stale": "STALE"}


class Console:
    def __init__(self, verbose: bool = False, out=None):
        self.verbose = verbose
        self.out = out or sys.stdout
        self.counts: dict[str, int] = {}
        self.failures: list[tuple[str, str]] = []
        # (check id, its exception in one line, pytest's text) of each check whose setup failed
        self.errors: list[tuple[str, str, str]] = []
        self._kept_traceback = False  # internal-error.txt written by this run: later errors are added to it
        self.started = time.time()
        self.ran = 0
        self.config = None
        self.doc: dict | None = None  # the results document, once the session ends
        self.interrupted = False

    def write(self, line: str = "", err: bool = False) -> None:
        from .core import redact
        from .report import inert

        # No secret of the user's, and no control character a target sent (ESC would steer the terminal).
        line = inert.visible(redact.text(line), keep="\n\t")
        stream = sys.stderr if err else self.out
        capture = self.config.pluginmanager.get_plugin("capturemanager") if self.config else None
        if capture is None:
            print(line, file=stream, flush=True)
            return
        with capture.global_and_fixture_disabled():
            print(line, file=stream, flush=True)

    @pytest.hookimpl(tryfirst=True)
    def pytest_configure(self, config) -> None:
        self.config = config
        config._mcpx_console = self
        # Options pytest's terminal plugin would have defined, read by other plugins (pytest-json-report).
        for name, value in (("tbstyle", "short"), ("verbose", 0), ("reportchars", ""), ("showlocals", False)):
            if not hasattr(config.option, name):
                setattr(config.option, name, value)

    def pytest_keyboard_interrupt(self, excinfo) -> None:
        if isinstance(excinfo.value, KeyboardInterrupt):  # pytest.exit() comes this way too
            self.interrupted = True

    @pytest.hookimpl(trylast=True)
    def pytest_unconfigure(self, config) -> None:
        """The results document as published (also when Ctrl-C came before the session began)."""
        reporter = config.pluginmanager.get_plugin("mcpx-reporter")
        if reporter is not None and reporter.doc is not None:
            self.doc = reporter.doc

    def pytest_internalerror(self, excrepr, excinfo) -> bool:
        """A fault of the test runner itself: one line, and the traceback in a file of the report directory (or
        the temporary directory), never pytest's INTERNALERROR lines."""
        kept = self._keep_traceback(str(excrepr))
        self.write(f"mcp-ext-conformance: internal error of the test runner ({excinfo.typename}: "
                   f"{_first_lines(str(excinfo.value))}){kept}; please report it", err=True)
        return True  # handled: pytest prints nothing more

    def _keep_traceback(self, text: str) -> str:
        """`text` in internal-error.txt of the report directory (or the temporary directory), and where it went."""
        import tempfile
        from pathlib import Path

        staging = getattr(self.config, "_mcpx_staging", None)  # moved into the report directory at the end
        final = self.config.getoption("mcpx_report_dir", None) if self.config else None
        directory = (staging.path if staging is not None and not staging.done else None) or final \
            or tempfile.gettempdir()
        where = Path(directory) / "internal-error.txt"
        try:
            where.parent.mkdir(parents=True, exist_ok=True)
            with where.open("a" if self._kept_traceback else "w", encoding="utf-8") as file:  # every one, in order
                file.write(("\n\n" if self._kept_traceback else "") + text)
            self._kept_traceback = True
        except OSError:
            return ""
        shown = Path(final) / where.name if staging is not None and where.parent == staging.path and final else where
        return f"; the traceback is in {shown}"

    def pytest_runtest_logreport(self, report) -> None:
        props = dict(p for p in report.user_properties if isinstance(p, tuple) and len(p) == 2)
        check_id = props.get("check") or report.nodeid.partition("[")[2].rstrip("]") or report.nodeid
        if report.when == "call" or (report.when == "setup" and not report.passed):
            if report.when == "setup" and report.failed:  # a suite fault, not a verdict
                self._count("error")
                self.errors.append((check_id, crash_line(report), report.longreprtext))
                return
            self.ran += 1
            outcome = props.get("outcome")
            key = ("xfailed" if hasattr(report, "wasxfail") else report.outcome)
            self._count(key)
            if report.failed:
                self.failures.append((check_id, report.longreprtext.strip()))
            if self.verbose:
                word = OUTCOME_WORDS.get(outcome or "", report.outcome.upper())
                self.write(f"  {word:<5} {check_id}")

    @pytest.hookimpl(trylast=True)
    def pytest_report_teststatus(self, report):
        """The default pytest's terminal plugin gives (pytest-json-report asks for it)."""
        outcome = report.outcome
        if report.when in ("collect", "setup", "teardown") and outcome == "failed":
            return "error", "E", "ERROR"
        return outcome, {"passed": ".", "skipped": "s"}.get(outcome, "F"), outcome.upper()

    def _count(self, key: str) -> None:
        self.counts[key] = self.counts.get(key, 0) + 1

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session, exitstatus) -> None:
        config = session.config
        reporter = config.pluginmanager.get_plugin("mcpx-reporter")
        self.doc = reporter.doc if reporter is not None else None
        if reporter is not None and reporter.interrupted:
            return  # the command line says "interrupted", and nothing else
        diagnosis = getattr(config, "_mcpx_unavailable", None)
        if diagnosis:
            self.write(f"mcp-ext-conformance: {diagnosis}", err=True)
            return
        for ids, text in _grouped(self.failures):
            self.write("")
            for check_id in ids:  # the same failure of several checks (one wire fault seen by each profile) once
                self.write(f"FAIL {check_id}")
            if len(ids) > 1:
                text = text.partition("\n")[2]  # its first line names one check and its rows
            for line in text.splitlines():
                self.write(f"  {line}")
        same: dict[str, tuple[list[str], str]] = {}  # one recording's error fails every check's setup alike
        for check_id, error, text in self.errors:
            same.setdefault(error, ([], text))[0].append(check_id)
        for error, (ids, text) in same.items():
            kept = self._keep_traceback(text)
            which = ids[0] if len(ids) == 1 else f"{len(ids)} checks ({ids[0]}, ...)"
            self.write(f"ERROR {which} not judged: the suite failed before judging them ({error})"
                       f"{kept}; please report it", err=True)
        if reporter is not None and reporter.results:
            for line in reporter.summary_lines():
                self.write(line)
        if self.ran or self.errors:
            self.write(self.closing_line(reporter))
        warning = reporter.closing_line() if reporter is not None else None
        if warning:
            self.write(warning)
        if self.doc is not None and self.doc["exitCode"] == NOTHING_TESTED and self.ran:  # (none ran: -k, below)
            self.write(nothing_tested_line(self.doc["role"]), err=True)

    def closing_line(self, reporter=None) -> str:
        """The suite's own count of each outcome (report/counts.py: the same as every report's; pytest would
        count a warning or an info as passed), and the suite's faults, if any."""
        from .report.counts import outcome_counts, phrase

        said = phrase(outcome_counts(reporter.results.values())) if reporter is not None else ""
        errors = self.counts.get("error", 0)
        parts = [p for p in (said, f"{errors} not judged (an error of the suite)" if errors else "") if p]
        return f"{', '.join(parts) or 'no checks ran'} in {time.time() - self.started:.2f}s"


def _grouped(failures: list[tuple[str, str]]) -> list[tuple[list[str], str]]:
    """Failures with the same text after their first line (which names the check), the ids together."""
    groups: dict[str, tuple[list[str], str]] = {}
    for check_id, text in failures:
        head, _, body = text.partition("\n")
        key = body if body.strip() else text
        groups.setdefault(key, ([], text))[0].append(check_id)
    return list(groups.values())


def _first_lines(text: str, n: int = 3) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return " / ".join(lines[-n:])
