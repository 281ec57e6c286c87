"""The pytest layer: options, the recording fixture, verdicts as test outcomes, reports.

Registered through the `pytest11` entry point, so `pytest --pyargs conformance
--mcp-server-command "..."` runs the checks; the CLI is a thin layer that
builds exactly such a command line. Nothing heavy happens unless a target
option is given: without one the check tests skip with the reason.

Outcomes map onto pytest's: pass/info -> passed, skip -> skipped, fail ->
failed, warn -> passed (failed under --mcp-strict). The full verdict travels in
the test report's `user_properties` (key "mcpx"), which also crosses
pytest-xdist, and the reporter writes results.json and summary.md from it.
"""

from __future__ import annotations

import contextlib
import json
import shlex
import time

import pytest

from .core import roles
from .core.model import REGISTRY, Result, format_failure

PROPERTY = "mcpx"


def pytest_addoption(parser):
    group = parser.getgroup("mcp-ext-conformance", "MCP context-extension conformance")
    group.addoption("--mcp-server-command", dest="mcpx_server_command", default=None,
                    help="run server-role checks against this command over stdio")
    group.addoption("--mcp-server-url", dest="mcpx_server_url", default=None,
                    help="run server-role checks against this Streamable HTTP URL")
    group.addoption("--mcp-server-docker-image", dest="mcpx_server_docker_image", default=None,
                    help="run server-role checks against a container of this image, over its stdio")
    group.addoption("--mcp-docker-port", dest="mcpx_docker_port", type=int, default=None,
                    help="the container serves Streamable HTTP on this port (published on a free loopback port)")
    group.addoption("--mcp-docker-command", dest="mcpx_docker_command", default=None,
                    help="command to run in the container instead of the image's default")
    group.addoption("--mcp-docker-no-network", dest="mcpx_docker_no_network", action="store_true", default=False,
                    help="start Docker targets without network")
    group.addoption("--mcp-host-command", dest="mcpx_host_command", default=None,
                    help="run host-role checks against this host command (conformance/host/HARNESS.md)")
    group.addoption("--mcp-gateway-command", dest="mcpx_gateway_command", default=None,
                    help="run gateway transparency checks against this gateway command (its upstream is the "
                         "suite's fixture server: MCPX_UPSTREAM_COMMAND, or {upstream} in the command)")
    group.addoption("--mcp-gateway-url", dest="mcpx_gateway_url", default=None,
                    help="with --mcp-gateway-command: the gateway serves Streamable HTTP here ({port}: a free port)")
    group.addoption("--mcp-gateway-upstream", dest="mcpx_gateway_upstream", choices=("stdio", "http"),
                    default="stdio", help="serve the upstream fixture server over stdio (default) or HTTP")
    group.addoption("--mcp-gateway-adapter", dest="mcpx_gateway_adapter", default=None,
                    help="run the sequential-pipeline fixtures through this adapter, module:factory "
                         "(conformance/gateway/ADAPTER.md)")
    group.addoption("--mcp-profile", dest="mcpx_profiles", action="append", default=[],
                    help="claim this profile: every check of it runs and missing fixtures fail (repeatable)")
    group.addoption("--mcp-isolate-profiles", dest="mcpx_isolate", action="store_true", default=False,
                    help="server role: record each profile on its own connection (its own process, container or "
                         "session) instead of all on one")
    group.addoption("--mcp-fixture-contract", dest="mcpx_fixture_contract", type=int, default=1,
                    help="the fixture contract version a server must meet: a fixture added in a later version "
                         "is reported when missing, never a failure (default 1)")
    group.addoption("--mcp-strict", dest="mcpx_strict", action="store_true", default=False,
                    help="SHOULD-level violations (warn) fail")
    group.addoption("--mcp-connection-mode", dest="mcpx_mode", choices=("handshake", "2026-07-28"),
                    default="handshake",
                    help="handshake (initialize, the default) or 2026-07-28 (stateless: server/discover, _meta on "
                         "every request)")
    group.addoption("--mcp-timeout", dest="mcpx_timeout", type=float, default=None,
                    help="seconds to wait for any one response (default 10; for a host, one turn's answer: 20)")
    group.addoption("--mcp-run-timeout", dest="mcpx_run_timeout", type=float, default=120.0,
                    help="seconds one profile's whole run may take (default 120)")
    group.addoption("--mcp-env", dest="mcpx_env", action="append", default=[],
                    help="KEY=VALUE passed to a started target (its environment is otherwise scrubbed)")
    group.addoption("--mcp-expected-failures", dest="mcpx_expected_failures", default=None,
                    help="YAML list of check ids or profiles expected to fail (listed passes go stale and fail)")
    group.addoption("--mcp-report-dir", dest="mcpx_report_dir", default=None,
                    help="write results.json and summary.md here")


