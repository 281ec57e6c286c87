"""JSON Schemas (2020-12) of the extension shapes and the report format, and validation with them.

The schemas live at the top of the repository (schemas/) for people to read and
link to, and ship inside the package as `conformance.schemas`; files refer to
each other by relative `$ref`, resolved through one `referencing` registry.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from pathlib import Path

from jsonschema import Draft202012Validator, FormatChecker
from referencing import Registry, Resource

BASE = "https://mcp-ext-conformance.dev/schemas/"


def _files() -> dict[str, str]:
    try:
        base = resources.files("conformance.schemas")
        found = {p.name: p.read_text(encoding="utf-8") for p in base.iterdir() if p.name.endswith(".json")}
        if found:
            return found
    except (ModuleNotFoundError, FileNotFoundError, TypeError):
        pass
    base = Path(__file__).resolve().parent.parent / "schemas"
    return {p.name: p.read_text(encoding="utf-8") for p in base.glob("*.json")}


@lru_cache(maxsize=1)
def schemas() -> dict[str, dict]:
    return {name[:-5]: json.loads(text) for name, text in _files().items()}


@lru_cache(maxsize=1)
def registry() -> Registry:
    return Registry().with_resources((doc["$id"], Resource.from_contents(doc)) for doc in schemas().values())


@lru_cache(maxsize=None)
def validator(name: str) -> Draft202012Validator:
    return Draft202012Validator(schemas()[name], registry=registry(), format_checker=FormatChecker())


def errors(name: str, instance) -> list[str]:
    """Readable messages, "at /path: problem", most specific first; empty when valid."""
    out = []
    for error in sorted(validator(name).iter_errors(instance), key=lambda e: (list(e.absolute_path), e.message)):
        leaves = _leaves(error)
        for leaf in leaves:
            where = "/" + "/".join(str(p) for p in leaf.absolute_path)
            out.append(f"at {where}: {leaf.message}")
    return list(dict.fromkeys(out))


def _leaves(error):
    """The deepest errors under an if/then or allOf wrapper, which say what is actually wrong."""
    if not error.context:
        return [error]
    out = []
    for sub in error.context:
        out.extend(_leaves(sub))
    return out
