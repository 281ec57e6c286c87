"""The command line: a thin layer that builds a pytest run of the conformance plugin.

    mcp-ext-conformance server --command "CMD ARGS" | --url URL   [--profile P]...
    mcp-ext-conformance host   --command "CMD ARGS"               [--profile P]...
    mcp-ext-conformance gateway --command "CMD ARGS" | --adapter MODULE:FACTORY   [--profile P]...
    mcp-ext-conformance list   [--role R] [--profile P]
    mcp-ext-conformance demo
    mcp-ext-conformance dashboard [NAME=]RESULTS.json... --out DIR
    mcp-ext-conformance interceptors|middleware list|invoke ...   (one request by hand, judged on the spot)

Exit codes: 0 nothing unexpected failed, 1 a check failed, 2 bad usage or the
target unreachable, 5 nothing tested (unless --allow-nothing-tested), 130
interrupted (Ctrl-C). The user never sees a traceback: anything unexpected is
reported in one line and exits 2.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO

from . import _sigint, options
from .core import spelling
from .core.roles import ROLES
from .targets.peerkit import free_port, spawn

PACKAGE_DIR = Path(__file__).resolve().parent
DEFAULT_REPORT_DIR = options.DEFAULT_REPORT_DIR


class _Parser(argparse.ArgumentParser):
    """A usage mistake is one line (and where to read more), not the whole usage text."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")

    def parse_args(self, args=None, namespace=None):
        argv = list(sys.argv[1:] if args is None else args)
        parsed, extra = self.parse_known_args(argv, namespace)
        if extra:
            self.error(f"unrecognized arguments: {' '.join(extra)}{_quote_hint(argv, extra)}")
        return parsed


def _quote_hint(argv: list[str], extra: list[str]) -> str:
    """A command given unquoted (`--command npx -y server`) leaves its words over: say how to quote it.

    The words argparse left over that follow the command's value on the line are taken as the command's."""
    if "--command" not in argv[:-1]:
        return ""
    start = argv.index("--command") + 1
    words = [argv[start]]
    for word in argv[start + 1:]:
        if word not in extra:
            break
        words.append(word)
    if len(words) == 1:
        return ""
    return f"; if they belong to the command, quote it as one argument: --command {shlex.quote(shlex.join(words))}"


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="mcp-ext-conformance", description="Conformance suite for MCP context extensions.")
    sub = parser.add_subparsers(dest="subcommand", required=True, parser_class=_Parser)
    for role in ROLES.values():
        options.add_cli_options(sub.add_parser(role.name, help=role.help), role.name)

    lister = sub.add_parser("list", help="list every check with its requirement rows and level")
    lister.add_argument("--role", choices=list(ROLES))
    lister.add_argument("--profile", choices=sorted({p for r in ROLES.values() for p in r.profiles}),
                        metavar="PROFILE")
    lister.add_argument("--json", action="store_true", help="as JSON")

    from .server import hand_arguments

    for kind in ("interceptors", "middleware"):
        for action in hand_arguments.add_arguments(sub, kind):
            options.add_named(action, hand_arguments.TARGET_OPTIONS, role="server")

    demo = sub.add_parser("demo", help="run every role against the bundled reference implementations")
    demo.add_argument("--report-dir", default=DEFAULT_REPORT_DIR, metavar="DIR", type=_checked(options.writable_dir))

    dashboard = sub.add_parser("dashboard", help="one static page comparing many runs (results.json) side by side")
    dashboard.add_argument("results", nargs="+", metavar="[NAME=]RESULTS",
                           help="a results.json or its directory; NAME= names the implementation's column")
    dashboard.add_argument("--out", required=True, metavar="DIR", help="where to write index.html",
                           type=_checked(options.writable_dir))
    dashboard.add_argument("--title", help="the page's title")
    return parser


def _checked(parse):
    def check(text):
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    check.__name__ = parse.__name__
    return check


INTERRUPT_GRACE = 8.0  # seconds a Ctrl-C may take to unwind before the CLI ends every target itself
INTERRUPTED = 130  # 128 + SIGINT: what a shell reports for a command ended by Ctrl-C
INTERRUPTED_LINE = "mcp-ext-conformance: interrupted"


