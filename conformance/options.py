"""Every option of a run, declared once: the CLI's subcommands and the pytest plugin are built from this table.

Rules
-----
- An option has one name from flag to connection: `--timeout` on the command line is `--mcp-timeout` in the
  plugin (dest `mcpx_timeout`) and `timeout` on `Run`, on `TargetSpec` and on the connection.
- A row marked `spec` is a target option: `TargetSpec.from_run(run)` (conformance/targets/spec.py) fills the
  spec's field of the same name in every role, and the connection reads it there.
- Options that name a role's target (`command`, `url`, `adapter`) are role-scoped: one CLI flag under each
  subcommand, one plugin flag per role (`--mcp-server-command`, `--mcp-host-command`, ...).
- Defaults that differ by role (the timeouts) live on `core.roles.Role` only (`default_<name>`); the table says
  None, and `Run.value` gives the role's.
- Every value is checked when it is parsed (a positive number, `KEY=VALUE`, a URL with its scheme, a
  writable report directory, a profile the role has), so a mistake is one line and exit 2 before anything
  starts. The checkers raise `ValueError` with the sentence the user reads.

Adding a target option: a row here marked `spec`, a field of the same name on `TargetSpec`, and the connection
that reads it (docs/contributing.md#add-an-option).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from .core.roles import ROLES, Role
from .core.spelling import plugin_flag, seconds

# -- value checkers: each returns the value to use or raises ValueError with what the user reads -------------

def whole_number(low: int, high: int | None = None, what: str = "a whole number") -> Callable[[str], int]:
    """A checker for a whole number from `low` to `high` (no bound when None), named `what` in its message."""
    span = f"from {low} to {high}" if high is not None else f"of {low} or more"

    def check(text: str) -> int:
        try:
            value = int(text.strip())
        except ValueError:
            raise ValueError(f"{text!r} is not {what}: give a whole number {span}") from None
        if value < low or (high is not None and value > high):
            raise ValueError(f"{text!r}: give {what} {span}")
        return value

    return check


port = whole_number(1, 65535, "a port")


def command_line(text: str) -> str:
    import shlex

    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise ValueError(f"{text!r} is not a command line ({exc})") from None
    if not words:
        raise ValueError("the command is empty")
    return text


def url(text: str) -> str:
    from urllib.parse import urlsplit

    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        hint = f"; did you mean http://{text}?" if "://" not in text else ""
        raise ValueError(f"{text!r} is not an http:// or https:// URL{hint}")
    return text


def url_template(text: str) -> str:
    """A URL that may hold `{port}` (the gateway's own port, chosen by the suite)."""
    return url(text.replace("{port}", "1")) and text


def key_value(text: str) -> str:
    key, sep, _ = text.partition("=")
    if not sep or not key or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
        raise ValueError(f"{text!r} is not KEY=VALUE (a variable name, '=', the value)")
    return text


HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # RFC 9110 token
ENV_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


HEADER_VALUE = re.compile(r"[\t\x20-\x7e]*")  # visible ASCII, spaces and tabs: what HTTP/1.1 sends as is


def header_value(value: str) -> str:
    """A --header value with each ${VAR} read from the environment (a secret: never into a message)."""
    return ENV_REFERENCE.sub(lambda m: os.environ.get(m.group(1), ""), value.strip())


def header_values(items: Iterable[str]) -> dict[str, str]:
    """The --header values as {name: value}, each ${VAR} read from the environment (secrets: never into a report)."""
    out = {}
    for item in items:
        name, _, value = item.partition(":")
        out[name.strip()] = header_value(value)
    return out


def variables(items: Iterable[str]) -> dict[str, str]:
    """--env (or --secret-env) KEY=VALUE items as {KEY: VALUE}."""
    return dict(item.split("=", 1) for item in items)


def header(text: str) -> str:
    """`Name: value`; `${VAR}` in the value is read from the suite's environment when the run starts, so a
    secret need not stand on the command line (single-quote it so the shell leaves it alone). The value is
    checked here, where the message can name the header and the variable without the value: a token read
    with its newline would otherwise fail in the HTTP client, whose error quotes it."""
    name, sep, value = text.partition(":")
    if not sep or not HEADER_NAME.fullmatch(name.strip()):
        raise ValueError(f"{text.split(':')[0]!r}...: give a header as 'Name: value'")
    name, variables = name.strip(), ENV_REFERENCE.findall(value)
    missing = [var for var in variables if var not in os.environ]
    if missing:
        raise ValueError(f"header {name!r} reads ${{{missing[0]}}}, which is not set in the environment")
    if not HEADER_VALUE.fullmatch(header_value(value)):
        source = f" (read from {', '.join('${' + var + '}' for var in variables)})" if variables else ""
        raise ValueError(f"header {name!r}: its value{source} holds a line break, a control or a non-ASCII "
                         "character, which HTTP cannot send")
    return text


def sdk_release(text: str) -> str:
    """NAME[@VERSION] of a measured SDK (conformance/server/sdk-drops.json)."""
    from .server.sdk import parse

    return parse(text)


def readable_file(text: str) -> str:
    if not os.path.isfile(text) or not os.access(text, os.R_OK):
        raise ValueError(f"{text!r} is not a readable file")
    return text


def ca_bundle(text: str) -> str:
    """A file of PEM CA certificates that TLS can load (loading it is what the run would do first)."""
    import ssl

    readable_file(text)
    try:
        ssl.create_default_context(cafile=text)
    except (ssl.SSLError, ValueError):
        raise ValueError(f"{text!r} holds no CA certificate TLS can load (PEM expected)") from None
    return text


def expected_failures(text: str) -> str:
    """A readable expected-failures file that loads: YAML, a list or mapping, every entry a check id or a profile."""
    readable_file(text)
    from .core import roles
    from .report.baseline import BaselineError, load

    roles.load_all()  # the checks an entry may name
    try:
        load(text)
    except BaselineError as exc:  # a YAML error spans lines: the user reads one
        raise ValueError(" ".join(str(exc).split())) from None
    return text


def writable_dir(text: str) -> str:
    """A directory the run can write into: made now if missing, and a file written and removed in it (the
    only test that holds on every file system: permissions say yes on /proc, where nothing can be made)."""
    import tempfile

    if not text:
        raise ValueError("the report directory is empty")
    if os.path.exists(text) and not os.path.isdir(text):
        raise ValueError(f"{text!r} exists and is not a directory")
    try:
        os.makedirs(text, exist_ok=True)
        with tempfile.TemporaryFile(dir=text):
            pass
    except OSError as exc:
        raise ValueError(f"{text!r} is not a directory the run can write into ({exc.strerror or exc})") from None
    return text


def directory(text: str) -> str:
    if not os.path.isdir(text):
        raise ValueError(f"{text!r} is not a directory")
    return text


def module_factory(text: str) -> str:
    """MODULE:FACTORY, importable now (importing it is what the run would do first)."""
    module, sep, name = text.partition(":")
    if not sep or not module or not name:
        raise ValueError(f"{text!r} is not MODULE:FACTORY")
    from .core.adapters import load_adapter  # the same loader the run uses

    try:
        load_adapter(text)
    except Exception as exc:  # noqa: BLE001 - the user reads why their adapter does not load
        raise ValueError(f"{text!r} cannot be loaded: {type(exc).__name__}: {exc}") from None
    return text


# -- the table ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Option:
    name: str  # the CLI flag without dashes; the attribute on `Run` is it with '_' for '-'
    roles: tuple[str, ...]  # the subcommands (and the plugin's roles) that take it
    help: str
    parse: Callable[[str], Any] | None = None  # a checker above, or None for a plain string
    default: Any = None
    flag: bool = False  # store_true
    many: bool = False  # repeatable
    choices: tuple | None = None
    metavar: str | None = None
    scoped: bool = False  # names a role's target: a plugin flag per role (--mcp-server-command, ...)
    target: bool = False  # one of the role's target options (one of them must be given)
    plugin_flag: str | None = None  # when the plugin's flag is not --mcp-[role-]NAME
    cli_only: bool = False  # the CLI reads it itself (pytest has its own, or it is the CLI's business)
    role_help: tuple[tuple[str, str], ...] = ()  # (role, help) where a role-scoped option says another thing
    spec: bool = False  # a target option: TargetSpec's field of the same name, read by the connection
    collect: Callable[[Iterable[str]], Any] | None = None  # what a repeatable option's items become on the spec

    def help_for(self, role: str | None) -> str:
        return dict(self.role_help).get(role or "", self.help)

    @property
    def attr(self) -> str:
        return self.name.replace("-", "_")

    def plugin(self, role: str | None = None) -> tuple[str, str]:
        """(flag, dest) in the pytest plugin, for `role` when the option is role-scoped."""
        if self.plugin_flag:
            flag = self.plugin_flag
        else:
            flag = plugin_flag(self.name, role if self.scoped else None)
        return flag, "mcpx_" + flag[len("--mcp-"):].replace("-", "_")


SERVER, HOST, GATEWAY = ((name,) for name in ROLES)
# Optional features a host claims with --claim, each of one profile (conformance/host/record.py FEATURES).
HOST_FEATURES = ("interceptor-overrides",)
ALL = tuple(ROLES)

OPTIONS: tuple[Option, ...] = (
    # what is tested (one of a role's `target` options is required)
    Option("command", ALL, "start the target with this command line (stdio)", parse=command_line, scoped=True,
           target=True, spec=True, metavar="CMD", role_help=(
               ("server", "start the server with this command line (stdio)"),
               ("host", "start the host with this command line, once per scenario (docs/host.md)"),
               ("gateway", "start the gateway with this command line; its upstream is in MCPX_UPSTREAM_COMMAND "
                           "or replaces {upstream}"))),
    Option("url", SERVER + GATEWAY, "Streamable HTTP endpoint", parse=url_template, scoped=True, target=True,
           spec=True, metavar="URL", role_help=(
               ("server", "the server's Streamable HTTP endpoint, e.g. http://127.0.0.1:8000/mcp"),
               ("gateway", "with --command: where the started gateway serves Streamable HTTP; {port} becomes a "
                           "free port, also in the command"))),
    Option("docker-image", SERVER, "run a container of IMAGE and speak stdio through it",
           scoped=True, target=True, spec=True, metavar="IMAGE"),
    Option("adapter", SERVER + GATEWAY, "replay fixtures through this adapter", parse=module_factory, scoped=True,
           target=True, metavar="MODULE:FACTORY", role_help=(
               ("server", "with --wg-fixtures: replay the interceptors working group's fixtures through this "
                          "adapter (its four-function contract)"),
               ("gateway", "replay the sequential-pipeline fixtures through this adapter (docs/gateway.md)"))),
    Option("wg-fixtures", SERVER, "with --adapter: the interceptors working group's fixtures directory",
           parse=directory, metavar="DIR"),
    # how it is reached
    Option("header", SERVER + GATEWAY, "HTTP header for an HTTP target, 'Name: value' (repeatable); ${VAR} in the "
           "value is read from the environment; its value is replaced by [redacted:header NAME] in every report and on the "
           "console (values of 4 characters or more)", parse=header, many=True,
           spec=True, collect=header_values, metavar="'NAME: VALUE'"),
    Option("ca-bundle", SERVER + GATEWAY, "verify an https target against the CA certificates in FILE (PEM)",
           parse=ca_bundle, spec=True, metavar="FILE"),
    Option("no-network", SERVER, "with --docker-image: no network in the container", flag=True,
           spec=True, plugin_flag="--mcp-docker-no-network"),
    Option("docker-port", SERVER, "with --docker-image: the container serves Streamable HTTP at PORT (path /mcp), "
           "published on a free loopback port", parse=port, spec=True, metavar="PORT"),
    Option("docker-command", SERVER, "with --docker-port: run CMD instead of the image's default command",
           parse=command_line, spec=True, metavar="CMD"),
    Option("upstream", GATEWAY, "how the suite serves the upstream fixture server (default stdio)",
           choices=("stdio", "http"), default="stdio", plugin_flag="--mcp-gateway-upstream"),
    Option("connection-mode", SERVER, "handshake: initialize first (default); 2026-07-28: the stateless mode, "
           "server/discover first and _meta on every request", choices=("handshake", "2026-07-28"),
           default="handshake", spec=True),
    Option("isolate-profiles", SERVER, "record each profile on its own connection (its own process, container or "
           "session), so a server that dies in one profile keeps the others' verdicts; slower", flag=True),
    Option("fixture-contract", SERVER, "the fixture contract version your server meets (docs/fixture-contract.md); "
           "fixtures of a later version are reported when missing, never a failure (default 1)",
           parse=whole_number(1, 6, "a fixture contract version"), choices=(1, 2, 3, 4, 5, 6), default=1,
           metavar="N"),
    Option("sdk", SERVER, "the SDK your server is built on, NAME@VERSION (mcp@2.3.0, fastmcp@4.2.3, typescript@1.32.2, "
           "typescript-v2@2.4.0): a failure caused by what that release drops says so", parse=sdk_release,
           metavar="NAME@VERSION"),
    Option("env", ALL, "KEY=VALUE for a started target, which otherwise gets a scrubbed environment (repeatable)",
           parse=key_value, many=True, spec=True, collect=variables, metavar="KEY=VALUE"),
    Option("secret-env", ALL, "KEY=VALUE as --env, its value a secret: replaced by [redacted:env KEY] in every report "
           "and on the console, as --header values are (values of 4 characters or more) (repeatable)",
           parse=key_value, many=True, spec=True, collect=variables, metavar="KEY=VALUE"),
    Option("timeout", ALL, "seconds to wait for any one response (default 10; host: one turn's answer, default "
           "20); a first npx/uvx start or image pull may need 60", parse=seconds, spec=True, metavar="SECONDS"),
    Option("run-timeout", ALL, "seconds one profile's run may take in all (default 120)", parse=seconds,
           metavar="SECONDS"),
    # what is claimed and how it is judged
    Option("profile", ALL, "claim profile P: all its checks run and missing fixtures fail (repeatable)",
           many=True, metavar="P"),
    Option("claim", HOST, "claim an optional feature of a claimed profile: its checks run (otherwise they are skipped "
           "as not claimed); interceptor-overrides: per-interceptor overrides in the config (HARNESS.md, needs "
           "--profile interceptors) (repeatable)", many=True, choices=HOST_FEATURES, metavar="FEATURE"),
    Option("strict", ALL, "SHOULD-level violations (warn) fail the run", flag=True),
    Option("allow-nothing-tested", ALL, "exit 0, not 5, when nothing was tested (no profile claimed, or every "
           "check of every claimed profile skipped): for surveys and dashboards", flag=True),
    Option("expected-failures", ALL, "YAML list of check ids or profiles expected to fail; a listed check that "
           "passes is stale and fails", parse=expected_failures, metavar="FILE"),
    Option("report-dir", ALL, "where to write results.json, summary.md, junit.xml, index.html (CLI default "
           "reports/latest)", parse=writable_dir, metavar="DIR"),
    Option("k", ALL, "only checks whose id matches EXPR (pytest -k)", cli_only=True, metavar="EXPR"),
    Option("verbose", ALL, "one line per check", flag=True, cli_only=True),
)

BY_NAME = {option.name: option for option in OPTIONS}
BY_ATTR = {option.attr: option for option in OPTIONS}
DEFAULT_REPORT_DIR = "reports/latest"


def for_role(role: str) -> list[Option]:
    return [option for option in OPTIONS if role in option.roles]


# -- the plugin side ---------------------------------------------------------------------------------------

def plugin_options() -> Iterable[tuple[Option, str | None]]:
    """(option, role) for every plugin flag: role-scoped options once per role that takes them."""
    for option in OPTIONS:
        if option.cli_only:
            continue
        if option.scoped:
            for role in option.roles:
                yield option, role
        else:
            yield option, None


def _argparse_type(option: Option):
    """The checker as an argparse type: its ValueError becomes argparse's one-line error."""
    checker = option.parse
    if checker is None:
        return None
    import argparse

    def parse(text: str):
        try:
            return checker(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    parse.__name__ = option.name  # argparse names the type in its message
    return parse


def _argparse_kw(option: Option, dest: str, help_text: str, default: Any) -> dict[str, Any]:
    """add_argument's keywords for `option`, the same for the CLI and the plugin."""
    kw: dict[str, Any] = {"dest": dest, "help": help_text}
    if option.flag:
        return {**kw, "action": "store_true", "default": False}
    kw.update(default=[] if option.many else default, type=_argparse_type(option))
    if option.many:
        kw["action"] = "append"
    if option.choices:
        kw["choices"] = option.choices
    if option.metavar:
        kw["metavar"] = option.metavar
    return kw


def add_plugin_options(group) -> None:
    for option, role in plugin_options():
        flag, dest = option.plugin(role)
        help_text = _plugin_flags(option.help_for(role), role)
        group.addoption(flag, **_argparse_kw(option, dest, help_text if role is None else f"{role} role: {help_text}",
                                             option.default))


def _plugin_flags(text: str, role: str | None) -> str:
    """A help text with each option it names as the plugin spells it (`--command` -> `--mcp-gateway-command`)."""
    def spelled(match: re.Match) -> str:
        option = BY_NAME.get(match.group(1))
        if option is None or option.cli_only:
            return match.group(0)
        own = role if role in option.roles else option.roles[0]
        return option.plugin(own if option.scoped else None)[0]

    return re.sub(r"--([a-z][a-z-]*[a-z])", spelled, text)


@dataclass
class Run:
    """The options of one run as the role's recorder reads them: one attribute per option name."""

    role: Role
    values: dict[str, Any]

    def __getattr__(self, name: str) -> Any:
        try:
            return self.values[name]
        except KeyError:
            raise AttributeError(name) from None

    @property
    def target_kind(self) -> str:
        """"wg-fixtures" for the server role's replay of the working group's fixtures, else "live"
        (model.Check.target: which checks judge the run)."""
        return "wg-fixtures" if self.role.name == "server" and self.values.get("adapter") else "live"

    def target_values(self) -> dict[str, Any]:
        """{attribute: value} of the role's target options (the rows marked `spec`): what
        `TargetSpec.from_run` fills the spec with, so the transports need not import this table."""
        return {option.attr: self.value(option.attr) for option in for_role(self.role.name) if option.spec}

    def value(self, name: str) -> Any:
        """Option `name` (its attribute) as the target gets it: the role's `default_<name>` when not given, a
        repeatable option's items as its row collects them."""
        value = self.values.get(name)
        if value is None:
            value = getattr(self.role, f"default_{name}", None)
        collect = BY_ATTR[name].collect
        return collect(value or ()) if collect else value

    @property
    def timeout(self) -> float:
        return self.value("timeout")

    @property
    def run_timeout(self) -> float:
        return self.value("run_timeout")

    @property
    def secrets(self):
        """What no report may show: the --header values and the --secret-env values (core/redact.py)."""
        from .core.redact import Secrets

        return Secrets.of(self.value("header"), self.values.get("secret_env") or ())


def read(getoption: Callable[[str], Any], role: Role) -> Run:
    """The run's options for `role` from the plugin's parsed values (`getoption(dest)`)."""
    values = {}
    for option in OPTIONS:
        if option.cli_only or role.name not in option.roles:
            continue
        _, dest = option.plugin(role.name if option.scoped else None)
        values[option.attr] = getoption(dest)
    return Run(role, values)


def given_target(getoption: Callable[[str], Any], role: Role) -> bool:
    return any(getoption(option.plugin(role.name)[1]) for option in OPTIONS
               if option.target and role.name in option.roles)


def selected_role(getoption: Callable[[str], Any]) -> Role | None:
    """The role whose target the run names; a host or gateway target wins over a server target."""
    for role in sorted(ROLES.values(), key=lambda role: role.name == "server"):
        if given_target(getoption, role):
            return role
    return None


# -- the CLI side ------------------------------------------------------------------------------------------

def add_named(parser, helps: dict[str, str], role: str) -> None:
    """Some of `role`'s options, by name, with their flags and checkers, and the help given (the hand tool's
    target options)."""
    for name, help_text in helps.items():
        option = BY_NAME[name]
        assert role in option.roles, (name, role)
        parser.add_argument(f"--{name}", **_argparse_kw(option, option.attr, help_text, option.default))


def add_cli_options(parser, role: str) -> None:
    for option in for_role(role):
        flags = {"k": ["-k"], "verbose": ["-v", "--verbose"]}.get(option.name, [f"--{option.name}"])
        default = DEFAULT_REPORT_DIR if option.name == "report-dir" else option.default
        parser.add_argument(*flags, **_argparse_kw(option, option.attr, option.help_for(role), default))


def pytest_argv(args, role: str) -> list[str]:
    """The plugin flags for what the user gave on the command line (defaults are left to the plugin)."""
    out: list[str] = []
    for option in for_role(role):
        if option.cli_only:
            continue
        value = getattr(args, option.attr)
        flag, _ = option.plugin(role if option.scoped else None)
        if option.flag:
            out += [flag] if value else []
        elif option.many:
            for item in value:
                out += [flag, str(item)]
        elif value is not None and value != option.default:
            out += [flag, str(value)]
    return out


def fixture_replay_conflict(adapter: str | None, fixtures: str | None, live_targets: list[str], profiles) -> str | None:
    """Why the options naming the server role's replay of the working group's fixtures (server/wg_fixtures.py)
    do not go together, or None (`live_targets`: the live target options also given, by flag)."""
    if not adapter and not fixtures:
        return None
    if not adapter or not fixtures:
        return ("an adapter (module:factory) and the working group's fixtures directory go together: "
                "give both, or neither")
    if live_targets:
        return f"the fixture replay's adapter is a target of its own; drop {', '.join(live_targets)}"
    if profiles and "interceptors" not in profiles:
        return f"the working group's fixtures judge the interceptors profile only, not {', '.join(sorted(profiles))}"
    return None


def conflicts(values: dict[str, Any], role: str) -> str | None:
    """What the given options contradict or lack, as one sentence, or None (`values`: by attribute name)."""
    def given(name: str) -> bool:
        value = values.get(BY_NAME[name].attr)
        return bool(value) and value != BY_NAME[name].default

    targets = [o.name for o in for_role(role) if o.target and given(o.name)]
    if role == "server" and (given("adapter") or given("wg-fixtures")):
        return fixture_replay_conflict(values.get("adapter"), values.get("wg_fixtures"),
                                       [f"--{t}" for t in targets if t != "adapter"], values.get("profile") or [])
    if role == "server":
        if len(targets) != 1:
            return ("give one target: --command, --url or --docker-image" if not targets
                    else f"give one target, not {' and '.join('--' + t for t in targets)}")
        docker_only = [n for n in ("docker-port", "docker-command", "no-network") if given(n)]
        if docker_only and not given("docker-image"):
            return f"--{docker_only[0]} goes with --docker-image"
        if given("docker-command") and not given("docker-port"):
            return "--docker-command goes with --docker-port (over stdio the container runs the image's command)"
        if given("docker-port") and given("no-network"):
            return "--docker-port needs the container's network; drop --no-network"
        http = given("url") or given("docker-port")
    elif role == "host":
        if not given("command"):
            return "give the host's --command"
        claims, profiles = values.get("claim") or (), values.get("profile") or ()
        if "interceptor-overrides" in claims and "interceptors" not in profiles:
            return "--claim interceptor-overrides goes with --profile interceptors (a host claims that profile by name)"
        http = False
    else:
        if not targets:
            return "gateway needs --command, --adapter, or both"
        if given("url") and not given("command"):
            return "--url goes with --command (where the started gateway serves)"
        http = given("url")
    for name in ("header", "ca-bundle"):
        if role in BY_NAME[name].roles and given(name) and not http:
            return f"--{name} goes with an HTTP target (--url{' or --docker-port' if role == 'server' else ''})"
    return None
