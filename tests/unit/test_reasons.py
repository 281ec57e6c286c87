"""Where a verdict's reason is built: a prefix is said once, however the reason was put together."""

from __future__ import annotations

import pytest

from conformance.core.model import Check, NotObserved, Violation, once
from conformance.core.runner import evaluate
from conformance.server.recording import ServerRecording


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
    rec = ServerRecording("augmentation", {})
    rec.claimed = True

    def judge(rec):
        raise Violation("not observed: not observed: the host printed nothing")

    check = Check("augmentation/server/reason-built-twice", "does", "must", judge)
    assert evaluate(check, rec).reason == "not observed: the host printed nothing"


# -- near misses: each row of the table is seen, and not where the field is in place ------------------------

NEAR = {  # (profile, a tool showing the near miss, what the sentence says)
    "preprocessor-annotations": ("preprocessor-tools", {"name": "t", "annotations": {"preprocessor": True}},
                                 "at annotations.preprocessor"),
    "requirements-top-level": ("execution-requirements", {"name": "t", "requirements": ["env:x"]},
                               "at requirements (the tool's top level)"),
    "requirements-annotations": ("execution-requirements", {"name": "t", "annotations": {"requirements": ["x"]}},
                                 "at annotations.requirements"),
    "execution-under-annotations": ("execution-requirements",
                                    {"name": "t", "annotations": {"execution": {"requirements": ["x"]}}},
                                    "at annotations.execution.requirements"),
}


def test_every_near_miss_row_has_a_case():
    from conformance.core.judging import NEAR_MISSES

    assert sum(len(rows) for rows in NEAR_MISSES.values()) == len(NEAR)


@pytest.mark.parametrize("case", NEAR)
def test_a_near_miss_is_named_where_the_field_is_missing_and_not_where_it_is_in_place(case):
    from conformance.core.judging import grouped_near_misses, near_misses

    profile, tool, says = NEAR[case]
    found = near_misses([tool], profile)
    assert len(found) == 1 and says in found[0] and "; the proposal puts " in found[0], found
    assert grouped_near_misses(found) == [found[0].removeprefix("t: ").replace("; the", " on t; the", 1)]
    in_place = {**tool, "preprocessor": True} if profile == "preprocessor-tools" else \
        {**tool, "execution": {"requirements": ["env:x"]}}
    assert near_misses([in_place], profile) == []


@pytest.mark.parametrize("value, said", [("true", "the JSON boolean true"), (" False", "the JSON boolean false"),
                                         ("yes", None), (True, None)])
def test_a_boolean_spelled_as_a_string_is_named_as_the_near_miss_it_is(value, said):
    from conformance.core.judging import string_flag

    found = string_flag({"name": "t", "preprocessor": value})
    assert (found is None) if said is None else (said in found and found.startswith("t: found the string"))
