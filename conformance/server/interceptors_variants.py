"""Server role, profile `interceptors` (conformance/server/interceptors.py): the known variants.

Implementers have published shapes that differ from the SEP: results nested as `validation: {...}`,
`phase: "both"`, `mode: "enforce"`, the other spellings of the method names, and the methods served without
the capability. The verdict stays what the SEP says; a failing check's reason starts with the name of the
variant the recording shows and what the SEP says instead (`known_variants`, applied to a check by
`diagnosed`). The other spellings are probed only when the SEP's own answers -32601 (`probe_spellings`).
"""
from __future__ import annotations

import functools

from ..client.recording import Recording
from ..client.session import Session
from ..core.model import NotObserved, Violation
from .interceptors_driver import CLEAN_PAYLOAD, EVENT, EXTENSION_ID, INVOKE, LIST, VALIDATOR, extension

# The SEP names each method twice: §JSON-RPC Methods (`interceptors/list`, `interceptor/invoke`, what the suite
# requires) and elsewhere the other spelling (`interceptor/list` in §Rationale, `interceptors/invoke` in
# §Backward Compatibility). The catalog rows ic.server.method-names-* record it.
ALT_SPELLING = {LIST: "interceptor/list", INVOKE: "interceptors/invoke"}
ALT_WHERE = {LIST: "§Rationale > Other Design Choices", INVOKE: "§Backward Compatibility"}
NESTED = ("results nested under `validation`: the SEP's ValidationResult is flat: `valid`, `severity`, `messages` "
          "at the top of the result")
PHASE_BOTH = ("`phase: \"both\"` on the wire: the SEP's hook phase is \"request\" or \"response\"; an interceptor "
              "that runs in both phases declares one hook entry per phase")
MODE_ENFORCE = ("`mode: \"enforce\"`, the working group's older vocabulary: the SEP's modes are \"active\" "
                "(the default) and \"audit\"")
UNADVERTISED = ("the interceptors methods are served without the capability (as servers whose SDK cannot put a key "
                f"under capabilities.extensions do): the SEP's server declares capabilities.extensions[\"{EXTENSION_ID}\"] "
                "during initialization")


def probe_label(method: str) -> str:
    return f"probe {ALT_SPELLING[method]}"


def unserved(ex) -> bool:
    """The exchange was answered -32601 Method not found."""
    return ex is not None and ex.has_error and isinstance(ex.error, dict) and ex.error.get("code") == -32601


def spelling_variant(rec: Recording, method: str) -> str | None:
    """The named reason when `method` answered -32601 and its other spelling answered anything else."""
    label = probe_label(method)
    probe = rec.exchanges.get(label)
    if probe is None or probe.failure or unserved(probe) or not (probe.has_result or probe.has_error):
        return None
    rec.cite(label)
    alt = ALT_SPELLING[method]
    return (f"the method `{method}` is not served; `{alt}` is (the spelling of the SEP's {ALT_WHERE[method]}); "
            f"the suite requires `{method}`, the spelling of the SEP's §JSON-RPC Methods")


def listed_variants(items) -> list[str]:
    """Named variants in interceptor definitions: phase "both", mode "enforce"."""
    found = []
    items = [i for i in items or () if isinstance(i, dict)]
    if any(isinstance(h, dict) and h.get("phase") == "both" for i in items for h in i.get("hooks") or ()):
        found.append(PHASE_BOTH)
    if any(i.get("mode") == "enforce" for i in items):
        found.append(MODE_ENFORCE)
    return found


def result_variants(result) -> list[str]:
    """Named variants in one invoke result: nested validation, phase "both"."""
    if not isinstance(result, dict):
        return []
    found = []
    if "valid" not in result and isinstance(result.get("validation"), dict):
        found.append(NESTED)
    if result.get("phase") == "both":
        found.append(PHASE_BOTH)
    return found


def known_variants(rec: Recording, unobserved: bool) -> list[str]:
    """The known variants the exchanges the judge cited show; when the judge observed nothing, also a method
    served only under its other spelling, or served without the capability (then that is why)."""
    found: list[str] = []
    cited = list(rec.cited)
    for method in (LIST, INVOKE):
        if unobserved or any(unserved(rec.exchanges.get(label)) and rec.exchanges[label].method == method
                             for label in cited):
            variant = spelling_variant(rec, method)
            if variant is not None:
                found.append(variant)
    for label in cited:
        ex = rec.exchanges.get(label)
        if ex is None or not ex.has_result:
            continue
        if ex.method == LIST:
            found += listed_variants(ex.result.get("interceptors") if isinstance(ex.result, dict) else None)
        elif ex.method == INVOKE:
            found += result_variants(ex.result)
    if unobserved and extension(rec) is None and rec.exchanges.get(LIST) is not None and rec.exchanges[LIST].has_result:
        found.append(UNADVERTISED)
    return list(dict.fromkeys(v for v in found if v))


def diagnosed(judge):
    """Name the known variant a failing judge's evidence shows, before its own reason; the verdict is unchanged."""
    @functools.wraps(judge)
    def run(rec: Recording):
        try:
            return judge(rec)
        except Violation as exc:
            named = known_variants(rec, unobserved=isinstance(exc, NotObserved))
            if named:
                exc.reason = f"{'; '.join(named)} [{exc.reason}]"
            raise
    return run


async def probe_spellings(session: Session, rec: Recording) -> None:
    """Where the SEP's method answered -32601, ask once under its other spelling (named in the reasons)."""
    if unserved(rec.exchanges.get(LIST)):
        await session.send(probe_label(LIST), ALT_SPELLING[LIST], {})
    if unserved(rec.exchanges.get("invoke unknown")):
        target = next((i.get("name") for i in rec.listing.get("interceptors") or () if isinstance(i, dict)), VALIDATOR)
        await session.send(probe_label(INVOKE), ALT_SPELLING[INVOKE], {"name": target, "event": EVENT,
                                                                        "phase": "request", "payload": CLEAN_PAYLOAD})
