"""A span found (Found) and how overlapping spans are resolved: the longest wins, then the one that starts
first, then the type order TYPES."""

from __future__ import annotations

import bisect
import operator
from functools import partial
from typing import NamedTuple

TYPES = ("LITERAL", "EMAIL", "CARD", "SSN", "PHONE", "IPV4")  # also the tie-break order for overlaps
PRIORITY = {kind: i for i, kind in enumerate(TYPES)}


class Found(NamedTuple):  # a tuple, so sorting compares in C
    start: int
    end: int
    kind: str


# _found((start, end, kind)) is Found(start, end, kind) built in C: a NamedTuple's own __new__ is a Python function,
# and a megabyte of text has thousands of spans.
_found = partial(tuple.__new__, Found)
_START, _END, _KIND = operator.itemgetter(0), operator.itemgetter(1), operator.itemgetter(2)
_FIRST, _SECOND = _START, _END  # of a (kind, value) key


def _merge_overlaps(spans: list[Found]) -> list[Found]:
    """One span over a whole group of overlapping spans, of the kind _resolve_overlaps would have kept first;
    a group with handle-shaped text in it is resolved as usual (its brackets are never part of a candidate)."""
    if any(f.kind == "LITERAL" for f in spans):
        return _resolve_overlaps(spans)
    first = min(spans, key=lambda f: (f.start - f.end, f.start, PRIORITY[f.kind]))
    return [_found((min(map(_START, spans)), max(map(_END, spans)), first.kind))]


def _resolve_overlaps(spans: list[Found]) -> list[Found]:
    """The spans kept, in text order: handle-shaped text first, then the longest, then the one that starts first,
    then by type (PRIORITY); a span overlapping one kept is dropped."""
    literals = [f for f in spans if f.kind == "LITERAL"]
    candidates = sorted((f for f in spans if f.kind != "LITERAL"),
                        key=lambda f: (f.start - f.end, f.start, PRIORITY[f.kind]))
    starts = [f.start for f in literals]  # chosen spans never overlap
    ends = [f.end for f in literals]
    chosen = list(literals)
    for f in candidates:
        i = bisect.bisect_right(starts, f.start)
        if i > 0 and ends[i - 1] > f.start:  # the chosen span starting at or before f reaches into it
            continue
        if i < len(starts) and starts[i] < f.end:  # the next chosen span starts inside f
            continue
        starts.insert(i, f.start)
        ends.insert(i, f.end)
        chosen.append(f)
    chosen.sort()
    return chosen