def _on_interrupt(signum, frame):
    """Ctrl-C unwinds normally (targets closed, reports written); a watchdog makes sure it ends.

    If unwinding gets stuck (a signal landing in the middle of the event loop's own machinery), the
    watchdog kills every process group the suite started and leaves with the interrupted exit code.
    """
    import threading

    def watchdog():
        time.sleep(INTERRUPT_GRACE)
        from .targets import reaper

        reaper.kill_all()
        print(INTERRUPTED_LINE, file=sys.stderr, flush=True)
        os._exit(INTERRUPTED)

    if not getattr(_on_interrupt, "armed", False):
        _on_interrupt.armed = True
        threading.Thread(target=watchdog, daemon=True).start()
    if _importing(frame):
        # Raised inside an import, KeyboardInterrupt leaves a module half made, and what later uses it (the
        # reports of the interrupted run) fails on a missing name: the signal comes again once it is done.
        threading.Timer(0.02, os.kill, (os.getpid(), signal.SIGINT)).start()
        return
    raise KeyboardInterrupt


def _importing(frame) -> bool:
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


def main(argv: list[str] | None = None) -> int:
    _sigint.hold()  # Ctrl-C while the command line is read: noted (it knows no report directory yet)
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse prints its own usage message
        return 2 if exc.code else 0
    if threading_main():
        signal.signal(signal.SIGINT, _on_interrupt)
    if _sigint.pending:  # it came before: the run is interrupted before it started, and its reports say so
        _sigint.pending = False
        if args.subcommand in ROLES:
            with contextlib.suppress(Exception):
                _publish_interrupted(args, time.time())
        print(INTERRUPTED_LINE, file=sys.stderr)
        return INTERRUPTED
    if args.subcommand not in ROLES:
        gc.enable()  # `run` holds it back for a role's start-up only
    try:
        if args.subcommand == "list":
            return cmd_list(args)
        if args.subcommand in ROLES:
            return cmd_role(args)
        if args.subcommand == "demo":
            return cmd_demo(args)
        if args.subcommand in ("interceptors", "middleware"):
            return cmd_hand(args)
        if args.subcommand == "dashboard":
            from .report.dashboard import cmd_dashboard

            return cmd_dashboard(args)
    except KeyboardInterrupt:
        print(INTERRUPTED_LINE, file=sys.stderr)
        return INTERRUPTED
    except Exception as exc:  # never a traceback at the user, nor a secret of the user's
        from .core import redact

        print(redact.text(f"mcp-ext-conformance: error: {type(exc).__name__}: {exc}"), file=sys.stderr)
        return 2
    return 2


def cmd_hand(args) -> int:
    """`interceptors|middleware list|invoke`: one request by hand, judged on the spot (conformance/server/hand.py)."""
    import anyio

    from .server import hand
    from .targets import TargetSpec, TargetUnavailable

    if bool(args.command) == bool(args.url):
        print(f"mcp-ext-conformance {args.subcommand}: error: give one target, --command or --url", file=sys.stderr)
        return 2
    try:
        params = hand.params_from(args)
    except ValueError as exc:
        print(f"mcp-ext-conformance {args.subcommand}: error: {exc}", file=sys.stderr)
        return 2
    spec = TargetSpec.from_run(options.Run(ROLES["server"], hand.target_values(args)))  # as a run would build it
    try:
        verdict = anyio.run(lambda: hand.exchange(spec, args.subcommand, args.action, params,
                                                  getattr(args, "event", None) if args.action == "list" else None))
    except (TargetUnavailable, hand.Unreachable) as exc:
        print(f"mcp-ext-conformance {args.subcommand}: the target could not be reached: {exc}", file=sys.stderr)
        return 2
    print(hand.as_json(verdict) if args.json else hand.render(verdict))
    return 1 if verdict.problems else 0


def threading_main() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


# pytest's own plugins a CLI run never uses, left unloaded (a run's fixed cost is mostly pytest's):
# no cache written into the user's directory, no doctests, unittest classes, debugger, subtests...
UNUSED_PYTEST_PLUGINS = ("cacheprovider", "doctest", "pastebin", "stepwise", "faulthandler", "unittest",
                         "debugging", "subtests", "setuponly", "setupplan")


def pytest_args(args, role: str) -> list[str]:
    report_dir = Path(args.report_dir)
    out = [str(PACKAGE_DIR / "test_checks.py"), *options.pytest_argv(args, role),
           "-c", str(PACKAGE_DIR / "pytest-cli.ini"), "--rootdir", str(PACKAGE_DIR),
           *(arg for name in UNUSED_PYTEST_PLUGINS for arg in ("-p", f"no:{name}")), "--assert=plain",
           "--junitxml", str(report_dir / "junit.xml"),
           "--json-report", "--json-report-file", str(report_dir / "pytest-report.json"), "--json-report-indent=2"]
    if args.k:
        out += ["-k", args.k]
    return out


