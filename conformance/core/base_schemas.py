"""The base MCP shapes the wire check holds results and notifications to: JSON Schemas of the installed SDK's types.

What "valid MCP" means for a base message is what the `mcp` SDK's protocol types say (the SDK an implementation
most likely uses). The suite does not validate with those types themselves: importing them costs a third of a
second per run, and pydantic's lax mode would pass what the wire must not carry (`"isError": "yes"`, a
snake_case key for a camelCase field). It validates with the JSON Schema the SDK's types generate (by alias, in
validation mode), which says the same about shapes and nothing about coercion.

The schemas of a known SDK release ship in `schemas/sdk-base/<distribution>-<version>.json`, written by

    python -m conformance.core.base_schemas --write

under that release; for any other release they are derived from the installed types when first needed (the
same schemas, a third of a second later). `tests/unit/test_base_schemas.py` re-derives the shipped file for
the installed release, so a shipped file cannot drift from what it claims to be.
"""

from __future__ import annotations

import hashlib
import json
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

# Where schemas_loader looks, named here because schemas_loader imports jsonschema and this module must not:
# the packaged copy (a link to schemas/ in a checkout), then schemas/ itself.
DIRECTORIES = (Path(__file__).resolve().parents[1] / "schemas" / "sdk-base",
               Path(__file__).resolve().parents[2] / "schemas" / "sdk-base")

# The SDK types whose JSON Schemas are kept: what a server sends (notifications, the results the suite asks
# for) and what a host sends (requests, notifications).
TYPES = ("ServerNotification", "InitializeResult", "ListToolsResult", "CallToolResult", "EmptyResult",
         "DiscoverResult", "ClientRequest", "ClientNotification")

# Annotation keywords dropped from the derived schemas: they do not validate, and they are the SDK's prose.
_ANNOTATIONS = {"title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly"}
_SCHEMA_MAPS = {"properties", "$defs", "definitions", "patternProperties", "dependentSchemas"}
_SCHEMA_LISTS = {"anyOf", "allOf", "oneOf", "prefixItems"}
# A URI needs a scheme (what the SDK's URL type requires first); a pattern, because format is only an annotation.
URI_PATTERN = r"^[A-Za-z][A-Za-z0-9+.\-]*:"


def sdk_release() -> str:
    """The distribution and version holding the installed SDK's types: "mcp-types-2.3.0", or "mcp-1.30.0" (1.x)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"mcp-types-{version('mcp-types')}"
    except PackageNotFoundError:  # mcp 1.x keeps its types inside the `mcp` distribution
        return f"mcp-{version('mcp')}"


def derive() -> dict[str, Any]:
    """The JSON Schemas of TYPES, generated from the installed SDK's types (imports them: slow)."""
    try:
        import mcp_types as sdk_types
    except ImportError:  # mcp 1.x
        import mcp.types as sdk_types  # type: ignore[no-redef]  # the same name for whichever module is installed
    from pydantic import TypeAdapter

    out = {}
    for name in TYPES:
        if hasattr(sdk_types, name):  # DiscoverResult exists from the 2026-07-28 types on
            out[name] = _tidy(TypeAdapter(getattr(sdk_types, name)).json_schema(by_alias=True, mode="validation"))
    return {"sdkRelease": sdk_release(), "types": out}