def pytest_configure(config):
    config._mcpx_baseline = None
    if config.getoption("mcpx_expected_failures", None):
        roles.load_all()  # the checks a baseline may name
        from .report.baseline import BaselineError, load

        try:
            config._mcpx_baseline = load(config.getoption("mcpx_expected_failures"))
        except BaselineError as exc:
            raise pytest.UsageError(str(exc)) from None
    if config.getoption("mcpx_report_dir", None) or _role(config):
        config.pluginmanager.register(Reporter(config), "mcpx-reporter")


def pytest_generate_tests(metafunc):
    """One test per check id: the checks of the role whose target is given, or every check (each then skips)."""
    if "check_id" not in metafunc.fixturenames or "mcpx_recordings" not in metafunc.fixturenames:
        return
    role = _role(metafunc.config)
    ids = role.check_ids() if role else [cid for r in roles.ROLES.values() for cid in r.check_ids()]
    metafunc.parametrize("check_id", sorted(ids))


def _role(config) -> roles.Role | None:
    return roles.selected(lambda dest: config.getoption(dest, None))


def _env(config) -> dict[str, str]:
    return dict(item.split("=", 1) for item in config.getoption("mcpx_env") if "=" in item)


def _claimed(config, role: roles.Role) -> set[str]:
    """The profiles claimed with --mcp-profile; one the role has no checks for is a usage error."""
    claimed = set(config.getoption("mcpx_profiles"))
    problem = role.profile_error(sorted(claimed))
    if problem:
        raise pytest.UsageError(problem)
    return claimed


def _timeout(config, role: roles.Role) -> float:
    value = config.getoption("mcpx_timeout", None)
    return role.default_timeout if value is None else value


def _server_target(config):
    from .targets import TargetSpec

    if not roles.SERVER.given(lambda dest: config.getoption(dest, None)):
        return None
    command, url = config.getoption("mcpx_server_command"), config.getoption("mcpx_server_url")
    image = config.getoption("mcpx_server_docker_image")
    kind = "stdio" if command else "http" if url else "docker"
    if image and config.getoption("mcpx_docker_command") and not config.getoption("mcpx_docker_port"):
        raise pytest.UsageError("--mcp-docker-command goes with --mcp-docker-port (stdio runs the image's command)")
    return TargetSpec(kind, command=command, url=url, image=image, env=_env(config),
                      network=not config.getoption("mcpx_docker_no_network"),
                      request_timeout=_timeout(config, roles.SERVER), mode=config.getoption("mcpx_mode"))


def _gateway_target(config) -> dict:
    command, adapter = config.getoption("mcpx_gateway_command"), config.getoption("mcpx_gateway_adapter")
    if not command:
        return {"kind": "adapter", "adapter": adapter}
    url = config.getoption("mcpx_gateway_url")
    return {"kind": "http", "url": url, "command": command} if url else {"kind": "stdio", "command": command}


def _target_description(config) -> dict:
    role = _role(config)
    if role is roles.GATEWAY:
        return _gateway_target(config)
    if role is roles.HOST:
        return {"kind": "stdio", "command": config.getoption("mcpx_host_command")}
    spec = _server_target(config)
    return spec.describe() if spec else {"kind": "stdio", "command": "?"}


# -- recording, one function per role: each returns {profile: Recording} (conformance/core/recording.py) -------------

def _record_server(config, profiles: list[str], claimed: set[str], say) -> dict:
    from .server import record

    spec = _server_target(config)
    with _published(config, spec) as spec:
        isolate = config.getoption("mcpx_isolate")
        if say:
            say(f"recording {len(profiles)} profile(s) of {spec.command or spec.url or spec.image}, "
                + ("each on its own connection" if isolate else "on one connection"))
        recordings = record.record_sync(spec, profiles, claimed=claimed, isolate=isolate,
                                        run_timeout=config.getoption("mcpx_run_timeout"), progress=_progress(say))
    for rec in recordings.values():
        rec.fixture_contract = config.getoption("mcpx_fixture_contract")
    return recordings


def _record_host(config, profiles: list[str], claimed: set[str], say) -> dict:
    from .host import record

    command = config.getoption("mcpx_host_command")
    if say:
        say(f"running the host through its scenarios: {command}")

    def progress(run, done, total):
        if say:
            trouble = f"; {run.fatal}" if run.fatal else ""
            say(f"  [{done}/{total}] {run.scenario}: {run.answered()}/{len(run.turns)} turn(s) answered, "
                f"{len(run.model)} model request(s), {run.duration:.1f} s{trouble}")

    return record.record_hosts_sync(command, profiles, claimed=claimed, turn_timeout=_timeout(config, roles.HOST),
                                    run_timeout=config.getoption("mcpx_run_timeout"), env=_env(config),
                                    progress=progress)


