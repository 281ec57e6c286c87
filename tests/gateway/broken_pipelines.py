"""Deliberately broken pipeline adapters: one flaw each, each meant to fail exactly one pipeline check.

A small pipeline written independently of the reference engine (so the fixtures are shown to judge
behaviour, not one implementation's quirks), with switches that introduce one flaw at a time. Most
flaws are rejected designs from ADR-009 itself (descending order, "response accumulation with the
original", a kind-grouped pipeline) or plausible bugs (auditors handed the live response, reasons
without the plugin's name, an exception that lets the response through).

    MUTANTS[name] = (slug of the check it must fail, factory)
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


MUTANTS = {
    "descending-priority": ("ascending-priority", dict(order="descending")),
    "kind-grouped-pipeline": ("ascending-priority", dict(order="kind-first")),
    "default-priority-zero": ("default-priority", dict(default_priority=0)),
    "default-priority-hundred": ("default-priority", dict(default_priority=100)),
    "accepts-out-of-range": ("priority-range-enforced", dict(accept_out_of_range=True)),
    "ties-by-name": ("equal-priority-definition-order", dict(ties="name")),
    "cross-kind-ties-by-definition": ("middleware-before-security-on-ties", dict(cross_kind_ties="definition")),
    "security-before-middleware": ("middleware-before-security-on-ties", dict(cross_kind_ties="security-first")),
    "parallel-with-original": ("chained-input", dict(parallel=True)),
    "runs-on-after-block": ("block-stops-chain", dict(block_continues=True)),
    "reason-without-plugin": ("block-reason-names-plugin", dict(reason_names_plugin=False)),
    "generic-block-reason": ("block-reason-carried", dict(reason_carried=False)),
    "auditors-in-pipeline": ("auditors-after-pipeline", dict(auditors_in_pipeline=True)),
    "auditors-reversed": ("auditors-definition-order", dict(auditors_reverse=True)),
    "auditors-see-original": ("auditors-see-final-response", dict(auditors_see_original=True)),
    "auditors-share-response": ("auditors-cannot-modify", dict(auditors_share_response=True)),
    "fails-open": ("raising-plugin-fails-closed", dict(fail_open=True)),
    "state-across-builds": ("predictable", dict(stateful=True)),
}

correct = make_factory()
descending = make_factory(order="descending")  # importable by name, for the CLI test
