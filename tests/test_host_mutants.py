"""Each broken host fails its own check, and only the checks declared for it; the unbroken fake host passes.

Where two rules overlap, a mutant fails more than one check by necessity, and the
set is declared here with the reason: a host that drops tools with unknown
requirements also drops the near-miss tools (their strings are unknown too) and
the tool whose error the model should read; a host that skips request-phase
middleware on a turn lets that turn's PII through.
"""

from __future__ import annotations

import pytest

from tests.host_helpers import HOST_CHECKS, fake_host, host_verdicts
from tests.hosts.fake_host import MUTANTS

NOT_OK = ("fail", "warn", "stale")
ER, CM, PP = "execution-requirements/host/", "context-middleware/host/", "preprocessor-tools/host/"
EXPECTED = {
    "offers-preprocessors": {PP + "never-offered-to-model"},
    "runs-model-preprocessor-call": {PP + "model-cannot-call-preprocessor"},
    "drops-tools-of-preprocessor-servers": {PP + "ordinary-tools-offered"},
    "preprocessors-skip-last-turn": {PP + "runs-every-turn"},
    "reruns-preprocessors-after-tool-calls": {PP + "runs-before-model-and-tools"},
    "drops-preprocessor-output": {PP + "output-reaches-model"},
    "persists-preprocessor-output": {PP + "output-not-persisted"},
    "shuffles-preprocessors": {PP + "all-run-in-stable-order"},
    "drops-tools-with-unknown-requirements": {ER + "unknown-requirement-offered", ER + "partly-unknown-offered",
                                              ER + "no-inferred-equivalence",
                                              ER + "requirement-strings-not-rewritten"},
    "filters-when-any-known-false": {ER + "partly-unknown-offered"},
    "filters-satisfied": {ER + "satisfiable-offered"},
    "case-folds-requirements": {ER + "no-inferred-equivalence"},
    "normalizes-requirements": {ER + "no-inferred-equivalence"},
    "rewrites-tool-errors": {ER + "requirement-strings-not-rewritten"},
    "request-middleware-first-turn-only": {CM + "request-middleware-runs-every-turn",
                                           CM + "model-sees-middleware-output"},
    "sends-raw-message": {CM + "model-sees-middleware-output"},
    "skips-response-middleware": {CM + "response-middleware-applied"},
    "forwards-metadata": {CM + "metadata-not-forwarded"},
    "offers-middleware-as-tools": {CM + "middleware-not-offered-as-tools"},
    "definition-order": {CM + "priority-order"},
    "default-priority-zero": {CM + "priority-order"},
    "reverses-ties": {CM + "equal-priority-definition-order"},
    "unchained": {CM + "chained-input"},
    "fails-open": {CM + "failing-middleware-blocks-turn"},
    "ignores-replace": {"augmentation/host/replace-hint-applied"},
    "prepend-as-append": {"augmentation/host/prepend-hint-applied"},
    "append-as-prepend": {"augmentation/host/append-hint-applied"},
    **{f"invalid-message-{p}": {f"{p}/host/wire-messages-valid"}
       for p in ("preprocessor-tools", "execution-requirements", "context-middleware", "augmentation")},
}


def test_every_mutant_is_declared_and_every_check_has_a_mutant():
    assert set(EXPECTED) == set(MUTANTS)
    covered = set().union(*EXPECTED.values())
    # known-unsatisfiable-filtered and preprocessor-input report information: they fail only when nothing
    # could be observed (see test_host_zoo), so no rule-breaking mutant exists for them.
    assert covered | {ER + "known-unsatisfiable-filtered", PP + "preprocessor-input"} == set(HOST_CHECKS)


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_unbroken_fake_host_passes_every_check(stream):
    verdicts = host_verdicts(fake_host(*(["--stream"] if stream else [])), turn_timeout=15)
    assert {c: f"{r.outcome}: {r.reason}" for c, r in verdicts.items() if r.outcome in NOT_OK} == {}
    assert set(verdicts) == set(HOST_CHECKS)


@pytest.mark.parametrize("mutant", sorted(MUTANTS))
def test_mutant_fails_exactly_its_checks(mutant):
    verdicts = host_verdicts(fake_host("--break", mutant), turn_timeout=15)
    failing = {c for c, r in verdicts.items() if r.outcome in NOT_OK}
    assert failing == EXPECTED[mutant], {c: verdicts[c].reason for c in failing ^ EXPECTED[mutant]}
    for cid in failing:
        assert "internal error" not in (verdicts[cid].reason or "")
