"""Every interceptors server check can fail: each mutant of the fake interceptor server fails exactly its checks.

tests/servers/fake_interceptor_server.py is an SDK-free implementation of the `interceptors` fixture
contract. Unbroken it passes every interceptors check; with `--break X` it breaks one rule and exactly the
checks listed with X in its MUTANTS stop passing. The reference server passes them all.

The server role's other kind of target, the working group's fixtures replayed through an adapter, has checks of
its own (conformance/server/wg_fixtures.py): the adapters of tests/servers/broken_wg_adapters.py fail exactly
one of them each, naming exactly the fixtures that pin the rule they break; the reference adapter passes both.
"""

import shlex
import sys
from pathlib import Path

import pytest

from conformance.core.model import REGISTRY
from conformance.core.roles import SERVER
from conformance.core.runner import evaluate
from conformance.server import record as server_record
from conformance.targets import TargetSpec
from tests.helpers import not_ok, reference_command
from tests.servers import broken_wg_adapters
from tests.servers.fake_interceptor_server import MUTANTS, UNCLAIMED_MUTANTS, VARIANTS

P = "interceptors/server/"
# Mutants whose reason must name what they do: (text every listed check's reason contains, those checks).
# Known variants (conformance/server/interceptors_variants.py) and the diagnoses of issue 24.
NAMED = {
    "nested-validation": ("results nested under `validation`: the SEP's ValidationResult is flat",
                          set(MUTANTS["nested-validation"][0])),
    "phase-both": ('`phase: "both"` on the wire: the SEP\'s hook phase is "request" or "response"',
                   set(MUTANTS["phase-both"][0])),
    "enforce-mode": ('`mode: "enforce"`, the working group\'s older vocabulary: the SEP\'s modes are "active"',
                     set(MUTANTS["enforce-mode"][0])),
    "singular-list": ("the method `interceptors/list` is not served; `interceptor/list` is",
                      set(MUTANTS["singular-list"][0])),
    "plural-invoke": ("the method `interceptor/invoke` is not served; `interceptors/invoke` is",
                      set(MUTANTS["plural-invoke"][0])),
    "hidden-capability": ("the interceptors methods are served without the capability",
                          set(MUTANTS["hidden-capability"][0])),
    "real-bad-result": ("(a ValidationResult): at /valid: 'yes' is not of type 'boolean'", {P + "invoke-result-valid"}),
    "message-without-severity": ("(a ValidationResult): at /messages/0: 'severity' is a required property",
                                 {P + "invoke-result-valid"}),
    "validator-folds": ("4 strings contain conformance:invalid but 1 error message(s) came back",
                        {P + "validator-reports-violation"}),
    "config-unknown-keys": ("were accepted: validator bad config unknown key, config real secret-scanner unknown key",
                            {P + "invalid-config-rejected"}),
    "config-required-unchecked": ("config real tenant-gate missing required", {P + "invalid-config-rejected"}),
    "timeout-ignored": ("ran to its end and answered a result", {P + "timeout-cancels"}),
    "timeout-own-limit": ("timeoutMs 300 was not applied", {P + "timeout-cancels"}),
    "timeout-code": ("the timeout was answered with code -32603", {P + "timeout-error-code"}),
    "custom-wildcard-regex": ("1 hook pattern(s) are not glob-style: tools/(call|list)", {P + "custom-wildcards-glob"}),
    "custom-event-bare": ("1 custom event(s) are not namespace/operation: usageRecord", {P + "custom-events-namespaced"}),
    # The server as an invoker: the reason tells what the echo shows (an upper-cased echo cannot tell a validation
    # run after the mutation from none at all, so the reason names both).
    "invoker-mutates-first": ("either the validation ran after the mutation", {P + "invoker-rejects-invalid-call"}),
    "invoker-tool-error": ("refused as a tool result with isError: true", {P + "invoker-rejects-invalid-call"}),
    "invoker-skips-mutations": ("conformance_uppercase's mutation did not reach it", {P + "invoker-applies-mutations"}),
    "invoker-fail-open": ("the chain did not halt at conformance_failing", {P + "invoker-mutation-failure-error"}),
}
UNCLAIMED_NAMED = {
    "unadvertised-served": ("the interceptors methods are served without the capability",
                            {P + "unadvertised-method-rejected"}),
}

FAKE = Path(__file__).resolve().parent / "servers" / "fake_interceptor_server.py"
CHECKS = sorted(c for c in SERVER.check_ids() if c.startswith("interceptors/server/"))
WG_CHECKS = sorted(c for c in SERVER.check_ids("wg-fixtures") if c.startswith("interceptors/server/"))
WG_FIXTURES = Path(__file__).resolve().parent / "data" / "interceptor-fixtures"
UNCLAIMED_ONLY = {"interceptors/server/unadvertised-method-rejected"}


def command(*flags: str) -> str:
    return " ".join(shlex.quote(part) for part in (sys.executable, str(FAKE), *flags))


