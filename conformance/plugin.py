"""The pytest layer: options from the table, the recording fixture, verdicts as test outcomes.

Registered through the `pytest11` entry point, so `pytest --pyargs conformance
--mcp-server-command "..."` runs the checks; the CLI is a thin layer that
builds exactly such a command line. Nothing heavy happens unless a target
option is given: without one the check tests skip with the reason.

Outcomes map onto pytest's: pass/info -> passed, skip -> skipped, fail ->
failed, warn -> passed (failed under --mcp-strict). The full verdict travels in
the test report's `user_properties` (key "mcpx"), which also crosses
pytest-xdist, and the reporter (report/collector.py) writes the reports from it.
"""

from __future__ import annotations

import json
import os

import pytest

from . import options
from .core import redact, roles
from .core.model import REGISTRY, Result, format_failure
from .report.collector import PROPERTY
from .run import background


def pytest_addoption(parser):
    group = parser.getgroup("mcp-ext-conformance", "MCP context-extension conformance")
    options.add_plugin_options(group)


@pytest.hookimpl(tryfirst=True)  # before pytest's junitxml reads where to write (a report directory's junit.xml)
def pytest_configure(config):
    config._mcpx_baseline = None
    if config.getoption("mcpx_expected_failures", None):
        roles.load_all()  # the checks a baseline may name
        from .report.baseline import BaselineError, load

        try:
            config._mcpx_baseline = load(config.getoption("mcpx_expected_failures"))
        except BaselineError as exc:
            raise pytest.UsageError(str(exc)) from None
    role = _role(config)
    # The user's secrets (--header, --secret-env values) are redacted from here on, wherever they appear.
    redact.use(_run(config, role).secrets if role is not None else redact.NONE)
    if role is not None:
        problem = options.conflicts(_run(config, role).values, role.name)
        if problem:
            raise pytest.UsageError(problem)
    report_dir = config.getoption("mcpx_report_dir", None)
    if report_dir and not hasattr(config, "workerinput"):
        _stage(config, report_dir)
    if report_dir or role:
        from .report.collector import Reporter

        config.pluginmanager.register(Reporter(config, _role(config), _target_description), "mcpx-reporter")


def _stage(config, report_dir: str) -> None:
    """The run's outputs go to a staging folder first (report/files.py), pytest's junit.xml (written whenever
    a report directory is given, as its help says) and pytest-report.json among them."""
    import os

    from .report.files import Staging

    staging = config._mcpx_staging = Staging(report_dir)
    final = os.path.abspath(report_dir)
    xmlpath = getattr(config.option, "xmlpath", None)
    if not xmlpath or os.path.abspath(xmlpath) == os.path.join(final, "junit.xml"):
        config.option.xmlpath = str(staging.path / "junit.xml")
    json_path = getattr(config.option, "json_report_file", None)
    if json_path and os.path.abspath(json_path) == os.path.join(final, "pytest-report.json"):
        # pytest-json-report builds the document and the collector writes it (report/collector.py): the
        # plugin's own writer is the standard library's indented encoder, in Python, a run's largest writer.
        config.option.json_report_file = None
        config._mcpx_pytest_report = staging.path / "pytest-report.json"


def _given_options(config) -> list[str]:
    """The plugin's flags given a value other than their default."""
    given = []
    for option, role in options.plugin_options():
        flag, dest = option.plugin(role)
        value = config.getoption(dest, None)
        if value not in (None, False, [], ()) and value != option.default:
            given.append(flag)
    return given


def _is_check(item) -> bool:
    """One of the suite's checks (conformance/test_checks.py), not another test that names a check_id."""
    names = getattr(item, "fixturenames", ())
    return "check_id" in names and "mcpx_recordings" in names


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session, config, items):
    """Whether the suite's checks were collected (before -k or -m deselect any); the checks of profiles the run
    will not record (left out by --mcp-profile, or needing another target option) are deselected, so every
    check a report counts has a verdict (report/counts.py)."""
    checks = [item for item in items if _is_check(item)]
    if not checks:
        return
    config._mcpx_checks_collected = True
    role = _role(config)
    if role is None or hasattr(config, "workerinput"):
        return
    run = _run(config, role)
    recorded = set(_profiles_to_record(role, set(config.getoption("mcpx_profile") or ()), set(role.profiles), run))
    left_out = [item for item in checks if hasattr(item, "callspec")
                and REGISTRY[item.callspec.params["check_id"]].profile not in recorded]
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = [item for item in items if item not in set(left_out)]


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session):
    """A `--mcp-*` option without the suite's checks collected is a mistake (it would be ignored); with them,
    under pytest's own terminal, the target is recorded now, so its progress lines come before pytest's."""
    config = session.config
    if not getattr(config, "_mcpx_checks_collected", False):
        given = _given_options(config)
        from_cli = getattr(config, "_mcpx_console", None) is not None  # it names the checks' file itself
        if given and not from_cli and not session.testsfailed and not getattr(config.option, "collectonly", False):
            raise pytest.UsageError(
                f"{given[0]} was given, but no conformance check was collected: add `--pyargs conformance` "
                f"(the checks are the installed package's tests), or run `mcp-ext-conformance`")
        return
    if session.items and (_role(config) is not None and config.pluginmanager.get_plugin("terminalreporter") is not None
            and not hasattr(config, "workerinput") and not getattr(config.option, "collectonly", False)):
        _recordings(config, session)


