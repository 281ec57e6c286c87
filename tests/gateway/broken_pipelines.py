"""Deliberately broken pipeline adapters: one flaw each, each meant to fail exactly one pipeline check.

A small pipeline written independently of the reference engine (so the fixtures are shown to judge
behaviour, not one implementation's quirks), with switches that introduce one flaw at a time. Most
flaws are rejected designs from ADR-009 itself (descending order, "response accumulation with the
original", a kind-grouped pipeline) or plausible bugs (auditors handed the live response, reasons
without the plugin's name, an exception that lets the response through).

    MUTANTS[name] = (fails, does), the contract of tests/README.md; FLAWS[name] = its switches
    make_factory(**FLAWS[name]) = the broken adapter
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass

BASE = {
    "order": "ascending",  # "descending" | "kind-first"
    "default_priority": 50,
    "ties": "definition",  # "name"
    "cross_kind_ties": "middleware-first",  # "definition" | "security-first"
    "parallel": False,
    "block_continues": False,
    "reason_names_plugin": True,
    "reason_carried": True,
    "fail_open": False,
    "accept_out_of_range": False,
    "auditors_in_pipeline": False,
    "auditors_reverse": False,
    "auditors_see_original": False,
    "auditors_share_response": False,
    "stateful": False,
}


def _texts(response: dict, change) -> None:
    for block in (response.get("result") or {}).get("content") or []:
        if isinstance(block, dict) and block.get("type") == "text":
            block["text"] = change(block["text"])


def _change(plugin: dict):
    if plugin["behaviour"] == "append":
        marker = plugin.get("marker", f"[{plugin['name']}]")
        return lambda text: text + marker
    if plugin["behaviour"] == "uppercase":
        return str.upper
    return None


def _merge(original: dict, current: dict, output: dict) -> dict:
    """ADR-009's rejected Alternative 5: fold one plugin's output (made from the original) into the
    accumulated response: an extension of the original text adds its suffix, anything else replaces."""
    merged = copy.deepcopy(current)
    blocks = zip(original["result"]["content"], merged["result"]["content"], output["result"]["content"])
    for orig, cur, out in blocks:
        if cur.get("type") != "text":
            continue
        cur["text"] = cur["text"] + out["text"][len(orig["text"]):] if out["text"].startswith(orig["text"]) \
            else out["text"]
    return merged


@dataclass
class BrokenPipeline:
    plugins: list[dict]
    flaws: dict
    uses: int = 1  # how many times this exact configuration was built (the stateful flaw reads it)

    def __post_init__(self):
        for p in self.plugins:
            priority = p.get("priority")
            if priority is not None and not self.flaws["accept_out_of_range"] and not 0 <= priority <= 100:
                raise ValueError(f"{p['name']}: priority {priority} outside 0-100")

    def _order(self) -> list[dict]:
        f = self.flaws
        in_pipeline = [p for p in self.plugins if p["kind"] != "auditing" or f["auditors_in_pipeline"]]
        kind_rank = {"definition": {}, "middleware-first": {"middleware": 0, "security": 1},
                     "security-first": {"security": 0, "middleware": 1}}[f["cross_kind_ties"]]

        def key(indexed):
            index, p = indexed
            priority = p.get("priority", f["default_priority"])
            tie = p["name"] if f["ties"] == "name" else index
            rank = kind_rank.get(p["kind"], 2)
            if f["order"] == "kind-first":
                return (rank, priority, tie)
            return (-priority if f["order"] == "descending" else priority, rank, tie)

        return [p for _, p in sorted(enumerate(in_pipeline), key=key)]

    async def process_response(self, request: dict, response: dict) -> dict:
        f = self.flaws
        original = copy.deepcopy(response)
        current = copy.deepcopy(response)
        stages, audit = [], []
        allowed, reason = True, None
        for p in self._order():
            stages.append(p["name"])
            seen = original if f["parallel"] else current
            if p["kind"] == "auditing":  # only with auditors_in_pipeline: observes from inside the chain
                audit.append({"plugin": p["name"], "response": copy.deepcopy(seen)})
                continue
            behaviour = p["behaviour"]
            if behaviour == "raise":
                if f["fail_open"]:
                    continue
                if allowed:
                    allowed, reason = False, f"[{p['name']}] raised RuntimeError"
                break
            if behaviour == "block":
                if allowed:
                    text = p.get("reason", "blocked")
                    reason = (f"[{p['name']}] " if f["reason_names_plugin"] else "") + (
                        text if f["reason_carried"] else "blocked")
                    allowed = False
                if f["block_continues"]:
                    continue
                break
            if behaviour == "audit":
                audit.append({"plugin": p["name"], "response": copy.deepcopy(seen)})
                continue
            change = _change(p)
            if change is None:
                continue
            if f["stateful"] and self.uses > 1 and behaviour == "append":
                base = change
                change = lambda text, base=base: base(text) + "*"  # noqa: E731 - state leaking across builds
            output = copy.deepcopy(seen)
            _texts(output, change)
            current = _merge(original, current, output) if f["parallel"] else output
        auditors = [p for p in self.plugins if p["kind"] == "auditing" and not f["auditors_in_pipeline"]]
        if f["auditors_reverse"]:
            auditors.reverse()
        for p in auditors:
            if f["auditors_see_original"]:
                seen = copy.deepcopy(original)
            elif f["auditors_share_response"]:
                seen = current
            else:
                seen = copy.deepcopy(current)
            audit.append({"plugin": p["name"], "response": copy.deepcopy(seen)})
            change = _change(p)
            if change is not None:
                _texts(seen, change)
        return {"allowed": allowed, "response": current if allowed else None, "reason": reason,
                "stages": stages, "audit": audit}


def make_factory(**flaws):
    unknown = set(flaws) - set(BASE)
    assert not unknown, unknown
    settings = {**BASE, **flaws}
    built: dict[str, int] = {}

    def factory(plugins: list[dict]) -> BrokenPipeline:
        key = json.dumps(plugins, sort_keys=True)
        built[key] = built.get(key, 0) + 1
        return BrokenPipeline(plugins, settings, built[key])

    return factory


PREFIX = "sequential-pipeline/gateway/"
# {name: (fails: the full ids of the checks it must fail, does: one line)}, the contract of tests/README.md.
MUTANTS = {
    "descending-priority": ({PREFIX + "ascending-priority"}, "runs higher priorities first"),
    "kind-grouped-pipeline": ({PREFIX + "ascending-priority"}, "runs every middleware plugin before any security plugin, whatever their priorities"),
    "default-priority-zero": ({PREFIX + "default-priority"}, "gives a plugin without a priority 0 instead of 50"),
    "default-priority-hundred": ({PREFIX + "default-priority"}, "gives a plugin without a priority 100 instead of 50"),
    "accepts-out-of-range": ({PREFIX + "priority-range-enforced"}, "accepts priorities below 0 and above 100"),
    "ties-by-name": ({PREFIX + "equal-priority-definition-order"}, "orders equal priorities by plugin name"),
    "cross-kind-ties-by-definition": ({PREFIX + "middleware-before-security-on-ties"}, "orders middleware and security of equal priority by definition"),
    "security-before-middleware": ({PREFIX + "middleware-before-security-on-ties"}, "runs security before middleware at equal priority"),
    "parallel-with-original": ({PREFIX + "chained-input"}, "gives every plugin the original response instead of the previous output"),
    "runs-on-after-block": ({PREFIX + "block-stops-chain"}, "keeps running plugins after one blocks"),
    "reason-without-plugin": ({PREFIX + "block-reason-names-plugin"}, "blocks with a reason that does not name the plugin"),
    "generic-block-reason": ({PREFIX + "block-reason-carried"}, "replaces the blocking plugin's reason with a generic one"),
    "auditors-in-pipeline": ({PREFIX + "auditors-after-pipeline"}, "runs auditing plugins as processing stages, by priority"),
    "auditors-reversed": ({PREFIX + "auditors-definition-order"}, "runs auditing plugins in reverse definition order"),
    "auditors-see-original": ({PREFIX + "auditors-see-final-response"}, "shows auditing plugins the original response"),
    "auditors-share-response": ({PREFIX + "auditors-cannot-modify"}, "hands auditing plugins the live response, so their changes are delivered"),
    "fails-open": ({PREFIX + "raising-plugin-fails-closed"}, "lets the response through when a plugin raises"),
    "state-across-builds": ({PREFIX + "predictable"}, "keeps state from one built pipeline to the next"),
}

# The switches that make each mutant, by name.
FLAWS = {
    "descending-priority": dict(order="descending"),
    "kind-grouped-pipeline": dict(order="kind-first"),
    "default-priority-zero": dict(default_priority=0),
    "default-priority-hundred": dict(default_priority=100),
    "accepts-out-of-range": dict(accept_out_of_range=True),
    "ties-by-name": dict(ties="name"),
    "cross-kind-ties-by-definition": dict(cross_kind_ties="definition"),
    "security-before-middleware": dict(cross_kind_ties="security-first"),
    "parallel-with-original": dict(parallel=True),
    "runs-on-after-block": dict(block_continues=True),
    "reason-without-plugin": dict(reason_names_plugin=False),
    "generic-block-reason": dict(reason_carried=False),
    "auditors-in-pipeline": dict(auditors_in_pipeline=True),
    "auditors-reversed": dict(auditors_reverse=True),
    "auditors-see-original": dict(auditors_see_original=True),
    "auditors-share-response": dict(auditors_share_response=True),
    "fails-open": dict(fail_open=True),
    "state-across-builds": dict(stateful=True),
}

correct = make_factory()
descending = make_factory(order="descending")  # importable by name, for the CLI test
