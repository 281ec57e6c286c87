"""Handles: the names `[TYPE_N]`, and the handle <-> value map of a call or a session (see the package
docstring, "Handles and the session map" and "Escaping")."""

from __future__ import annotations

import itertools
import re

from .spans import _FIRST, _SECOND

# -- handles ------------------------------------------------------------------------------------
HANDLE_NAME = r"[A-Z][A-Z0-9]*_[0-9]+"
HANDLE_NAME_RE = re.compile(rf"^{HANDLE_NAME}$")
HANDLE_RE = re.compile(rf"\[({HANDLE_NAME})\]")


# -- the handle map ----------------------------------------------------------------------------------
class HandleMap:
    """Handle <-> value, numbered per type; seeded from a previous call's map to continue a session."""

    def __init__(self, existing: dict | None = None):
        self.values: dict[str, str] = {}
        self._by_kind: dict[str, dict[str, str]] = {}  # kind -> value -> handle
        self._last: dict[str, int] = {}
        for handle, value in validate_map(existing or {}, "redactions").items():
            kind, _, number = handle.rpartition("_")
            self.values[handle] = value
            self._by_kind.setdefault(kind, {}).setdefault(value, handle)
            self._last[kind] = max(self._last.get(kind, 0), int(number))

    def handle_for(self, kind: str, value: str) -> str:
        return self.handles_of(kind, [value])[value]

    def handles_of(self, kind: str, values: list[str]) -> dict[str, str]:
        """The value -> handle map of `kind`, with a handle for each of `values` (new ones numbered in bulk, in
        order, from the highest of the kind, so no new name can be one the map has): where a dense text has
        thousands of new values, one range of numbers and a few passes in C."""
        known = self._by_kind.setdefault(kind, {})
        new = list(dict.fromkeys(itertools.filterfalse(known.__contains__, values)))
        if new and kind == "NUMBER" and len(self._by_kind) > 1:
            # Dense mode's NUMBER is a shape, not a type: a value the session already has a handle for (an earlier
            # call's PHONE_1) keeps it.
            others = {value: handle for k, handles in self._by_kind.items() if k != kind
                      for value, handle in handles.items()}
            known.update((value, others[value]) for value in new if value in others)
            new = list(itertools.filterfalse(known.__contains__, new))
        if new:
            last = self._last.get(kind, 0)
            self._last[kind] = last + len(new)
            names = list(map(f"{kind}_{{}}".format, range(last + 1, last + 1 + len(new))))
            known.update(zip(new, names))
            self.values.update(zip(names, new))
        return known

    def handles_for(self, keys: list[tuple[str, str]]) -> list[str]:
        """handle_for of each of the `keys` (kind, value), numbered in the order the keys come, kind by kind as
        they appear."""
        if not keys:
            return []
        kinds = list(dict.fromkeys(map(_FIRST, keys)))
        if len(kinds) == 1:
            return list(map(self.handles_of(kinds[0], list(map(_SECOND, keys))).__getitem__, map(_SECOND, keys)))
        before = len(self.values)
        maps = {kind: self.handles_of(kind, [value for k, value in keys if k == kind]) for kind in kinds}
        names = [maps[kind][value] for kind, value in keys]
        if len(self.values) > before:  # the new handles in the order their values came, across kinds
            added = set(itertools.islice(self.values, before, None))
            for name in dict.fromkeys(filter(added.__contains__, names)):
                self.values[name] = self.values.pop(name)
        return names


def validate_map(mapping, name: str) -> dict[str, str]:
    if not isinstance(mapping, dict):
        raise ValueError(f"{name} must be an object mapping handles like EMAIL_1 to the original values")
    for handle, value in mapping.items():
        if not isinstance(handle, str) or not HANDLE_NAME_RE.match(handle):
            raise ValueError(f"{name}: {handle!r} is not a handle name like EMAIL_1 (TYPE_N, upper case, no brackets)")
        if not isinstance(value, str):
            raise ValueError(f"{name}: the value of {handle} must be a string")
    return mapping