class _FreezeAfterCollection:
    """What exists after collection (modules, the registry, the catalog) lives until the run ends: move it
    out of the garbage collector's reach, so its passes (pytest forces two at the end) walk only what the
    run itself made. The collector is off until then (`run`): start-up makes no garbage worth a pass, and the
    passes over the growing heap of imported modules cost a tenth of the imports' CPU."""

    @staticmethod
    def pytest_collection_finish(session) -> None:
        gc.freeze()
        gc.enable()


def run() -> None:
    """The console entry point: main(), then leave without tearing the interpreter down.

    Exit handlers still run (they end the targets' process groups and containers) and output is flushed;
    what is skipped is freeing every object one by one, a tenth of a second that changes nothing.
    The garbage collector waits for the imports and pytest's collection (`_FreezeAfterCollection`)."""
    gc.disable()
    code = main()
    # The run is over: a Ctrl-C now would only cut short the exit handlers that end the targets.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    import atexit

    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def run_pytest(arguments: list[str], args, state: dict) -> int:
    """pytest with the conformance plugin; `state` holds the console, for an interruption the caller handles."""
    import pytest

    from .console import Console

    # Only the plugins a run needs: autoloading every installed plugin (hypothesis alone
    # takes 1.5 s to import) would dominate a short run. pytest's own terminal reporter is off: the
    # console (console.py) speaks of checks and targets, never of test files and fixtures.
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    spelling.use_cli_flags()  # advice names --profile, not the plugin's --mcp-profile
    console = state["console"] = Console(verbose=args.verbose)
    status = int(pytest.main(["-p", "conformance.plugin", "-p", "pytest_jsonreport.plugin", "-p", "no:terminal",
                              *arguments], plugins=[_FreezeAfterCollection(), console]))
    doc = console.doc
    finished = doc is not None and not doc.get("interrupted")  # a Ctrl-C after its reports changes neither
    if not finished and (console.interrupted or doc is not None):
        raise KeyboardInterrupt  # pytest caught it: the caller says so, once
    if status in (3, 4):  # internal error or usage error (pytest has said which on stderr)
        return 2
    if status in (0, 5) and console.ran == 0 and not console.errors:
        role = ROLES[args.subcommand]
        what = (f"no check matches -k {args.k!r}" if args.k else
                "no check to run: " + "; ".join(f"{p} is {role.why_not_recorded(p)}" for p in args.profile)
                if args.profile else "no check selected")
        print(f"mcp-ext-conformance: {what} (`mcp-ext-conformance list` shows the check ids)", file=sys.stderr)
        return 2
    if doc is not None:
        return int(doc["exitCode"])
    return 1 if status == 1 else (0 if status == 0 else 2)


def _publish_interrupted(args, started: float) -> None:
    """An interrupted run's reports when Ctrl-C came before pytest's session began: no verdict, the banner."""
    from .report import files, results

    role = ROLES[args.subcommand]
    values = {o.attr: getattr(args, o.attr, None) for o in options.for_role(role.name) if not o.cli_only}
    try:
        target = role.describe(options.Run(role, values))
    except Exception:  # noqa: BLE001 - the reports still say what was interrupted
        target = {"kind": "stdio", "command": getattr(args, "command", None) or "?"}
    with files.InterruptsDeferred():
        doc = results.results_document(role=role.name, target=target, results=[], claims={}, started=started,
                                       finished=time.time(), strict=bool(args.strict), exit_code=INTERRUPTED,
                                       interrupted=True)
        files.publish(args.report_dir, doc)


def usage_error(message: str) -> int:
    print(f"mcp-ext-conformance: {message}", file=sys.stderr)
    return 2


def cmd_role(args) -> int:
    """server, host or gateway: every option is checked (options.py) before anything starts."""
    role = ROLES[args.subcommand]
    problem = role.profile_error(args.profile) or options.conflicts(vars(args), role.name)
    if problem:
        return usage_error(problem)
    started = time.time()
    state: dict = {}
    try:
        try:
            start_target_early(args, role)
            return run_pytest(pytest_args(args, role.name), args, state)
        except Exception:
            if getattr(state.get("console"), "interrupted", False):  # pytest's unwinding of a Ctrl-C went wrong
                raise KeyboardInterrupt from None
            raise
    except KeyboardInterrupt:
        console = state.get("console")
        doc = getattr(console, "doc", None)
        if doc is not None and not doc.get("interrupted"):
            # Ctrl-C after the run had finished and its reports were written: they stand, and its exit code with them.
            return int(doc["exitCode"])
        if doc is None:  # no report was written: they say the run was interrupted
            _publish_interrupted(args, started)
        print(INTERRUPTED_LINE, file=sys.stderr)
        return INTERRUPTED