def _record_gateway(config, profiles: list[str], claimed: set[str], say) -> dict:
    """Transparency through a gateway command, pipeline semantics through an adapter: either or both."""
    from .gateway import record, replay
    from .gateway.launch import gateway_factory

    command, adapter = config.getoption("mcpx_gateway_command"), config.getoption("mcpx_gateway_adapter")
    recordings: dict = {}
    through = [p for p in profiles if p in record.PROFILES]
    if command and through:
        factory = gateway_factory(command, url=config.getoption("mcpx_gateway_url"),
                                  request_timeout=_timeout(config, roles.GATEWAY), env=_env(config))
        if say:
            say(f"recording {len(through)} profile(s) through the gateway {command}, each with its own upstream")
        recordings.update(record.record_gateway_sync(
            factory, through, claimed=claimed, upstream=config.getoption("mcpx_gateway_upstream"),
            run_timeout=config.getoption("mcpx_run_timeout"), progress=_progress(say)))
    if adapter and replay.PROFILE in profiles:
        if say:
            say(f"replaying the pipeline fixtures through {adapter}")
        recordings[replay.PROFILE] = replay.record_adapter(adapter)
    return recordings


RECORDERS = {"server": _record_server, "host": _record_host, "gateway": _record_gateway}


def _warm_up() -> None:
    """Load what judging and the reports need while the recording waits on the target (a server's own
    start-up is often a second of waiting): jsonschema and the schemas, the catalog, the report writers."""
    import threading

    def warm() -> None:
        try:
            from .core import catalog, schemas_loader, wire

            wire.warm()
            schemas_loader.validator("capabilities")
            catalog.load()
            from .report import badges, html as html_report, results as reports  # noqa: F401 - imported for the report at the end

            html_report.warm()
        except Exception:  # noqa: BLE001 - judging imports the same modules again and reports any failure
            pass

    threading.Thread(target=warm, name="mcpx-warm-up", daemon=True).start()


class _EarlyRecording:
    """The recording, begun when the session starts instead of when the first check asks for it, so that
    the target starts up (often a second of imports) while pytest collects. Its progress lines wait in a
    queue for the main thread to print: output capture is not to be touched from another thread."""

    _DONE = object()

    def __init__(self, config, role: roles.Role, profiles: list[str], claimed: set[str]):
        import queue
        import threading

        self.profiles = profiles
        self.lines: queue.SimpleQueue = queue.SimpleQueue()
        self.outcome: tuple = (None, None)
        self.thread = threading.Thread(target=self._record, args=(config, role, profiles, claimed),
                                       name="mcpx-recording", daemon=True)
        self.thread.start()

    def _record(self, config, role, profiles, claimed) -> None:
        try:
            self.outcome = (RECORDERS[role.name](config, profiles, claimed, self.lines.put), None)
        except BaseException as exc:  # noqa: BLE001 - raised again on the main thread, by result()
            self.outcome = (None, exc)
        finally:
            self.lines.put(self._DONE)

    def result(self, say) -> dict:
        while (line := self.lines.get()) is not self._DONE:
            if say:
                say(line)
        recordings, error = self.outcome
        if error is not None:
            raise error
        return recordings


def _profiles_to_record(role: roles.Role, claimed: set[str], wanted) -> list[str]:
    return [p for p in role.profiles if p in wanted and (not claimed or p in claimed)]


def pytest_sessionstart(session):
    """Begin recording now when every check of the role will run (no selection that could narrow the
    profiles, no xdist, not just collecting)."""
    config = session.config
    role = _role(config)
    option = config.option
    narrowed = (getattr(option, "keyword", "") or getattr(option, "markexpr", "") or getattr(option, "deselect", None)
                or getattr(option, "lf", False) or any("::" in str(arg) for arg in config.args))
    if (role is None or narrowed or hasattr(config, "workerinput") or getattr(option, "numprocesses", None)
            or getattr(option, "collectonly", False) or getattr(option, "showfixtures", False)):
        return
    claimed = _claimed(config, role)
    _warm_up()
    config._mcpx_early = _EarlyRecording(config, role, _profiles_to_record(role, claimed, role.profiles),
                                         claimed)


@pytest.fixture(scope="session")
def mcpx_recordings(request):
    """The recordings of the run's role, made once, by profile (only the profiles a selected check needs)."""
    config = request.config
    role = _role(config)
    if role is None:
        pytest.skip("; ".join(r.missing_target for r in roles.ROLES.values()))
    claimed = _claimed(config, role)
    config._mcpx_target = _target_description(config)
    wanted = {REGISTRY[item.callspec.params["check_id"]].profile for item in request.session.items
              if hasattr(item, "callspec") and item.callspec.params.get("check_id") in REGISTRY}
    profiles = _profiles_to_record(role, claimed, wanted)
    early = getattr(config, "_mcpx_early", None)
    if early is not None:
        recordings = early.result(_say(config))
        if early.profiles != profiles:  # collection narrowed the run after all: record what it needs
            recordings = RECORDERS[role.name](config, profiles, claimed, _say(config))
    else:
        _warm_up()
        recordings = RECORDERS[role.name](config, profiles, claimed, _say(config))
    available = [r for r in recordings.values() if r.claimed] or list(recordings.values())
    if available and all(r.unavailable for r in available):
        config._mcpx_unavailable = available[0].unavailable
        pytest.exit(f"target unreachable: {available[0].unavailable}", returncode=2)
    return recordings