def _tidy(schema: Any) -> Any:
    """Drop annotations, and give every `format: uri` a scheme pattern, throughout a schema."""
    if isinstance(schema, list):
        return [_tidy(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _ANNOTATIONS:
            continue
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: _tidy(sub) for name, sub in value.items()}
        elif key in _SCHEMA_LISTS or isinstance(value, dict):
            out[key] = _tidy(value)
        else:
            out[key] = value
    if out.get("format") == "uri" and "pattern" not in out:
        out["pattern"] = URI_PATTERN
    return out


def _shipped(release: str) -> dict[str, Any] | None:
    for directory in DIRECTORIES:
        if (directory / f"{release}.json").is_file():
            return json.loads((directory / f"{release}.json").read_text(encoding="utf-8"))
    return None


@lru_cache(maxsize=1)
def schemas() -> dict[str, Any]:
    """{type name: JSON Schema} for the installed SDK: shipped when the release is known, else derived."""
    return (_shipped(sdk_release()) or derive())["types"]


def known(type_name: str) -> bool:
    return type_name in schemas()


@lru_cache(maxsize=None)
def _validator(type_name: str):
    from jsonschema import Draft202012Validator

    return Draft202012Validator(schemas()[type_name])


@lru_cache(maxsize=None)
def _alternatives(type_name: str) -> tuple[str, dict]:
    """For a union of messages told apart by `method` (notifications, client requests): that key and a
    validator per method, so a message is held to its own shape only (nine times less work for a
    notification). ("", {}) for any other type."""
    from jsonschema import Draft202012Validator

    schema = schemas()[type_name]
    members = schema.get("anyOf") or schema.get("oneOf") or []
    defs = schema.get("$defs", {})
    by_tag: dict[str, Any] = {}
    for member in members:
        ref = member.get("$ref", "") if isinstance(member, dict) else ""
        const = defs.get(ref.rpartition("/")[2], {}).get("properties", {}).get("method", {}).get("const")
        if not ref.startswith("#/$defs/") or not isinstance(const, str) or const in by_tag:
            return "", {}
        by_tag[const] = Draft202012Validator({"$defs": defs, "$ref": ref})
    return ("method", by_tag) if by_tag else ("", {})


# Floods repeat one message thousands of times, and every check of a profile reads its one tools/list answer:
# what was said about a value is remembered, by its repr (which tells JSON values apart exactly), or past
# _MEMO_KEY_LIMIT characters by that repr's SHA-256, so a long value costs a key of 64 characters.
_MEMO: dict[tuple[str, str], list[str]] = {}
_MEMO_LIMIT, _MEMO_KEY_LIMIT = 4096, 2048


def problems(type_name: str, instance: Any) -> list[str]:
    """What is most wrong with `instance` as the SDK's `type_name` ("at <pointer>: <problem>"); [] when valid.

    One problem: jsonschema's best match, which inside a union follows the alternative the value's own
    `method` or `type` selects, so a bad log level is reported as such, not as every other notification."""
    text = repr(instance)
    if len(text) > _MEMO_KEY_LIMIT:
        text = "sha256:" + hashlib.sha256(text.encode("utf-8", "backslashreplace")).hexdigest()
    key = (type_name, text)
    found = _MEMO.get(key)
    if found is None:
        found = _problems(type_name, instance)
        if len(_MEMO) >= _MEMO_LIMIT:
            _MEMO.clear()
        _MEMO[key] = found
    return list(found)


def _problems(type_name: str, instance: Any) -> list[str]:
    from jsonschema.exceptions import best_match

    from .schemas_loader import pointer

    tag, by_tag = _alternatives(type_name)
    checker = by_tag.get(instance.get(tag)) if tag and isinstance(instance, dict) else None
    error = best_match((checker or _validator(type_name)).iter_errors(instance))
    if error is None:
        return []
    error = _selected_alternative(error)
    types = _root_types(error)
    if types:
        message = f"{error.instance!r} is not of type {' or '.join(types)}"
    elif error.validator in ("anyOf", "oneOf"):
        tag = next((f"{key} {error.instance[key]!r}" for key in ("method", "type")
                    if isinstance(error.instance, dict) and key in error.instance), "the value")
        message = f"{tag} fits none of the {len(error.validator_value)} shapes the SDK allows here"
    else:
        message = error.message
    return [f"at {pointer(error.absolute_path)}: {message if len(message) <= 200 else message[:197] + '...'}"]


def _selected_alternative(error):
    """Inside a union, the best error of the one alternative whose `type` or `method` the value carries."""
    from jsonschema.exceptions import best_match

    while error.validator in ("anyOf", "oneOf") and error.context:
        selected = [subs for subs in _by_alternative(error)
                    if not any(sub.validator == "const" and list(sub.relative_path) in (["type"], ["method"])
                               for sub in subs)]
        if len(selected) != 1:
            break
        error = best_match(selected[0])
    return error


def _by_alternative(error) -> list[list]:
    """A union's errors, grouped by the alternative they came from."""
    groups: dict[Any, list] = {}
    for sub in error.context:
        groups.setdefault(sub.relative_schema_path[0], []).append(sub)
    return list(groups.values())


def _root_types(error) -> list[str]:
    """The types a union allows, when the value is none of them (`5` for an optional object)."""
    if error.validator not in ("anyOf", "oneOf") or not error.context:
        return []
    types: list[str] = []
    for subs in _by_alternative(error):
        mismatch = [sub for sub in subs if sub.validator == "type" and not sub.relative_path]
        if not mismatch:
            return []
        value = mismatch[0].validator_value
        types.extend(repr(t) for t in (value if isinstance(value, list) else [value]))
    return list(dict.fromkeys(types))


def warm() -> None:
    """Load the schemas and build the validators (run on a background thread during recording)."""
    for type_name in schemas():
        _validator(type_name)
        _alternatives(type_name)


def write(directory: Path = DIRECTORIES[-1]) -> Path:
    derived = derive()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{derived['sdkRelease']}.json"
    path.write_text(json.dumps(derived, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv != ["--write"]:
        print("usage: python -m conformance.core.base_schemas --write   (writes schemas/sdk-base/<release>.json "
              "for the installed SDK)", file=sys.stderr)
        return 2
    print(write())
    return 0


if __name__ == "__main__":
    sys.exit(main())
