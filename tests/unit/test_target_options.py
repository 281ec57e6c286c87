"""Every option reaches what it names: a target option row (`spec=True` in conformance/options.py) fills the
TargetSpec field of its name in every role that takes it, and that field changes the connection the spec
builds; every other option is read by the run. An option parsed and then dropped fails here."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import certifi
import pytest

from conformance import options
from conformance.core.roles import ROLES
from conformance.targets import TargetSpec
from conformance.targets import docker as docker_target

PACKAGE = Path(options.__file__).resolve().parent
SPEC_ROWS = [(role, option) for role in ROLES for option in options.for_role(role) if option.spec]
NOT_OPTIONS = {"kind", "max_message_bytes"}  # spec fields no option fills: what the kind of target and the suite set
# Texts a row's checker may accept: the first it accepts (and that differs from the row's default) is the sample.
CANDIDATES = ("7", "12.5", "sample-cmd --flag", "http://127.0.0.1:9/mcp", "SAMPLE=value", "X-Sample: value",
              certifi.where(), "sample")


def sample_text(option: options.Option) -> str:
    """A text the user could give for `option`, other than its default."""
    for text in (*(str(c) for c in option.choices or ()), *CANDIDATES):
        try:
            value = option.parse(text) if option.parse else text
        except ValueError:
            continue
        if value != option.default and (not option.choices or value in option.choices):
            return text
    raise AssertionError(f"no sample for --{option.name}: add a text its checker accepts to CANDIDATES")


def run_with(role: str, option: options.Option) -> options.Run:
    """A run of `role` with `option` given (a target of each kind beside it, so every field has a use)."""
    if option.flag:
        value: object = True
    else:
        text = sample_text(option)
        value = option.parse(text) if option.parse else text
        value = [value] if option.many else value
    return options.Run(ROLES[role], {option.attr: value})


def test_every_target_option_row_has_a_field_of_its_name_and_every_field_a_row():
    fields = {f.name for f in dataclasses.fields(TargetSpec)} - NOT_OPTIONS
    rows = {option.attr for _, option in SPEC_ROWS}
    assert rows - fields == set(), "a row marked spec with no TargetSpec field of its name"
    assert fields - rows == set(), "a TargetSpec field no row marked spec fills: mark the option's row spec=True"


@pytest.mark.parametrize("role,option", SPEC_ROWS, ids=[f"{r}-{o.name}" for r, o in SPEC_ROWS])
def test_from_run_carries_each_target_option_to_its_field(role, option):
    run = run_with(role, option)
    spec = TargetSpec.from_run(run)
    given = run.value(option.attr)
    assert getattr(spec, option.attr) == given, f"--{option.name} does not reach TargetSpec.{option.attr} ({role})"
    default = {f.name: f for f in dataclasses.fields(TargetSpec)}[option.attr]
    unset = default.default_factory() if default.default_factory is not dataclasses.MISSING else default.default
    assert given != unset, f"the sample for --{option.name} is the field's default: the test would prove nothing"


@pytest.mark.parametrize("role", ROLES)
def test_the_role_timeout_is_the_spec_timeout_when_none_is_given(role):
    assert TargetSpec.from_run(options.Run(ROLES[role], {})).timeout == ROLES[role].default_timeout


class _Published:
    """Stands in for the Docker container a docker_port spec publishes: what it is given is what it reads."""

    started: list[tuple] = []

    def __init__(self, image, port, *, command=None, env=None):
        self.started.append((image, port, command, env))
        self.url = "http://127.0.0.1:1/mcp"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None


PLAIN = (str, int, float, bool, dict, list, tuple, type(None))


def reading(spec: TargetSpec, monkeypatch) -> dict:
    """What the connection (and, for a Docker target serving HTTP, its container) holds of `spec`: the plain
    attributes, which is what it reads when it connects."""
    monkeypatch.setattr(docker_target, "PublishedContainer", _Published)
    _Published.started.clear()
    with spec.published() as reached:
        conn = reached.connect()
    return {"container": list(_Published.started), "class": type(conn),
            **{k: v for k, v in vars(conn).items() if isinstance(v, PLAIN)}}


@pytest.mark.parametrize("role,option", SPEC_ROWS, ids=[f"{r}-{o.name}" for r, o in SPEC_ROWS])
def test_each_target_option_changes_the_connection(role, option, monkeypatch):
    value = getattr(TargetSpec.from_run(run_with(role, option)), option.attr)
    targets = {"stdio": TargetSpec("stdio", command="started-cmd"),
               "http": TargetSpec("http", url="http://127.0.0.1:2/mcp"),
               "docker": TargetSpec("docker", docker_image="image"),
               "docker serving HTTP": TargetSpec("docker", docker_image="image", docker_port=8000)}
    read_by = [kind for kind, base in targets.items()
               if reading(base, monkeypatch) != reading(dataclasses.replace(base, **{option.attr: value}), monkeypatch)]
    assert read_by, f"--{option.name} reaches TargetSpec.{option.attr}, but no connection reads it"


def test_every_other_option_is_read_by_the_run():
    """An option that is no target option is read where the run is: by its attribute (`run.NAME`), its plugin
    destination (`mcpx_NAME`) or, for the command line's own, `args.NAME`."""
    sources = "\n".join(path.read_text(encoding="utf-8") for path in PACKAGE.rglob("*.py")
                        if path.name != "options.py")
    unread = []
    for option in options.OPTIONS:
        if option.spec:
            continue
        dests = {option.plugin(role if option.scoped else None)[1] for role in option.roles}
        words = [rf"\brun\.{option.attr}\b", rf"getattr\(run, \"{option.attr}\"", rf"\bargs\.{option.attr}\b",
                 *(rf"\"{dest}\"" for dest in dests)]
        if not any(re.search(word, sources) for word in words):
            unread.append(option.name)
    assert unread == [], f"options parsed and never read: {unread}"
