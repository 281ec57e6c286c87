"""The command line: a thin layer that builds a pytest run of the conformance plugin.

    mcp-ext-conformance server --command "CMD ARGS" | --url URL   [--profile P]...
    mcp-ext-conformance server --adapter MODULE:FACTORY --wg-fixtures DIR
    mcp-ext-conformance host   --command "CMD ARGS"               [--profile P]...
    mcp-ext-conformance gateway --command "CMD ARGS" | --adapter MODULE:FACTORY   [--profile P]...
    mcp-ext-conformance list   [--role R] [--profile P]
    mcp-ext-conformance demo
    mcp-ext-conformance dashboard [NAME=]RESULTS.json... --out DIR

Exit codes: 0 nothing unexpected failed, 1 a check failed, 2 bad usage or the
target unreachable. The user never sees a traceback: anything unexpected is
reported in one line and exits 2.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

from .targets.peerkit import free_port, spawn

PACKAGE_DIR = Path(__file__).resolve().parent
DEFAULT_REPORT_DIR = "reports/latest"


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--profile", dest="profiles", action="append", default=[], metavar="P",
                        help="claim profile P: all its checks run and missing fixtures fail (repeatable)")
    parser.add_argument("--report-dir", default=DEFAULT_REPORT_DIR, metavar="DIR",
                        help=f"where to write results.json, junit.xml, summary.md (default {DEFAULT_REPORT_DIR})")
    parser.add_argument("--strict", action="store_true", help="SHOULD-level violations fail the run")
    parser.add_argument("--expected-failures", metavar="FILE",
                        help="YAML list of check ids or profiles expected to fail; a listed check that passes is stale")
    parser.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                        help="seconds to wait for any one response (default 10; host: one turn's answer, default 20)")
    parser.add_argument("--run-timeout", type=float, default=120.0, metavar="SECONDS",
                        help="seconds one profile's run may take in all (default 120)")
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                        help="environment for a started target, which otherwise gets a scrubbed environment")
    parser.add_argument("-k", dest="keyword", default=None, metavar="EXPR", help="only checks matching EXPR (pytest -k)")
    parser.add_argument("-v", "--verbose", action="store_true", help="one line per check")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mcp-ext-conformance",
                                     description="Conformance suite for MCP context extensions.")
    sub = parser.add_subparsers(dest="subcommand", required=True)

    server = sub.add_parser("server", help="check an MCP server")
    where = server.add_mutually_exclusive_group(required=True)
    where.add_argument("--command", help="start the server with this command line and speak stdio")
    where.add_argument("--url", help="Streamable HTTP endpoint, e.g. http://127.0.0.1:8000/mcp")
    where.add_argument("--docker-image", metavar="IMAGE",
                       help="run a container of IMAGE (its default command) and speak stdio through it")
    where.add_argument("--adapter", metavar="MODULE:FACTORY",
                       help="with --wg-fixtures: replay the interceptors working group's fixtures through this "
                            "adapter (the working group's four-function adapter contract)")
    server.add_argument("--wg-fixtures", metavar="DIR",
                        help="with --adapter: the working group's conformance/fixtures directory")
    server.add_argument("--no-network", action="store_true", help="with --docker-image: no network in the container")
    server.add_argument("--docker-port", type=int, metavar="PORT",
                        help="with --docker-image: the container serves Streamable HTTP at PORT (path /mcp), "
                             "published on a free loopback port")
    server.add_argument("--docker-command", metavar="CMD", help="with --docker-port: run CMD instead of the "
                        "image's default command")
    server.add_argument("--isolate-profiles", action="store_true",
                        help="record each profile on its own connection (its own process, container or session), so "
                             "a server that dies in one profile keeps the others' verdicts; slower")
    server.add_argument("--fixture-contract", type=int, choices=(1, 2), default=1, metavar="N",
                        help="the fixture contract version your server meets (docs/fixture-contract.md); fixtures of "
                             "a later version are reported when missing, never a failure (default 1)")
    server.add_argument("--connection-mode", choices=("handshake", "2026-07-28"), default="handshake",
                        help="handshake: initialize first (default); 2026-07-28: the stateless mode, server/discover "
                             "first and _meta on every request")
    _common(server)

    host = sub.add_parser("host", help="check a host application (an MCP client with an LLM loop)")
    host.add_argument("--command", required=True,
                      help="start the host with this command line, once per scenario (conformance/host/HARNESS.md)")
    _common(host)

    gateway = sub.add_parser("gateway", help="check a gateway: transparency (--command) and/or pipeline "
                                             "semantics (--adapter)")
    gateway.add_argument("--command", help="start the gateway with this command line; its upstream, the suite's "
                         "fixture server, is in MCPX_UPSTREAM_COMMAND / MCPX_UPSTREAM_URL or replaces {upstream}")
    gateway.add_argument("--url", help="with --command: the gateway serves Streamable HTTP at this URL "
                         "({port} becomes a free port, also in the command)")
    gateway.add_argument("--upstream", choices=("stdio", "http"), default="stdio",
                         help="how the suite serves the upstream fixture server (default stdio)")
    gateway.add_argument("--adapter", metavar="MODULE:FACTORY",
                         help="replay the sequential-pipeline fixtures through this adapter "
                              "(conformance/gateway/ADAPTER.md)")
    _common(gateway)

    lister = sub.add_parser("list", help="list every check with its requirement rows and level")
    lister.add_argument("--role", choices=("server", "host", "gateway"))
    lister.add_argument("--profile")
    lister.add_argument("--json", action="store_true", help="as JSON")

    demo = sub.add_parser("demo", help="run every role against the bundled reference implementations")
    demo.add_argument("--report-dir", default=DEFAULT_REPORT_DIR, metavar="DIR")

    dashboard = sub.add_parser("dashboard", help="one static page comparing many runs (results.json) side by side")
    dashboard.add_argument("results", nargs="+", metavar="[NAME=]RESULTS",
                           help="a results.json or its directory; NAME= names the implementation's column")
    dashboard.add_argument("--out", required=True, metavar="DIR", help="where to write index.html")
    dashboard.add_argument("--title", help="the page's title")
    return parser


INTERRUPT_GRACE = 8.0  # seconds a Ctrl-C may take to unwind before the CLI ends every target itself


def _on_interrupt(signum, frame):
    """Ctrl-C unwinds normally (targets closed, reports written); a watchdog makes sure it ends.

    If unwinding gets stuck (a signal landing in the middle of the event loop's own machinery), the
    watchdog kills every process group the suite started and leaves with exit code 2.
    """
    import threading

    def watchdog():
        time.sleep(INTERRUPT_GRACE)
        from .targets import reaper

        reaper.kill_all()
        print("mcp-ext-conformance: interrupted", file=sys.stderr, flush=True)
        os._exit(2)

    if not getattr(_on_interrupt, "armed", False):
        _on_interrupt.armed = True
        threading.Thread(target=watchdog, daemon=True).start()
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    if threading_main():
        signal.signal(signal.SIGINT, _on_interrupt)
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse prints its own usage message
        return 2 if exc.code else 0
    try:
        if args.subcommand == "list":
            return cmd_list(args)
        if args.subcommand == "server":
            return cmd_server(args)
        if args.subcommand == "host":
            return cmd_host(args)
        if args.subcommand == "gateway":
            return cmd_gateway(args)
        if args.subcommand == "demo":
            return cmd_demo(args)
        if args.subcommand == "dashboard":
            from .report.dashboard import cmd_dashboard

            return cmd_dashboard(args)
    except KeyboardInterrupt:
        print("mcp-ext-conformance: interrupted", file=sys.stderr)
        return 2
    except Exception as exc:  # never a traceback at the user
        print(f"mcp-ext-conformance: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    return 2


def threading_main() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


# pytest's own plugins a CLI run never uses, left unloaded (a run's fixed cost is mostly pytest's):
# no cache written into the user's directory, no doctests, unittest classes, debugger, subtests...
UNUSED_PYTEST_PLUGINS = ("cacheprovider", "doctest", "pastebin", "stepwise", "faulthandler", "unittest",
                         "debugging", "subtests", "setuponly", "setupplan")


def pytest_args(args, role_args: list[str]) -> list[str]:
    report_dir = Path(args.report_dir)
    out = [str(PACKAGE_DIR / "test_checks.py"), *role_args,
           "-c", str(PACKAGE_DIR / "pytest-cli.ini"), "--rootdir", str(PACKAGE_DIR),
           *(arg for name in UNUSED_PYTEST_PLUGINS for arg in ("-p", f"no:{name}")), "--assert=plain", "--no-header", "-q" if not args.verbose else "-v",
           "--mcp-report-dir", str(report_dir), "--mcp-run-timeout", str(args.run_timeout),
           "--junitxml", str(report_dir / "junit.xml"),
           "--json-report", "--json-report-file", str(report_dir / "pytest-report.json"), "--json-report-indent=2"]
    if args.timeout is not None:
        out += ["--mcp-timeout", str(args.timeout)]
    for profile in args.profiles:
        out += ["--mcp-profile", profile]
    for item in args.env:
        out += ["--mcp-env", item]
    if args.strict:
        out.append("--mcp-strict")
    if args.expected_failures:
        out += ["--mcp-expected-failures", args.expected_failures]
    if args.keyword:
        out += ["-k", args.keyword]
    return out


class _FreezeAfterCollection:
    """What exists after collection (modules, the registry, the catalog) lives until the run ends: move it
    out of the garbage collector's reach, so its passes (pytest forces two at the end) walk only what the
    run itself made."""

    @staticmethod
    def pytest_collection_finish(session) -> None:
        import gc

        gc.freeze()


def run() -> None:
    """The console entry point: main(), then leave without tearing the interpreter down.

    Exit handlers still run (they end the targets' process groups and containers) and output is flushed;
    what is skipped is freeing every object one by one, a tenth of a second that changes nothing."""
    code = main()
    import atexit

    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def run_pytest(arguments: list[str], report_dir: str) -> int:
    import pytest

    # Only the plugins a run needs: autoloading every installed plugin (hypothesis alone
    # takes 1.5 s to import) would dominate a short run.
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    status = int(pytest.main(["-p", "conformance.plugin", "-p", "pytest_jsonreport.plugin", *arguments],
                             plugins=[_FreezeAfterCollection()]))
    results = Path(report_dir) / "results.json"
    if status in (3, 4):  # internal error or usage error
        return 2
    if results.exists():
        try:
            return int(json.loads(results.read_text())["exitCode"])
        except (ValueError, KeyError):
            pass
    if status == 5:
        print("mcp-ext-conformance: no check selected", file=sys.stderr)
        return 2
    return 1 if status == 1 else (0 if status == 0 else 2)


def _profile_error(role: str, profiles: list[str]) -> bool:
    """Say why `--profile` names something the role cannot claim; True when it does."""
    from .core.roles import ROLES

    problem = ROLES[role].profile_error(profiles)
    if problem:
        print(f"mcp-ext-conformance: {problem}", file=sys.stderr)
    return problem is not None


def cmd_server(args) -> int:
    if _profile_error("server", args.profiles):
        return 2
    if args.adapter or args.wg_fixtures:
        return _cmd_server_wg_fixtures(args)
    if args.command:
        role_args = ["--mcp-server-command", args.command]
    elif args.url:
        role_args = ["--mcp-server-url", args.url]
    else:
        if args.docker_port and args.no_network:
            print("mcp-ext-conformance: --docker-port needs the container's network; drop --no-network",
                  file=sys.stderr)
            return 2
        role_args = ["--mcp-server-docker-image", args.docker_image]
        role_args += ["--mcp-docker-no-network"] if args.no_network else []
        role_args += ["--mcp-docker-port", str(args.docker_port)] if args.docker_port else []
        role_args += ["--mcp-docker-command", args.docker_command] if args.docker_command else []
    role_args += ["--mcp-connection-mode", args.connection_mode, "--mcp-fixture-contract", str(args.fixture_contract)]
    role_args += ["--mcp-isolate-profiles"] if args.isolate_profiles else []
    _clear(args.report_dir)
    return run_pytest(pytest_args(args, role_args), args.report_dir)


def _cmd_server_wg_fixtures(args) -> int:
    """The server role's second kind of target: the working group's fixtures replayed through an adapter."""
    from .server.wg_fixtures import usage_error

    live = [flag for flag, value in (("--command", args.command), ("--url", args.url),
                                     ("--docker-image", args.docker_image)) if value]
    problem = usage_error(args.adapter, args.wg_fixtures, live, args.profiles)
    if problem is None and not Path(args.wg_fixtures).is_dir():
        problem = f"--wg-fixtures {args.wg_fixtures} is not a directory"
    if problem:
        print(f"mcp-ext-conformance: {problem}", file=sys.stderr)
        return 2
    _clear(args.report_dir)
    return run_pytest(pytest_args(args, ["--mcp-server-adapter", args.adapter, "--mcp-wg-fixtures", args.wg_fixtures]),
                      args.report_dir)


def cmd_host(args) -> int:
    if _profile_error("host", args.profiles):
        return 2
    _clear(args.report_dir)
    return run_pytest(pytest_args(args, ["--mcp-host-command", args.command]), args.report_dir)


def cmd_gateway(args) -> int:
    if not args.command and not args.adapter:
        print("mcp-ext-conformance: gateway needs --command, --adapter, or both", file=sys.stderr)
        return 2
    if args.url and not args.command:
        print("mcp-ext-conformance: --url goes with --command", file=sys.stderr)
        return 2
    if _profile_error("gateway", args.profiles):
        return 2
    role_args = ["--mcp-gateway-upstream", args.upstream]
    role_args += ["--mcp-gateway-command", args.command] if args.command else []
    role_args += ["--mcp-gateway-url", args.url] if args.url else []
    role_args += ["--mcp-gateway-adapter", args.adapter] if args.adapter else []
    _clear(args.report_dir)
    return run_pytest(pytest_args(args, role_args), args.report_dir)


def _clear(report_dir: str) -> None:
    for name in ("results.json", "summary.md", "junit.xml", "pytest-report.json"):
        try:
            (Path(report_dir) / name).unlink()
        except FileNotFoundError:
            pass


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
                     "sources": sorted({r.source for r in cited}), "fixtures": list(check.needs)})  # kind:name, @N: added in contract N
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    width = max((len(r["id"]) for r in rows), default=10)
    for r in rows:
        print(f"{r['id']:<{width}}  {r['level']:<8}  {', '.join(r['rows'])}")
    print(f"\n{len(rows)} checks")
    return 0


def cmd_demo(args) -> int:
    """Every role against the bundled reference implementations, each run's reports in its own folder."""
    python = shlex.quote(sys.executable)
    base = Path(args.report_dir)
    runs: list[tuple[str, int]] = []

    def run(name: str, argv: list[str]) -> None:
        print(f"\n=== {name} ===", flush=True)
        code = subprocess.call([sys.executable, "-m", "conformance", *argv, "--report-dir", str(base / name)])
        runs.append((name, code))

    run("server-stdio", ["server", "--command", f"{python} -m reference_servers.everything"])
    port = free_port()
    with spawn([sys.executable, "-m", "reference_servers.everything", "--http", str(port)], grace=5.0) as server:
        if not server.wait_listening(port):
            tail = server.stderr_tail()
            print(f"demo: the reference server did not start listening{'; stderr ends: ' + tail if tail else ''}",
                  file=sys.stderr)
            runs.append(("server-http", 2))
        else:
            run("server-http", ["server", "--url", f"http://127.0.0.1:{port}/mcp"])
    from .core.roles import HOST

    claim_all = [arg for p in HOST.profiles for arg in ("--profile", p)]
    run("host", ["host", "--command", f"{python} -m reference_clients.host", *claim_all])
    run("gateway", ["gateway", "--command", f"{python} -m reference_servers.gateway",
                    "--adapter", "reference_servers.gateway.adapter:factory"])
    print("\n=== demo ===")
    for name, code in runs:
        print(f"  {name:<14} exit {code}  reports in {base / name}")
    return max(code for _, code in runs)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
