"""Small pure readers every role's judges share: one rule each, so a verdict never hangs on which copy ran.

- `canonical_sorted` / `short`: JSON equality inside the suite (sorted keys, compact) and short display.
- `canonical_rfc8785`: RFC 8785 (JCS) canonical JSON, the form the interceptors working group's fixtures state
  their expectations in. The two differ (number and string serialisation), so each has its own name: a
  comparison with a precomputed string from a fixture needs the RFC's form, any other equality the sorted one.
- `text_of`, `error_text`, `failed`: what a tools/call (or any call) answered.
- `match_name` / `find_named`: a name as offered, or a prefixed form of it. Gateways and hosts may prefix
  what they aggregate (`fixture__conformance_echo`, `server.tool`); the match is the exact name, else a
  name ending in it right after a non-alphanumeric separator.
- `meta_carriage`: a profile's tool field found under a tool's `_meta` instead of where the proposal puts it.
- `experimental_carriage`: a profile's capability advertised under `capabilities.experimental` instead.
- `near_misses`: a profile's tool field found where an implementer plausibly put it (NEAR_MISSES), not where
  the proposal does: named, never counted, like `_meta` carriage.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable


def canonical_sorted(value: Any) -> str:
    """JSON for equality within the suite: sorted keys, no insignificant whitespace (not RFC 8785)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_rfc8785(value: Any) -> str:
    """RFC 8785 (JSON Canonicalization Scheme) text of `value`, by the `rfc8785` package."""
    import rfc8785  # imported here: only the working group's fixture replay compares with this form

    return rfc8785.dumps(value).decode("utf-8")


def short(value: Any, limit: int = 300) -> str:
    text = canonical_sorted(value)
    return text if len(text) <= limit else text[:limit] + "…"


def text_of(result: Any) -> str:
    """All text of a CallToolResult's text blocks, joined."""
    if not isinstance(result, dict):
        return ""
    return "\n".join(b.get("text", "") for b in result.get("content") or () if isinstance(b, dict)
                     and b.get("type") == "text" and isinstance(b.get("text"), str))


def failed(ex) -> bool:
    """A call fails as a JSON-RPC error or as a result with isError: true."""
    return ex.has_error or (ex.has_result and isinstance(ex.result, dict) and ex.result.get("isError") is True)


def error_text(ex) -> str:
    """Everything an error says, whether it came as a JSON-RPC error or an isError result (a secret of the
    user's it echoes redacted now: judges quote it clipped, and a clip could halve the secret)."""
    from . import redact

    if ex.has_error:
        return redact.text(canonical_sorted(ex.error))
    return redact.text(text_of(ex.result) + canonical_sorted((ex.result or {}).get("structuredContent")))


def match_name(names, wanted: str) -> str | None:
    """The name that is `wanted`, else one ending in it right after a separator (a prefix someone added)."""
    names = [n for n in names if isinstance(n, str)]
    if wanted in names:
        return wanted
    for name in names:
        if len(name) > len(wanted) and name.endswith(wanted) and not name[-len(wanted) - 1].isalnum():
            return name
    return None


def find_named(items, name: str) -> dict | None:
    """The item (a dict with "name") called `name`, or a prefixed form of it; see `match_name`."""
    items = [i for i in items or () if isinstance(i, dict) and isinstance(i.get("name"), str)]
    found = match_name([i["name"] for i in items], name)
    return next((i for i in items if i["name"] == found), None) if found else None


# Where each profile's tool field belongs, and the last segments of a `_meta` key that would carry it instead.
_TOOL_FIELDS = {
    "preprocessor-tools": (lambda tool: "preprocessor" in tool, ("preprocessor",)),
    "execution-requirements": (lambda tool: isinstance(tool.get("execution"), dict)
                               and "requirements" in tool["execution"], ("requirements", "execution")),
}


def meta_carriage(tools: Any, profile: str) -> list[str]:
    """`tool: _meta key` for each tool that carries the profile's field only under `_meta`.

    The proposals put `preprocessor` and `execution.requirements` on the Tool itself, and none of them
    defines a `_meta` key, so carriage under `_meta` is not conformance (docs/check-model.md, "Fields
    under _meta"); the suite names it so an implementer on an SDK that drops unknown fields sees why.
    """
    if profile not in _TOOL_FIELDS:
        return []
    in_place, segments = _TOOL_FIELDS[profile]
    found = []
    for tool in tools or ():
        if not isinstance(tool, dict) or not isinstance(tool.get("_meta"), dict) or in_place(tool):
            continue
        found += [f"{tool.get('name')}: _meta[{key!r}]" for key in tool["_meta"]
                  if str(key).replace("/", ".").rsplit(".", 1)[-1] in segments]
    return found


def is_string_flag(value: Any) -> bool:
    """A boolean spelled as a string ("true", "False"): what a client testing for the JSON boolean never sees."""
    return isinstance(value, str) and value.strip().lower() in ("true", "false")