def verdicts(cmd: str, claimed: bool = False, env: dict | None = None) -> dict:
    recordings = server_record.record_sync(TargetSpec("stdio", command=cmd, env=env or {}), ["interceptors"],
                                    claimed={"interceptors"} if claimed else set(), run_timeout=60.0)
    return {cid: evaluate(REGISTRY[cid], recordings["interceptors"]) for cid in CHECKS}


def test_every_check_has_a_mutant():
    covered = set().union(*(checks for checks, _ in {**MUTANTS, **UNCLAIMED_MUTANTS}.values()))
    assert covered == set(CHECKS)


@pytest.mark.parametrize("cmd", [command(), reference_command()], ids=["fake", "reference"])
def test_unbroken_passes_every_check(cmd, reference_server_env, doubles_env):
    got = verdicts(cmd, env=reference_server_env if cmd == reference_command() else doubles_env)
    assert not_ok(got) == {}
    assert {cid for cid, r in got.items() if r.outcome == "skip"} == UNCLAIMED_ONLY


@pytest.mark.parametrize("mutant", sorted(MUTANTS))
def test_mutant_fails_exactly_its_checks(mutant, doubles_env):
    expected, _ = MUTANTS[mutant]
    # A server that hides its capability is only caught when the user claims the profile.
    got = verdicts(command("--break", mutant), claimed=mutant == "hidden-capability", env=doubles_env)
    assert set(not_ok(got)) == expected, not_ok(got)
    for cid in expected:
        result = got[cid]
        assert result.reason and "internal error" not in result.reason
        assert result.outcome == ("warn" if result.level == "SHOULD" or result.outcome == "warn" else "fail")
    if mutant in NAMED:
        text, named_checks = NAMED[mutant]
        assert {cid for cid in named_checks if text not in (got[cid].reason or "")} == set(), \
            {cid: got[cid].reason for cid in named_checks}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_allowed_variant_passes_every_check(variant, doubles_env):
    """The reverse of a mutant: another reading the SEP allows, so every check passes (the ones its source
    leaves room for included: each actually ran)."""
    touched, _ = VARIANTS[variant]
    got = verdicts(command("--variant", variant), env=doubles_env)
    assert not_ok(got) == {}
    assert {cid: got[cid].outcome for cid in touched} == {cid: "pass" for cid in touched}


@pytest.mark.parametrize("mutant", sorted(UNCLAIMED_MUTANTS))
def test_unclaimed_mutant_fails_exactly_its_checks(mutant):
    expected, _ = UNCLAIMED_MUTANTS[mutant]
    got = verdicts(command("--plain", "--break", mutant))
    assert set(not_ok(got)) == expected, not_ok(got)
    if mutant in UNCLAIMED_NAMED:
        text, named_checks = UNCLAIMED_NAMED[mutant]
        assert all(text in (got[cid].reason or "") for cid in named_checks), {c: got[c].reason for c in named_checks}


def test_plain_server_claims_nothing():
    got = verdicts(command("--plain"))
    assert not_ok(got) == {}
    ran = {cid for cid, r in got.items() if r.outcome != "skip"}
    assert ran == UNCLAIMED_ONLY


# -- the working group's fixtures, replayed through an adapter ---------------------------------------------------
def wg_verdicts(factory) -> dict:
    from conformance.server import wg_fixtures

    rec = wg_fixtures.record(factory, WG_FIXTURES, adapter=getattr(factory, "__name__", "adapter"),
                             timeout=SERVER.default_timeout)
    return {cid: evaluate(REGISTRY[cid], rec) for cid in WG_CHECKS}


def test_every_replay_check_has_a_mutant():
    assert WG_CHECKS and set().union(*(fails for fails, _ in broken_wg_adapters.MUTANTS.values())) == set(WG_CHECKS)


def test_reference_adapter_passes_every_replay_check():
    from reference_servers.interceptor_chain import wg_adapter

    got = wg_verdicts(wg_adapter)
    assert {cid: r.outcome for cid, r in got.items()} == {cid: "pass" for cid in WG_CHECKS}, not_ok(got)


@pytest.mark.parametrize("mutant", sorted(broken_wg_adapters.MUTANTS))
def test_broken_adapter_fails_exactly_its_check_naming_its_fixtures(mutant):
    expected, _ = broken_wg_adapters.MUTANTS[mutant]
    got = wg_verdicts(broken_wg_adapters.ADAPTERS[mutant])
    assert set(not_ok(got)) == expected, not_ok(got)
    assert all(r.outcome == "pass" for cid, r in got.items() if cid not in expected)
    for cid in expected:
        result = got[cid]
        assert result.outcome == "fail" and "internal error" not in result.reason
        assert {f["fixture"] for f in result.actual} == broken_wg_adapters.FIXTURES[mutant]
        assert all(fixture in result.reason for fixture in broken_wg_adapters.FIXTURES[mutant])