def start_target_early(args, role) -> None:
    """The server role's stdio target started now, before pytest and the checks are imported, so that its own
    start-up runs beside theirs (targets/prestart.py): where the run's first connection is certain to be to
    it, a live run of every check (no -k). Any other run starts its target when it connects, as before."""
    if role.name != "server" or args.k:
        return
    run = options.Run(role, {option.attr: getattr(args, option.attr, None)
                             for option in options.for_role(role.name) if not option.cli_only})
    if run.target_kind != "live":
        return
    from .targets import prestart
    from .targets.spec import TargetSpec
    from .targets.stdio import started_with

    spec = TargetSpec.from_run(run)
    if spec.kind == "stdio" and spec.command:
        prestart.start(*started_with(spec.command, spec.environment))


def cmd_list(args) -> int:
    from .core import catalog, roles
    from .core.model import REGISTRY

    roles.load_all()

    rows = []
    for check in sorted(REGISTRY.values(), key=lambda c: c.id):
        if args.role and check.role != args.role or args.profile and check.profile != args.profile:
            continue
        cited = catalog.rows_for(check.id)
        rows.append({"id": check.id, "level": catalog.level_of(check.id),
                     "rows": [r.id for r in cited], "requirement": check.must,
                     "sources": sorted({r.source for r in cited}),
                     "fixtures": list(check.needs),  # kind:name, @N: added in contract N
                     "revisions": catalog.revisions(cited),  # source name -> the commit (else revision) quoted
                     "judgedAgainst": judged_against(check.id)})
    if not rows:
        return usage_error(f"the {args.role} role has no {args.profile} checks (roles with them: "
                           f"{', '.join(r.name for r in roles.ROLES.values() if args.profile in r.profiles)})")
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    width = max((len(r["id"]) for r in rows), default=10)
    for r in rows:
        print(f"{r['id']:<{width}}  {r['level']:<8}  {', '.join(r['rows'])}")
    print(f"\n{len(rows)} checks")
    return 0


def judged_against(check_id: str) -> dict:
    """What the check's verdicts are judged against (core/provenance.py): a member of each `list --json`
    item, so the list stays an array of checks."""
    from .core import provenance

    profile = check_id.split("/")[0]
    cited = provenance.check_sources(check_id)
    return {"suite": {"name": provenance.SUITE, "version": provenance.__version__},
            "fixtureContract": provenance.FIXTURE_CONTRACT, "extensionId": provenance.EXTENSION_IDS[profile],
            "catalogRevision": provenance.catalog_revision(profile),
            "sources": [s for s in provenance.profile_sources(profile) if s["name"] in cited]}


def reference_extra(declared: list[str]) -> list[str]:
    """The distribution names of the `reference` extra, from requirement strings as the metadata gives them
    (`phonenumbers>=8.13; extra == "reference"`)."""
    names = []
    for requirement in declared:
        spec, _, marker = requirement.partition(";")
        if "extra" in marker and '"reference"' in marker:
            spec = spec.strip()
            names.append(spec[:next((i for i, c in enumerate(spec) if c in "<>=!~[ ("), len(spec))])
    return names


def missing_reference_extra() -> list[str]:
    """The `reference` extra's distributions that are not installed: the reference implementations the demo
    starts import them, so without them every run would fail at its target's start, check after check."""
    from importlib.metadata import PackageNotFoundError, requires, version

    try:
        declared = requires("mcp-ext-conformance") or []
    except PackageNotFoundError:  # imported from a source tree that was never installed: nothing to go by
        return []
    missing = []
    for name in reference_extra(declared):
        try:
            version(name)
        except PackageNotFoundError:
            missing.append(name)
    return missing