def string_flag(tool: dict, field: str = "preprocessor") -> str | None:
    """The near miss a boolean spelled as a string is, said the way NEAR_MISSES rows are, or None."""
    value = tool.get(field)
    if not isinstance(value, str) or not is_string_flag(value):
        return None
    return (f"{tool.get('name')}: found the string {json.dumps(value)} at {field}{NEAR_MISS_SAYS}the JSON boolean "
            f"{value.strip().lower()} there")


def _at(tool: dict, *path: str) -> Any:
    """The value at `path` in `tool`, or None."""
    value: Any = tool
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value


@dataclass(frozen=True)
class NearMiss:
    """A profile's tool field where an implementer plausibly put it and the proposal does not."""

    found: str  # what was found, as the reason says it ("at requirements")
    proposal: str  # what the proposal says instead ("it at execution.requirements")
    seen: Callable[[dict], bool]  # whether a tool (one without the field in place) shows it


# The near misses the suite names, per profile. Each leaves the profile unclaimed with this reason; a tool that
# also carries the field where the proposal puts it is judged as usual. Add a row to name another.
NEAR_MISSES: dict[str, tuple[NearMiss, ...]] = {
    # "preprocessor": "true", a string where the proposal has the boolean, is in the proposal's place: it claims
    # the profile and fails flag-is-boolean, whose reason names it (STRING_FLAG); it is not a row here.
    "preprocessor-tools": (
        NearMiss("at annotations.preprocessor", "it at the tool's top level (preprocessor)",
                 lambda tool: _at(tool, "annotations", "preprocessor") is not None),
    ),
    "execution-requirements": (
        NearMiss("at requirements (the tool's top level)", "it at execution.requirements",
                 lambda tool: "requirements" in tool),
        NearMiss("at annotations.requirements", "it at execution.requirements",
                 lambda tool: _at(tool, "annotations", "requirements") is not None),
        NearMiss("at annotations.execution.requirements", "it at execution.requirements (not under annotations)",
                 lambda tool: _at(tool, "annotations", "execution", "requirements") is not None),
    ),
}


NEAR_MISS_SAYS = "; the proposal puts "  # how a near miss's sentence reads (reports find them by it)
TOOLS_NAMED = 3  # tools a grouped near-miss sentence names before "and N more"


def grouped_near_misses(entries) -> list[str]:
    """The entries of `near_misses` (one per tool) as one sentence per kind: `found ... on tool_a, tool_b and 6
    more tools; the proposal puts ...`."""
    tools: dict[str, list[str]] = {}
    for entry in entries:
        if NEAR_MISS_SAYS not in entry or ": found " not in entry:
            continue
        tool, _, kind = entry.partition(": found ")
        tools.setdefault(kind, []).append(tool)
    out = []
    for kind, names in tools.items():
        found, _, proposal = kind.partition(NEAR_MISS_SAYS)
        more = len(names) - TOOLS_NAMED
        on = ", ".join(names[:TOOLS_NAMED]) + (f" and {more} more tool(s)" if more > 0 else "")
        out.append(f"found {found} on {on}{NEAR_MISS_SAYS}{proposal}")
    return out


def near_misses(tools: Any, profile: str) -> list[str]:
    """`tool: found ...; the proposal puts ...` for each near miss (NEAR_MISSES) a tool without the field in
    place shows."""
    in_place = _TOOL_FIELDS[profile][0] if profile in _TOOL_FIELDS else None
    found = []
    for tool in tools or ():
        if not isinstance(tool, dict) or in_place is None or in_place(tool):
            continue
        found += [f"{tool.get('name')}: found {miss.found}{NEAR_MISS_SAYS}{miss.proposal}"
                  for miss in NEAR_MISSES.get(profile, ()) if miss.seen(tool)]
    return found


# Where each profile's capability belongs (capabilities.<key>; the interceptors under capabilities.extensions).
_CAPABILITY_KEYS = {
    "context-middleware": "contextMiddleware",
    "augmentation": "augmentation",
    "interceptors": "io.modelcontextprotocol/interceptors",
}


def experimental_carriage(capabilities: Any, profile: str) -> list[str]:
    """`capabilities.experimental.<key>` when the profile's capability is advertised only there.

    The Python SDKs (and FastMCP) offer `experimental_capabilities` as the one way to advertise a capability
    they do not know, but the proposals put the capability at the top level (the interceptors under
    `extensions`), so a client reading where the proposal says sees nothing; named, never counted.
    """
    key = _CAPABILITY_KEYS.get(profile)
    if key is None or not isinstance(capabilities, dict):
        return []
    experimental = capabilities.get("experimental")
    if not isinstance(experimental, dict) or key not in experimental:
        return []
    return [f"capabilities.experimental[{key!r}]"]


def uppercased(value):
    """Every string of a JSON value upper-cased (what the uppercase fixtures are expected to do)."""
    if isinstance(value, str):
        return value.upper()
    if isinstance(value, dict):
        return {k: uppercased(v) for k, v in value.items()}
    if isinstance(value, list):
        return [uppercased(v) for v in value]
    return value
