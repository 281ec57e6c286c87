"""The suite's JSON Schemas (draft 2020-12): loading, cross-file references, validation.

The schemas live at the top of the repository (``schemas/``) for people to read and
link to, and ship inside the installed package as ``conformance/schemas/`` (in a
checkout that path is a link to them, and schemas/ is read directly where links are not
checked out). They refer to each other by relative ``$ref`` against their
``$id`` (``https://mcp-ext-conformance.dev/schemas/<file>``); one
``referencing.Registry`` holding every file resolves those references offline.

    validator("middleware-list-result").is_valid(result)
    errors("middleware-list-result", result)
    # ["at /middleware/0/inputSchema/type: 'string' is not 'object'"]
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Iterator

from jsonschema import Draft202012Validator, FormatChecker
from jsonschema.exceptions import ValidationError
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

PACKAGE = "conformance.schemas"
SOURCE_DIR = Path(__file__).resolve().parents[2] / "schemas"  # a checkout: schemas/ beside conformance/
INSTALLED_DIR = Path(__file__).resolve().parents[1] / "schemas"  # an installed wheel: conformance/schemas/


def _schema_texts() -> dict[str, str]:
    """{file name: text} of every schemas/*.json: from the installed package, else from the source tree."""
    try:
        root = resources.files(PACKAGE)
        found = {entry.name: entry.read_text(encoding="utf-8")
                 for entry in root.iterdir() if entry.name.endswith(".json") and entry.is_file()}
    except (ModuleNotFoundError, FileNotFoundError, NotADirectoryError, TypeError):
        found = {}
    if found:
        return found
    # Not importable as a package (running from a checkout, or an interpreter whose importlib.resources
    # cannot open a namespace package): read the directory itself.
    for directory in (INSTALLED_DIR, SOURCE_DIR):
        found = {path.name: path.read_text(encoding="utf-8") for path in sorted(directory.glob("*.json"))}
        if found:
            return found
    return {}


@lru_cache(maxsize=1)
def schemas() -> dict[str, dict]:
    """Every schema, keyed by its file name without ".json" (e.g. "middleware-list-result")."""
    out = {}
    for file_name, text in sorted(_schema_texts().items()):
        out[file_name[: -len(".json")]] = json.loads(text)
    if not out:
        raise FileNotFoundError(f"no JSON Schemas found in package {PACKAGE!r} or in {SOURCE_DIR}")
    return out


@lru_cache(maxsize=1)
def registry() -> Registry:
    """A registry of every schema under its $id, so relative cross-file $refs resolve."""
    return Registry().with_resources(
        (doc["$id"], Resource.from_contents(doc, default_specification=DRAFT202012)) for doc in schemas().values()
    ).crawl()


@lru_cache(maxsize=None)
def validator(name: str) -> Draft202012Validator:
    """A 2020-12 validator for schemas/<name>.json, with the registry and format checking."""
    try:
        schema = schemas()[name]
    except KeyError:
        raise KeyError(f"no schema {name!r}; known: {', '.join(sorted(schemas()))}") from None
    return Draft202012Validator(schema, registry=registry(), format_checker=FormatChecker())


def errors(name: str, instance: Any) -> list[str]:
    """Human-readable violations of schemas/<name>.json, "at <JSON pointer>: <problem>"; [] when valid.

    Failures inside anyOf/oneOf are reported as the alternatives' own errors, which
    say what is actually wrong; alternatives that differ only in a required member
    are folded into one message. The document root is shown as "(root)".
    """
    found: list[tuple[ValidationError, str]] = []
    for error in validator(name).iter_errors(instance):
        found.extend(_explain(error))
    found.sort(key=lambda item: (_sort_key(item[0].absolute_path), item[1]))
    messages = [f"at {pointer(error.absolute_path)}: {message}" for error, message in found]
    return list(dict.fromkeys(messages))


def pointer(path) -> str:
    """RFC 6901 JSON pointer of an instance path ("(root)" for the document itself)."""
    parts = [str(p).replace("~", "~0").replace("/", "~1") for p in path]
    return "/" + "/".join(parts) if parts else "(root)"


def _sort_key(path) -> list[tuple[int, Any]]:
    return [(0, p) if isinstance(p, int) else (1, str(p)) for p in path]


def _explain(error: ValidationError) -> Iterator[tuple[ValidationError, str]]:
    """The deepest errors under an anyOf/oneOf, with a readable message each."""
    if not error.context:
        yield error, _message(error)
        return
    subs = list(error.context)
    missing = [sub for sub in subs if sub.validator == "required" and sub.absolute_path == error.absolute_path]
    if len(missing) == len(subs) and len(subs) > 1:
        names = list(dict.fromkeys(_missing_name(sub) for sub in missing))
        yield error, f"one of {', '.join(repr(n) for n in names)} is required"
        return
    for sub in subs:
        yield from _explain(sub)


def _missing_name(error: ValidationError) -> str:
    required = error.validator_value if isinstance(error.validator_value, list) else []
    absent = [name for name in required if isinstance(error.instance, dict) and name not in error.instance]
    return absent[0] if absent else error.message


def _message(error: ValidationError) -> str:
    if error.validator == "const":
        return f"{error.instance!r} is not {error.validator_value!r}"
    if error.validator == "pattern" and isinstance(error.schema, dict) and error.schema.get("format"):
        # a pattern standing in for a format check: name the format, not the regular expression
        return f"{error.instance!r} is not a valid {error.schema['format']}"
    return error.message
