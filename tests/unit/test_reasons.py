"""Where a verdict's reason is built: a prefix is said once, however the reason was put together."""

from __future__ import annotations

import pytest

from conformance.core.model import Check, NotObserved, Violation, once
from conformance.core.runner import evaluate
from conformance.server.recording import Recording


def test_a_not_observed_built_from_another_says_the_prefix_once():
    # conformance/host/interceptors.py builds one from another's text ("{exc}; in that turn ...")
    inner = NotObserved("turn 1: v-slow-open not invoked")
    outer = NotObserved(f"{inner}; in that turn v-slow-open stalled")
    assert outer.reason == "not observed: turn 1: v-slow-open not invoked; in that turn v-slow-open stalled"


@pytest.mark.parametrize("said, meant", [
    ("not observed: not observed: x", "not observed: x"),
    ("follows from a/b/c: not observed: not observed: x", "follows from a/b/c: not observed: x"),
    ("tools/list: tools/list: no result", "tools/list: no result"),
    ("code 1: code 2", "code 1: code 2"),  # different words: nothing doubled
    ("a call: a call the validator rejects", "a call: a call the validator rejects"),  # not a whole prefix twice
])
def test_once_says_each_doubled_prefix_once(said, meant):
    assert once(said) == meant


def test_every_reason_the_runner_reports_goes_through_once():
    rec = Recording("augmentation", {})
    rec.claimed = True

    def judge(rec):
        raise Violation("not observed: not observed: the host printed nothing")

    check = Check("augmentation/server/reason-built-twice", "does", "must", judge)
    assert evaluate(check, rec).reason == "not observed: the host printed nothing"