def _say(config):
    """Print a line past output capture, or None on xdist workers and without a terminal."""
    writer = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")
    if writer is None or hasattr(config, "workerinput"):
        return None

    def say(line: str) -> None:
        if capture is None:
            writer.write_line(line)
            return
        with capture.global_and_fixture_disabled():
            writer.write_line(line)

    return say


@contextlib.contextmanager
def _published(config, spec):
    """For a Docker target serving HTTP: one container for the run, reached over its published port."""
    port = config.getoption("mcpx_docker_port")
    if spec.kind != "docker" or port is None:
        yield spec
        return
    import dataclasses

    from .targets import TargetUnavailable
    from .targets.docker import PublishedContainer

    command = config.getoption("mcpx_docker_command")
    try:
        container = PublishedContainer(spec.image, port, command=shlex.split(command) if command else None,
                                       env=spec.env).__enter__()
    except TargetUnavailable as exc:
        config._mcpx_unavailable = str(exc)
        pytest.exit(f"target unreachable: {exc}", returncode=2)
    try:
        yield dataclasses.replace(spec, kind="http", url=container.url)
    finally:
        container.__exit__()


def _progress(say):
    """One line as each profile's recording ends, so a long run shows where it is (None without a terminal)."""
    if say is None:
        return None

    def progress(rec, done, total):
        state = "claimed" if rec.claimed else "not claimed"
        trouble = f"; {rec.fatal}" if rec.fatal else ""
        say(f"  [{done}/{total}] {rec.profile}: {state}, {len(rec.exchanges)} exchange(s){trouble}")

    return progress


@pytest.fixture
def mcpx_verdict(request):
    """Evaluate a check against its recording and turn the verdict into a test outcome."""
    from .core.runner import evaluate

    from .core.recording import peer_identity

    def verdict(check_id: str, recordings: dict) -> Result:
        check = REGISTRY[check_id]
        rec = recordings.get(check.profile)
        if rec is None:
            claimed = request.config.getoption("mcpx_profiles")
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
        request.node.user_properties.append((PROPERTY, json.dumps(payload)))
        if result.outcome == "skip":
            pytest.skip(result.reason)
        if result.outcome == "xfail":
            pytest.xfail(result.reason)
        if result.outcome in ("fail", "stale") or (strict and result.outcome == "warn"):
            pytest.fail(format_failure(result), pytrace=False)
        return result

    return verdict


class Reporter:
    """Collects verdicts from test reports (local or from xdist workers) and writes reports."""

    def __init__(self, config):
        self.config = config
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
                    report.user_properties = [(k, v) for k, v in properties if k != PROPERTY] + [
                        ("check", result.id), ("outcome", result.outcome), ("level", result.level),
                        ("rows", " ".join(result.rows))]

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
        from .report import results as reports

        finished = time.time()
        results = [self.results[k] for k in sorted(self.results)]
        document = reports.results_document(
            role=(_role(self.config) or roles.SERVER).name, target=getattr(self.config, "_mcpx_target", None) or _target_description(self.config),
            results=results, claims=self.claims, started=self.started, finished=finished,
            strict=self.config.getoption("mcpx_strict"), exit_code=self.exit_code(exitstatus),
            unavailable=getattr(self.config, "_mcpx_unavailable", None), peer=self.peer)
        reports.write_all(directory, document)

    def pytest_terminal_summary(self, terminalreporter):
        if not self.results:
            return
        from .report import results as reports

        role = (_role(self.config) or roles.SERVER).name
        for line in reports.terminal_table(list(self.results.values()), self.claims, role=role):
            # The run's one warning (nothing claimed, a field where the proposal puts none) stands out.
            attention = line.startswith(reports.ATTENTION)
            terminalreporter.write_line(line, yellow=attention, bold=attention)
        for profile in self.stale_profiles():
            terminalreporter.write_line(f"  STALE expected-failures entry {profile!r}: no check of it fails now")
        self.closing = reports.closing_line(role, self.claims)

    def pytest_unconfigure(self, config):
        # After pytest's own "3 passed, 52 skipped", which alone would read as a clean bill of health.
        writer = config.pluginmanager.get_plugin("terminalreporter")
        if getattr(self, "closing", None) and writer is not None:
            writer.write_line(self.closing, yellow=True, bold=True)
