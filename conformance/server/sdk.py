"""The SDK as the cause: what each measured SDK release drops on the wire, named in the reasons it explains.

A server written the natural way on an SDK that drops unknown fields fails, or goes unclaimed, for a cause
that is not in its own code: "`execution.requirements` is missing from tools/list" says what, and the SDK
release says why. The releases and what each drops come from the field-survival probe (ecosystem/probe.py,
`nox -s matrix matrix_fastmcp matrix_typescript matrix_typescript_v2`), shipped as sdk-drops.json beside
this module by `python -m ecosystem.matrix survival`. The user names the SDK with `--sdk NAME@VERSION`
(a server's `serverInfo` names the server, not the SDK it is built on); without it, a reason lists the
measured releases that drop the field.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

DATA = Path(__file__).with_name("sdk-drops.json")
# What each profile needs on the wire, as sdk-drops.json names it, and the list method that shows whether the
# profile's methods are served at all.
PROFILE_FIELD = {"preprocessor-tools": "preprocessor", "execution-requirements": "execution.requirements",
                 "context-middleware": "capabilities.contextMiddleware", "augmentation": "capabilities.augmentation",
                 "interceptors": "capabilities.extensions"}
LIST_METHOD = {"context-middleware": "middleware/list", "augmentation": "augmentation/list",
               "interceptors": "interceptors/list"}
# Names a user may give for each SDK in --sdk, besides the probe's own.
ALIASES = {"mcp": "python", "python-mcp": "python", "@modelcontextprotocol/sdk": "typescript", "ts": "typescript",
           "@modelcontextprotocol/server": "typescript-v2", "ts-v2": "typescript-v2"}


@functools.lru_cache(maxsize=1)
def releases() -> tuple[dict, ...]:
    return tuple(json.loads(DATA.read_text(encoding="utf-8"))) if DATA.exists() else ()


def _key(version: str) -> tuple:
    return tuple(int(p) if p.isdigit() else 0 for p in version.split("."))


def names() -> list[str]:
    return sorted({r["sdk"] for r in releases()} | set(ALIASES))


def parse(text: str) -> str:
    """`NAME[@VERSION]` for --sdk, checked against the measured SDKs; returned as given."""
    name, _, version = text.rpartition("@") if text.count("@") > text.startswith("@") else (text, "", "")
    sdk = ALIASES.get(name, name)
    if sdk not in {r["sdk"] for r in releases()}:
        raise ValueError(f"{text!r}: not a measured SDK; give one of {', '.join(names())}, with @VERSION if known")
    if version and not all(part.isdigit() for part in version.split(".")):
        raise ValueError(f"{text!r}: the version is not dotted numbers")
    return text


def resolve(text: str | None) -> tuple[dict | None, str]:
    """The measured release that stands for `--sdk` (its exact version, else the newest measured one of the same
    major, else the newest of the SDK), and how it was matched ("" when exact)."""
    if not text:
        return None, ""
    name, _, version = text.rpartition("@") if text.count("@") > text.startswith("@") else (text, "", "")
    sdk = ALIASES.get(name, name)
    rows = sorted((r for r in releases() if r["sdk"] == sdk), key=lambda r: _key(r["version"]))
    if not rows:
        return None, ""
    exact = [r for r in rows if r["version"] == version]
    if exact:
        return exact[0], ""
    same_major = [r for r in rows if version and r["version"].split(".")[0] == version.split(".")[0]]
    row = (same_major or rows)[-1]
    return row, f" (as measured on {row['version']}; {version or 'no version'} was given)"


def cause(field: str, sdk: str | None) -> str | None:
    """Why `field` (a key of sdk-drops.json) may be missing, when an SDK explains it: the given SDK's release, or
    the measured releases that drop it. None when nothing measured drops it."""
    row, matched = resolve(sdk)
    if row is not None:
        how = row["drops"].get(field)
        return None if how is None else f"{row['package']} {row['version']}{matched} {how}; see {row['example']}"
    dropping: dict[str, list[str]] = {}
    for r in releases():
        if field in r["drops"]:
            dropping.setdefault(r["package"], []).append(r["version"])
    if not dropping:
        return None
    listed = "; ".join(f"{package} {', '.join(sorted(v, key=_key))}" for package, v in dropping.items())
    return f"measured SDK releases that drop it: {listed} (name yours with --sdk); see examples/"


def missing_on_wire(rec) -> tuple[str, str] | None:
    """(field, what is missing) when the recording lacks what the profile needs on the wire: the tool field on
    every listed tool, the capability, or every answer to the profile's list method (-32601)."""
    profile = rec.profile
    if profile in ("preprocessor-tools", "execution-requirements"):
        if rec.tools is None:
            return None
        if profile == "preprocessor-tools":
            if any(isinstance(t, dict) and "preprocessor" in t for t in rec.tools):
                return None
        elif any(isinstance(t, dict) and isinstance(t.get("execution"), dict) and "requirements" in t["execution"]
                 for t in rec.tools):
            return None
        return PROFILE_FIELD[profile], f"{PROFILE_FIELD[profile]} is on no tool of tools/list"
    listed = rec.exchanges.get(LIST_METHOD[profile])
    error = listed.error if listed is not None else None
    if isinstance(error, dict) and error.get("code") == -32601:
        return "methods", f"{LIST_METHOD[profile]} is answered -32601 (method not found)"
    capabilities = rec.capabilities or {}
    if profile == "interceptors":
        extensions = capabilities.get("extensions")
        if not (isinstance(extensions, dict) and "io.modelcontextprotocol/interceptors" in extensions):
            return PROFILE_FIELD[profile], "the interceptors extension is missing from capabilities.extensions"
    elif PROFILE_FIELD[profile].split(".", 1)[1] not in capabilities:
        return PROFILE_FIELD[profile], f"{PROFILE_FIELD[profile]} is missing from the initialize result"
    return None


def explain(rec, reason: str | None, sdk: str | None) -> str | None:
    """`reason` with the SDK named as the cause, where what the profile needs is missing on the wire and a
    measured SDK release drops exactly that; else `reason` unchanged."""
    init = rec.exchanges.get("initialize")
    if init is None or not init.has_result:  # nothing was seen on the wire to name a cause from
        return reason
    missing = missing_on_wire(rec)
    if missing is None:
        return reason
    why = cause(missing[0], sdk)
    if why is None or (reason and why in reason):
        return reason
    return f"{reason} [{missing[1]}: {why}]" if reason else f"{missing[1]}: {why}"
