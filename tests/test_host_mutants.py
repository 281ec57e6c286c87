"""Each broken host fails exactly the checks its entry in `MUTANTS` declares; the unbroken fake host passes.

Every run claims the optional features too (--claim interceptor-overrides), so a mutant that breaks a rule the
overrides scenario also exercises declares that check as well.

A mutant's run records only the scenarios its declared checks cite (record.scenarios_read, derived from the
judges), and every check those scenarios decide is judged: of those, exactly the declared ones fail. The unbroken
host's runs record every scenario and hold scenarios_read to what each verdict cited.

Where two rules overlap a mutant declares more than one check, with the reason (tests/hosts/fake_host.py).
"""

from __future__ import annotations

import pytest

from conformance.host.record import FEATURES, scenarios_for_checks, scenarios_read
from tests.helpers import HOST_CHECKS, fake_host, host_verdicts
from tests.hosts.fake_host import ER, MUTANTS, PP, VARIANTS

NOT_OK = ("fail", "warn", "stale")


def test_every_mutant_is_declared_and_every_check_has_a_mutant():
    covered = set().union(*(fails for fails, _ in MUTANTS.values()))
    # known-unsatisfiable-filtered and preprocessor-input report information: they fail only when nothing
    # could be observed (see test_host_zoo), so no rule-breaking mutant exists for them.
    assert covered | {ER + "known-unsatisfiable-filtered", PP + "preprocessor-input"} == set(HOST_CHECKS)


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_unbroken_fake_host_passes_every_check(stream, doubles_env):
    verdicts = host_verdicts(fake_host(*(["--stream"] if stream else [])), timeout=15, features=FEATURES,
                             env=doubles_env)
    assert {c: f"{r.outcome}: {r.reason}" for c, r in verdicts.items() if r.outcome in NOT_OK} == {}
    assert set(verdicts) == set(HOST_CHECKS)
    cited = {c: tuple(e["label"].removeprefix("scenario ") for e in r.exchanges) for c, r in verdicts.items()}
    assert cited == scenarios_read()  # what a mutant's run records is what its checks' verdicts read


# A mutant whose broken turn ends only at the turn timeout: the timeout sized to what it proves. Ignoring a 300 ms
# timeoutMs override is seen at 3 s (10 times the override) as well as at 15 s.
TURN_TIMEOUT = {"ignores-timeout-override": 3.0}


@pytest.mark.parametrize("mutant", sorted(MUTANTS))
def test_mutant_fails_exactly_its_checks(mutant, doubles_env):
    recorded = scenarios_for_checks(MUTANTS[mutant][0])
    decided = {c for c, read in scenarios_read().items() if set(read) <= recorded}  # every check they decide, the declared ones too
    profiles = sorted({c.split("/")[0] for c in decided})
    verdicts = host_verdicts(fake_host("--break", mutant), profiles=profiles, claimed=profiles,
                             timeout=TURN_TIMEOUT.get(mutant, 15), features=FEATURES, only=recorded, env=doubles_env)
    failing = {c for c, r in verdicts.items() if c in decided and r.outcome in NOT_OK}
    assert failing == MUTANTS[mutant][0], {c: verdicts[c].reason for c in failing ^ MUTANTS[mutant][0]}
    for cid in failing:
        assert "internal error" not in (verdicts[cid].reason or "")


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_allowed_variant_passes_every_check(variant, doubles_env):
    """The reverse of a mutant: a reading the sources leave open (where the context goes, preprocessors or
    validators run at once), so every check of the profile passes, the ones the reading touches included."""
    touched, _ = VARIANTS[variant]
    profile = next(iter(touched)).split("/")[0]
    verdicts = host_verdicts(fake_host("--variant", variant), profiles=[profile], claimed={profile}, timeout=15,
                             features=FEATURES, env=doubles_env)
    assert {c: f"{r.outcome}: {r.reason}" for c, r in verdicts.items() if r.outcome in NOT_OK} == {}
    # "info" is how a check of MAY rows passes.
    assert {c: verdicts[c].outcome for c in touched if verdicts[c].outcome not in ("pass", "info")} == {}
