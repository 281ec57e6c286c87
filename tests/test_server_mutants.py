"""Every server-role check can fail: each mutant of the fake server fails exactly its own check.

The fake server (tests/servers/fake_server.py) is an independent, SDK-free
implementation of the fixture contract. Unbroken, it passes every check; with
`--break X` it breaks one rule and check X, and no other, must stop passing.
"""

import pytest

from conformance.targets import TargetSpec
from tests.helpers import SERVER_CHECKS, fake_command, not_ok, server_verdicts
from tests.servers.fake_server import MUTANTS, VARIANT_SKIPS, VARIANTS

# interceptors checks have their own fake server and mutants: tests/test_interceptor_mutants.py
OWN_FAKE = "interceptors/"


def test_every_server_check_has_a_mutant():
    assert sorted(set().union(*(fails for fails, _ in MUTANTS.values()))) == [
        c for c in SERVER_CHECKS if not c.startswith(OWN_FAKE)]


def test_unbroken_fake_passes_every_check(doubles_env):
    verdicts = server_verdicts(TargetSpec("stdio", env=doubles_env, command=fake_command()))
    assert not_ok(verdicts) == {}
    skipped = {cid for cid, r in verdicts.items() if r.outcome == "skip" and not cid.startswith(OWN_FAKE)}
    # A server that advertises everything cannot be asked about unadvertised methods.
    assert skipped == {"context-middleware/server/unadvertised-method-rejected",
                       "augmentation/server/unadvertised-method-rejected"}


@pytest.mark.parametrize("mutant", sorted(MUTANTS))
def test_mutant_fails_exactly_its_check(mutant, doubles_env):
    fails, _ = MUTANTS[mutant]
    # A server that hides its capability is only caught when the user claims the profile.
    claimed = {mutant.split("/")[0]} if mutant.endswith("/capability-advertised") else set()
    # Isolated, so a bad notification (which no request owns) is judged in its own profile only.
    verdicts = server_verdicts(TargetSpec("stdio", env=doubles_env, command=fake_command("--break", mutant)), claimed=claimed,
                               isolate=True)
    assert set(not_ok(verdicts)) == fails, not_ok(verdicts)
    for cid in fails:
        result = verdicts[cid]
        assert result.reason and "internal error" not in result.reason
        assert result.outcome == ("warn" if result.level == "SHOULD" else "fail")


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_allowed_variant_passes_every_check(variant, doubles_env):
    """The reverse of a mutant: a reading the sources allow (lists over pages, optional members), so every
    check passes, the ones the reading touches included (each actually ran)."""
    touched, _ = VARIANTS[variant]
    verdicts = server_verdicts(TargetSpec("stdio", env=doubles_env, command=fake_command("--variant", variant)))
    assert not_ok(verdicts) == {}
    if variant in VARIANT_SKIPS:
        assert all(verdicts[cid].outcome == "skip" and VARIANT_SKIPS[variant] in verdicts[cid].reason for cid in touched)
        return
    assert {cid: verdicts[cid].outcome for cid in touched} == {cid: "pass" for cid in touched}


def test_a_list_cut_at_the_page_cap_is_named(monkeypatch, doubles_env):
    """The suite reads a list to its end; a guard against an endless cursor stays, and reaching it is named
    in the reason of every fixture it hid, never a silent cut."""
    from conformance.client import session

    monkeypatch.setattr(session, "MAX_PAGES", 3)
    verdicts = server_verdicts(TargetSpec("stdio", env=doubles_env, command=fake_command("--variant", "paged-lists")),
                               claimed={"execution-requirements"})
    reason = verdicts["execution-requirements/server/all-requirements-enforced"].reason or ""
    assert "fixture missing" in reason and "reads at most 3 pages of a list" in reason, reason


def test_plain_server_claims_nothing(doubles_env):
    verdicts = server_verdicts(TargetSpec("stdio", env=doubles_env, command=fake_command("--plain")))
    assert not_ok(verdicts) == {}
    ran = {cid for cid, r in verdicts.items() if r.outcome != "skip"}
    assert ran == {"context-middleware/server/unadvertised-method-rejected",
                   "augmentation/server/unadvertised-method-rejected",
                   "interceptors/server/unadvertised-method-rejected"}
    assert all("not claimed" in r.reason for cid, r in verdicts.items() if cid not in ran)


def test_fields_under_meta_leave_the_profile_unclaimed_and_are_named(doubles_env):
    # Not a mutant: carriage under _meta is outside the proposals, so it is named, never counted as conformance.
    from conformance.server.record import record_sync

    recordings = record_sync(TargetSpec("stdio", env=doubles_env, command=fake_command("--meta-carriage")),
                             ["preprocessor-tools", "execution-requirements"], claimed=set(), run_timeout=30)
    for profile, key in (("preprocessor-tools", "com.example/preprocessor"),
                         ("execution-requirements", "com.example/requirements")):
        rec = recordings[profile]
        assert not rec.claimed
        assert "only under _meta" in rec.claim_reason and key in rec.claim_reason, rec.claim_reason


@pytest.mark.parametrize("mutant", ["execution-requirements/unmet-requirement-fails-call",
                                    "context-middleware/identity-preserves-every-content-type",
                                    "preprocessor-tools/wire-messages-valid"])
def test_one_connection_judges_like_isolated_connections(mutant, doubles_env):
    # The default records every profile on one connection; verdicts must match the isolated run's, except that
    # a bad notification, which no request owns, shows in every profile's transcript.
    spec = TargetSpec("stdio", env=doubles_env, command=fake_command("--break", mutant))
    shared = server_verdicts(spec)
    isolated = server_verdicts(spec, isolate=True)
    if mutant.endswith("wire-messages-valid"):
        assert set(not_ok(isolated)) <= set(not_ok(shared))
        assert all(cid.endswith("/wire-messages-valid") for cid in set(not_ok(shared)) - set(not_ok(isolated)))
    else:
        assert {c: r.outcome for c, r in shared.items()} == {c: r.outcome for c, r in isolated.items()}
