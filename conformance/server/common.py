"""What several server-role profiles share: shape judges, the probes of a context-transforming method, and the
registrations of the checks every profile has (the content sent is client/content.py's, the wire judge
client/judges.py's).

Judges here are pure functions of a `Recording`; profile modules bind them to
their own check ids.
"""

from __future__ import annotations

from typing import Any

from ..client.content import TEXT_BLOCK, blocks
from ..client.judges import judge_wire
from ..client.recording import Recording
from ..core.model import NotObserved, Violation, check


def require_result(rec: Recording, label: str) -> Any:
    """The result of an exchange, or the Violation that says why there is none."""
    ex = rec.cite(label)
    if ex.failure:
        raise NotObserved(f"{label}: {ex.failure}")
    if not ex.has_result:
        raise Violation(f"{label} was answered with an error", expected="a result", actual=ex.response)
    return ex.result


def require_error(rec: Recording, label: str, what: str) -> dict:
    """The JSON-RPC error an exchange must have produced."""
    ex = rec.cite(label)
    if ex.failure:
        raise Violation(f"{what}: {ex.failure}", expected="a JSON-RPC error response", actual=ex.failure)
    if ex.has_result:
        raise Violation(f"{what} was answered with a result", expected="a JSON-RPC error response",
                        actual=ex.response)
    return ex.error


def require_errors(rec: Recording, cases: list[tuple[str, str]]) -> str:
    """Each (label, what) exchange must be a JSON-RPC error; says which codes came back."""
    codes = [require_error(rec, label, what).get("code") for label, what in cases]
    return f"rejected with code(s) {codes}"


def context_probes(session, rec: Recording, *, method: str, kind: str, verb: str, unknown: str, fallback: str,
                   not_array: Any, real_context: list[dict], max_real: int) -> list:
    """The requests a context-transforming method (middleware/invoke, augmentation/augment) gets beyond its
    fixtures, labelled `<verb> ...`: an unknown name, no context, a context that is not an array, and each
    real item listed (at most `max_real`)."""
    def call(label: str, name: Any, **params):
        return session.send(label, method, {"name": name, "arguments": {}, **params})

    any_name = next((i.get("name") for i in rec.listing.get(kind) or () if isinstance(i, dict)), fallback)
    probes = [call(f"{verb} unknown", unknown, context=blocks(TEXT_BLOCK)),
              call(f"{verb} without context", any_name),
              call(f"{verb} context not array", any_name, context=not_array)]
    return probes + [call(f"{verb} real {item['name']}", item["name"], context=blocks(*real_context))
                     for item in real_items(rec, kind)[:max_real]]


def judge_list_result(rec: Recording, method: str, kind: str, schema: str, shape: str, noun: str) -> str:
    """A list method's result (`rec.listing[kind]`, all pages): valid against `schema`, names unique."""
    result = require_result(rec, method)
    judge_shapes(shape_violations(schema, result, f"{method} result"), shape)
    names = [item.get("name") for item in rec.listing.get(kind) or () if isinstance(item, dict)]
    dupes = sorted({n for n in names if names.count(n) > 1}, key=str)
    if dupes:
        raise Violation(f"{noun} names are not unique", expected="unique names", actual=dupes)
    return f"{len(names)} {noun} listed"


def real_items(rec: Recording, kind: str) -> list[dict]:
    """Listed middleware or augmentations that are not fixtures and need no arguments (black-box probes)."""
    out = []
    for item in rec.listing.get(kind) or ():
        if not isinstance(item, dict) or not isinstance(item.get("name"), str) or item["name"].startswith("conformance_"):
            continue
        schema = item.get("inputSchema")
        if isinstance(schema, dict) and schema.get("required"):
            continue
        out.append(item)
    return out


def wire_check(check_id: str) -> None:
    """Register `check_id`, a profile's `<profile>/server/wire-messages-valid`: the same judge for every profile."""
    assert check_id.split("/")[1:] == ["server", "wire-messages-valid"], check_id
    check(check_id,
          does="validates every message of this profile's connection: JSON-RPC 2.0 envelope and base MCP types",
          must="every message the server sends is valid JSON-RPC 2.0 and valid MCP")(judge_wire)


def shape_violations(schema: str, instance: Any, where: str) -> list[str]:
    from ..core import schemas_loader

    return [f"{where}: {msg}" for msg in schemas_loader.errors(schema, instance)]


def judge_shapes(problems: list[str], expected: str) -> str | None:
    if problems:
        raise Violation(f"{len(problems)} shape error(s); first: {problems[0]}", expected=expected,
                        actual=problems[:10])
    return None


def judge_unadvertised(rec: Recording, methods: list[str], capability: str) -> str | None:
    """Methods of a capability the server does not advertise must be rejected, as -32601."""
    codes = []
    for method in methods:
        ex = rec.cite(f"unadvertised {method}")
        if ex.failure:
            raise Violation(f"{method} (capability {capability} not advertised): {ex.failure}",
                            expected="a JSON-RPC error, code -32601", actual=ex.failure)
        if ex.has_result:
            raise Violation(f"{method} was answered with a result although the server does not advertise "
                            f"{capability}: advertisement and behaviour disagree",
                            expected="a JSON-RPC error, code -32601", actual=ex.response)
        codes.append((ex.error or {}).get("code"))
    wrong = [(m, c) for m, c in zip(methods, codes) if c != -32601]
    if wrong:
        raise Violation(", ".join(f"{m} answered code {c}" for m, c in wrong) + " instead of -32601 Method not found",
                        expected=-32601, actual=[c for _, c in wrong], level="SHOULD")
    return f"rejected with -32601: {', '.join(methods)}"



# -- the rejection checks every method-bearing profile has (one registration each, the judge shared) ----------

def rejected_unlike(rec: Recording, accepted: str, rejected: str, what: str, accepted_what: str) -> str:
    """`rejected` got a JSON-RPC error while `accepted`, the same request made valid, got a result."""
    ok = rec.cite(accepted)
    if not ok.has_result:
        raise NotObserved(f"{accepted_what} was rejected too ({ok.outcome_text()}), so a rejection shows nothing")
    err = require_error(rec, rejected, what)
    return f"rejected with code {err.get('code')}"


def unknown_name_check(check_id: str, *, does: str, must: str, label: str, what: str) -> None:
    """Register `check_id`: the request `label`, naming something the server never listed, gets an error."""

    def judge(rec: Recording) -> str:
        return f"rejected with code {require_error(rec, label, what).get('code')}"

    check(check_id, does=does, must=must)(judge)


def malformed_check(check_id: str, *, does: str, must: str, cases: list[tuple[str, str]]) -> None:
    """Register `check_id`: every malformed request in `cases` (label, what) gets an error."""
    check(check_id, does=does, must=must)(lambda rec: require_errors(rec, cases))


def unadvertised_check(check_id: str, *, does: str, methods: list[str], capability: str) -> None:
    """Register `check_id` (run when the profile is not claimed): the methods get -32601."""
    check(check_id, does=does, when="unclaimed",
          must="methods of a capability the server does not advertise are rejected, with -32601 Method not found")(
        lambda rec: judge_unadvertised(rec, methods, capability))