def cmd_demo(args) -> int:
    """Every role against the bundled reference implementations, each run's reports in its own folder.

    The roles are independent runs. The host role, the longest, runs beside the other three, which run one after
    another: two runs at a time, not four, so that on a small machine no role waits past its timeouts for CPU.
    Each run's output is shown whole, in the order below, once it and the ones before it have finished."""
    if missing := missing_reference_extra():
        print(f"demo: the bundled reference implementations need the `reference` extra ({', '.join(missing)} "
              f"missing): install mcp-ext-conformance[reference] (pip install '<wheel or checkout>[reference]')",
              file=sys.stderr)
        return 2
    from .core.roles import HOST
    from .options import HOST_FEATURES

    python = shlex.quote(sys.executable)
    base = Path(args.report_dir)
    claim_all = [arg for p in HOST.profiles for arg in ("--profile", p)]
    claim_all += [arg for feature in HOST_FEATURES for arg in ("--claim", feature)]
    with contextlib.ExitStack() as stack:
        # The reference host's scenarios start as children of one fork server, which imports the mcp SDK and
        # openai once for all of them (reference_clients/host/prefork.py): most of each run's start-up CPU.
        prefork = str(Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="mcpx-demo-"))) / "host.sock")
        stack.enter_context(spawn([sys.executable, "-m", "reference_clients.host", "--prefork", prefork], grace=5.0))
        stdio, http, host, gateway = roles = [
            DemoRole("server-stdio", ["server", "--command", f"{python} -m reference_servers.everything"], base),
            DemoRole("server-http", [], base),
            DemoRole("host", ["host", "--command", f"{python} -m reference_clients.host", *claim_all,
                              "--env", f"MCPX_HOST_PREFORK={prefork}"], base),
            DemoRole("gateway", ["gateway", "--command", f"{python} -m reference_servers.gateway",
                                 "--adapter", "reference_servers.gateway.adapter:factory"], base)]
        for role in roles:
            stack.callback(role.stop)
        host.start()
        stdio.start()
        port = free_port()  # the HTTP server starts up while the stdio run goes on
        server = stack.enter_context(spawn([sys.executable, "-m", "reference_servers.everything", "--http", str(port)],
                                           grace=5.0))
        stdio.show()
        if server.wait_listening(port):
            http.argv = ["server", "--url", f"http://127.0.0.1:{port}/mcp"]
            http.start()
        else:
            tail = server.stderr_tail()
            http.failed = f"demo: the reference server did not start listening{'; stderr ends: ' + tail if tail else ''}"
        http.show()
        server.stop()  # idle from here on; the exit below stops it again, harmlessly
        gateway.start()
        host.show()
        gateway.show()
    print("\n=== demo ===")
    for role in roles:
        print(f"  {role.name:<14} exit {role.code}  {role.wall:5.1f} s  reports in {base / role.name}")
    return max(role.code for role in roles)


class DemoRole:
    """One role's run of the demo: a `python -m conformance` process whose output is kept until its turn."""

    def __init__(self, name: str, argv: list[str], base: Path):
        self.name, self.argv, self.base = name, argv, base
        self.proc: subprocess.Popen | None = None
        self.timer: threading.Thread | None = None
        self.out: IO[bytes] | None = None
        self.err: IO[bytes] | None = None
        self.failed: str | None = None  # why it never started
        self.code, self.wall, self.started = 2, 0.0, 0.0

    def start(self) -> None:
        import tempfile

        self.out, self.err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
        self.started = time.monotonic()
        self.proc = subprocess.Popen([sys.executable, "-m", "conformance", *self.argv, "--report-dir",
                                      str(self.base / self.name)], stdout=self.out, stderr=self.err)
        self.timer = threading.Thread(target=self._time, args=(self.proc,), daemon=True)
        self.timer.start()

    def _time(self, proc: subprocess.Popen) -> None:
        """The run's own wall time, taken when it ends (it is shown only after the runs before it)."""
        proc.wait()
        self.wall = time.monotonic() - self.started

    def show(self) -> None:
        """Wait for the run, then print its header and output (stderr to stderr), as a serial run would."""
        print(f"\n=== {self.name} ===", flush=True)
        if self.proc is None:
            print(self.failed, file=sys.stderr, flush=True)
            return
        self.code = self.proc.wait()
        if self.timer is not None:
            self.timer.join()
        for captured, stream in ((self.out, sys.stdout), (self.err, sys.stderr)):
            assert captured is not None
            captured.seek(0)
            stream.flush()
            stream.buffer.write(captured.read())
            stream.buffer.flush()

    def stop(self) -> None:
        """Leave nothing running (an interrupted demo): end the run, close its captured output."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for captured in (self.out, self.err):
            if captured is not None:
                captured.close()

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