def pytest_sessionfinish(session, exitstatus):
    """The checks collected without a target: every one skipped, which is no pass (exit 5, "no tests ran")."""
    config = session.config
    if (_role(config) is None and getattr(config, "_mcpx_checks_collected", False) and exitstatus == 0
            and not config.getoption("mcpx_allow_nothing_tested", False)):
        session.exitstatus = pytest.ExitCode.NO_TESTS_COLLECTED
        config._mcpx_no_target = True


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if getattr(config, "_mcpx_no_target", False):
        terminalreporter.write_line(
            f"mcp-ext-conformance: nothing was tested, no target was given: "
            f"{'; '.join(r.missing_target.partition(': ')[2] for r in roles.ROLES.values())} "
            f"(or --mcp-allow-nothing-tested to exit 0)", yellow=True, bold=True)


def pytest_generate_tests(metafunc):
    """One test per check id: the checks of the role whose target is given, or every check (each then skips)."""
    if "check_id" not in metafunc.fixturenames or "mcpx_recordings" not in metafunc.fixturenames:
        return
    role = _role(metafunc.config)
    ids = role.check_ids(_run(metafunc.config, role).target_kind) if role else [
        cid for r in roles.ROLES.values() for cid in r.check_ids()]
    metafunc.parametrize("check_id", sorted(ids))


def _role(config) -> roles.Role | None:
    return options.selected_role(lambda dest: config.getoption(dest, None))


def _run(config, role: roles.Role) -> options.Run:
    return options.read(lambda dest: config.getoption(dest, None), role)


def _claimed(config, role: roles.Role) -> set[str]:
    """The profiles claimed with --mcp-profile; one the role has no checks for is a usage error."""
    claimed = set(config.getoption("mcpx_profile"))
    problem = role.profile_error(sorted(claimed))
    if problem:
        raise pytest.UsageError(problem)
    return claimed


def _target_description(config) -> dict:
    role = _role(config)
    return role.describe(_run(config, role)) if role else {"kind": "stdio", "command": "?"}


def _record(config, role: roles.Role, profiles: list[str], claimed: set[str], say) -> dict:
    """The role's recorder (each role's record.py); a target that cannot be started becomes a diagnosis."""
    from .targets import TargetUnavailable

    try:
        return role.record(_run(config, role), profiles, claimed, say)
    except TargetUnavailable as exc:
        config._mcpx_unavailable = redact.text(str(exc))
        return {}


def _profiles_to_record(role: roles.Role, claimed: set[str], wanted, run: options.Run | None = None) -> list[str]:
    """The role's profiles the run records: those a selected check needs, limited by --mcp-profile, and only
    those the run's options can record (a gateway's transparency needs its command)."""
    profiles = [p for p in role.profiles if p in wanted and (not claimed or p in claimed)]
    return role.recordable(run, profiles) if run is not None else profiles


def _threads_allowed(config) -> bool:
    """Whether the recording and the warm-up may import on threads of their own. Not where pytest rewrites the
    asserts of the packages they import: loading the installed plugins (pytest's default) marks every module of
    each plugin's distribution for rewriting, this package and anyio among them, and rewriting parses a module
    into `ast` objects, which on Python 3.11 two threads cannot do at once ("SystemError: AST constructor
    recursion depth mismatch": in an xdist worker under load, 25 checks errored on setup). The command line
    loads this plugin by name with autoloading off: there, only conformance.plugin itself is rewritten."""
    return config.getoption("assertmode") == "plain" or os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD") == "1"


def pytest_sessionstart(session):
    """Begin recording now when every check of the role will run (no selection that could narrow the
    profiles, no xdist, not just collecting)."""
    config = session.config
    role = _role(config)
    option = config.option
    narrowed = (getattr(option, "keyword", "") or getattr(option, "markexpr", "") or getattr(option, "deselect", None)
                or getattr(option, "lf", False) or any("::" in str(arg) for arg in config.args))
    if (role is None or narrowed or hasattr(config, "workerinput") or getattr(option, "numprocesses", None)
            or getattr(option, "collectonly", False) or getattr(option, "showfixtures", False)
            or not _threads_allowed(config)):
        return
    claimed = _claimed(config, role)
    # The checks register on this thread before another starts: collection reads the registry, and an import
    # that another thread is in the middle of can come back half done (Python's import deadlock avoidance).
    role.load()
    background.warm_up()
    kind = _run(config, role).target_kind  # a fixture replay records only the profiles its checks judge
    wanted = role.profiles if kind == "live" else {REGISTRY[cid].profile for cid in role.check_ids(kind)}
    profiles = _profiles_to_record(role, claimed, wanted, _run(config, role))
    config._mcpx_early = background.BackgroundRecording(
        lambda say: _record(config, role, profiles, claimed, say), profiles)


@pytest.fixture(scope="session")
def mcpx_recordings(request):
    """The recordings of the run's role, made once, by profile (only the profiles a selected check needs)."""
    if _role(request.config) is None:
        pytest.skip("; ".join(r.missing_target for r in roles.ROLES.values()))
    return _recordings(request.config, request.session)


def _recordings(config, session) -> dict:
    done = getattr(config, "_mcpx_recordings", None)
    if done is not None:
        return done
    role = _role(config)
    assert role is not None
    claimed = _claimed(config, role)
    config._mcpx_target = _target_description(config)
    wanted = {REGISTRY[item.callspec.params["check_id"]].profile for item in session.items
              if hasattr(item, "callspec") and item.callspec.params.get("check_id") in REGISTRY}
    profiles = _profiles_to_record(role, claimed, wanted, _run(config, role))
    early = getattr(config, "_mcpx_early", None)
    if early is not None:
        recordings = early.result(_say(config))
        if early.profiles != profiles:  # collection narrowed the run after all: record what it needs
            recordings = _record(config, role, profiles, claimed, _say(config))
    else:
        if _threads_allowed(config):
            background.warm_up()
        recordings = _record(config, role, profiles, claimed, _say(config))
    background.settled()
    from .run.diagnosis import diagnose

    problem = getattr(config, "_mcpx_unavailable", None) or diagnose(role.name, recordings, _run(config, role))
    if problem:
        problem = redact.text(problem)
        config._mcpx_unavailable = problem
        pytest.exit(problem, returncode=2)
    config._mcpx_recordings = recordings
    return recordings


def _say(config):
    """Print a line past output capture, or None on xdist workers and without a terminal."""
    writer = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")
    if hasattr(config, "workerinput"):
        return None
    if writer is None:  # the CLI's console (console.py) in place of pytest's terminal reporter
        console = getattr(config, "_mcpx_console", None)
        return console.write if console is not None else None

    def say(line: str) -> None:
        line = redact.text(line)
        if capture is None:
            writer.write_line(line)
            return
        with capture.global_and_fixture_disabled():
            writer.write_line(line)

    return say


@pytest.fixture
def mcpx_verdict(request):
    """Evaluate a check against its recording and turn the verdict into a test outcome."""
    from .core.recording import peer_identity
    from .core.runner import evaluate

    def verdict(check_id: str, recordings: dict) -> Result:
        check = REGISTRY[check_id]
        rec = recordings.get(check.profile)
        if rec is None:
            claimed = request.config.getoption("mcpx_profile")
            if claimed and check.profile not in claimed:
                pytest.skip(f"profile not selected (--mcp-profile limits the run to {', '.join(claimed)})")
            pytest.skip(roles.ROLES[check.role].why_not_recorded(check.profile))
        result = evaluate(check, rec)
        strict = request.config.getoption("mcpx_strict")
        baseline = request.config._mcpx_baseline
        if baseline is not None:
            outcome, why = baseline.apply(result.outcome, check_id, strict)
            if why:
                result.expected_failure = outcome == "xfail"
                result.reason = f"{why}: {result.reason}" if outcome == "xfail" else why
                result.outcome = outcome
        payload = result.to_json()
        payload["claim"] = result.claim
        payload["peer"] = peer_identity(rec)  # the target's serverInfo, for the reports' header
        if redact.current():  # a secret the target echoed leaves no trace in the verdict, its evidence or pytest's reports
            payload = redact.value(payload)
            result = Result.from_json({k: v for k, v in payload.items() if k not in ("claim", "peer")},
                                      payload["claim"])
        # To the reporter in this process as it is; from an xdist worker, as JSON text (what crosses to the controller).
        local = not hasattr(request.config, "workerinput") and request.config.pluginmanager.has_plugin("mcpx-reporter")
        request.node.user_properties.append((PROPERTY, payload if local else json.dumps(payload)))
        if result.outcome == "skip":
            pytest.skip(result.reason or "")  # the runner gives every skip and xfail its reason
        if result.outcome == "xfail":
            pytest.xfail(result.reason or "")
        if result.outcome in ("fail", "stale") or (strict and result.outcome == "warn"):
            pytest.fail(format_failure(result), pytrace=False)
        return result

    return verdict


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    """Last, every file the run wrote (the report directory, pytest's JUnit XML and JSON report) is redacted
    once more, for what reached a file by a path the verdicts do not take."""
    secrets = redact.current()
    if secrets and not hasattr(config, "workerinput"):
        secrets.files([config.getoption("mcpx_report_dir", None), getattr(config.option, "xmlpath", None),
                       getattr(config.option, "json_report_file", None)])
