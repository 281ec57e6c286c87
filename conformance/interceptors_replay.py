"""Replay the interceptors working group's JSON conformance fixtures through an adapter.

    python -m conformance.interceptors_replay --fixtures DIR [--adapter MODULE:FACTORY] [--report-dir DIR]

The SEP-2624 working group (modelcontextprotocol/experimental-ext-interceptors,
`conformance/`) publishes language-neutral fixtures: interceptors to register
(by a named behaviour), then `list` / `invoke` / `apply` steps, each with an
expectation. The suite does not ship those files (the repository names no
licence); point `--fixtures` at a checkout's `conformance/fixtures`.

The adapter is the WG's four-function contract: `FACTORY(interceptors)` returns
a session with `list(event | None) -> result`, `invoke(params) -> {"ok": True,
"result"} | {"ok": False, "errorCode"}` and `chain(event, phase, payload,
session_id) -> {"decision", "finalPayload"}`. The default adapter is the
reference implementation (reference_servers.interceptor_chain:wg_adapter).

Comparison follows the fixtures' own rule: remove the fixture's volatile keys
from the actual result at every depth, canonicalise it with RFC 8785 (the
`rfc8785` package), compare with `expect.canonical`; `apply` steps compare the
decision and then `finalPayloadCanonical`, `forbids` and `requires`. A fixture
passes when every step passes; the report gives passed/total, per fixture and
per requirement tag. Exit 0 when every fixture passed, 1 otherwise, 2 on bad
usage (no fixtures, unloadable adapter).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

import rfc8785

DEFAULT_ADAPTER = "reference_servers.interceptor_chain:wg_adapter"
FIXTURE_KEYS = ("id", "kind", "requirement", "interceptors", "steps", "volatile")


@dataclass
class FixtureResult:
    id: str
    requirement: str
    passed: bool
    steps: int
    reason: str | None = None
    failures: list[dict] = field(default_factory=list)


def canonical(value: Any) -> str:
    return rfc8785.dumps(value).decode("utf-8")


def scrub(value: Any, volatile: set[str]) -> Any:
    """The value without any key named in `volatile`, at every depth."""
    if isinstance(value, dict):
        return {k: scrub(v, volatile) for k, v in value.items() if k not in volatile}
    if isinstance(value, list):
        return [scrub(v, volatile) for v in value]
    return value


def judge_step(step: dict, session, volatile: set[str]) -> str | None:
    """None when the step passes, else why not."""
    expect = step["expect"]
    if step["op"] == "list":
        actual = canonical(scrub(session.list(step.get("event")), volatile))
        return None if actual == expect["canonical"] else f"list: expected {expect['canonical']}, got {actual}"
    if step["op"] == "invoke":
        got = session.invoke(step["params"])
        if "errorCode" in expect:
            if got.get("ok"):
                return f"invoke: expected JSON-RPC error {expect['errorCode']}, got a result"
            return None if got.get("errorCode") == expect["errorCode"] else \
                f"invoke: expected error {expect['errorCode']}, got {got.get('errorCode')}"
        if not got.get("ok"):
            return f"invoke: expected a result, got error {got.get('errorCode')}"
        actual = canonical(scrub(got["result"], volatile))
        return None if actual == expect["canonical"] else f"invoke: expected {expect['canonical']}, got {actual}"
    if step["op"] == "apply":
        context = step.get("context") or {}
        got = session.chain(step["event"], step["phase"], step["payload"], context.get("sessionId"))
        if got.get("decision") != expect["decision"]:
            return f"apply: expected decision {expect['decision']}, got {got.get('decision')}"
        final = canonical(got.get("finalPayload"))
        if "finalPayloadCanonical" in expect and final != expect["finalPayloadCanonical"]:
            return f"apply: expected final payload {expect['finalPayloadCanonical']}, got {final}"
        absent = [s for s in expect.get("forbids") or () if s in final]
        missing = [s for s in expect.get("requires") or () if s not in final]
        if absent or missing:
            return f"apply: final payload {final} contains {absent} / lacks {missing}"
        return None
    return f"unknown step op {step.get('op')!r}"


def replay_fixture(fixture: dict, factory: Callable) -> FixtureResult:
    result = FixtureResult(fixture["id"], fixture["requirement"], False, len(fixture["steps"]))
    try:
        session = factory(fixture["interceptors"])
    except Exception as exc:  # an adapter that cannot host the fixture fails it, with the reason
        result.reason = f"createSession failed: {type(exc).__name__}: {exc}"
        return result
    volatile = set(fixture.get("volatile") or ())
    for index, step in enumerate(fixture["steps"]):
        try:
            why = judge_step(step, session, volatile)
        except Exception as exc:
            why = f"{step.get('op')}: the adapter raised {type(exc).__name__}: {exc}"
        if why:
            result.failures.append({"step": index, "reason": why})
    result.passed = not result.failures
    result.reason = result.failures[0]["reason"] if result.failures else None
    return result


def load_fixtures(directory: Path) -> list[dict]:
    fixtures = []
    for path in sorted(directory.rglob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(doc, dict) and all(key in doc for key in FIXTURE_KEYS):
            fixtures.append(doc)  # manifest.json and other files are not fixtures
    return fixtures


def load_adapter(spec: str) -> Callable:
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name or "factory")


def replay(directory: Path, factory: Callable) -> dict:
    results = [replay_fixture(f, factory) for f in load_fixtures(directory)]
    by_requirement: dict[str, dict] = {}
    for r in results:
        tally = by_requirement.setdefault(r.requirement, {"passed": 0, "total": 0})
        tally["total"] += 1
        tally["passed"] += r.passed
    return {"passed": sum(r.passed for r in results), "total": len(results),
            "byRequirement": by_requirement, "fixtures": [asdict(r) for r in results]}


def markdown(report: dict, adapter: str) -> str:
    lines = [f"# Interceptors WG fixtures: {report['passed']}/{report['total']} passed", "",
             f"Adapter: `{adapter}`", "", "| fixture | requirement | result | reason |", "|---|---|---|---|"]
    for f in report["fixtures"]:
        reason = (f["reason"] or "").replace("|", "\\|")[:200]
        lines.append(f"| {f['id']} | {f['requirement']} | {'pass' if f['passed'] else 'FAIL'} | {reason} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.interceptors_replay")
    parser.add_argument("--fixtures", required=True, type=Path, help="directory of WG fixture JSON files")
    parser.add_argument("--adapter", default=DEFAULT_ADAPTER, help=f"MODULE:FACTORY (default {DEFAULT_ADAPTER})")
    parser.add_argument("--report-dir", type=Path, help="write interceptors-replay.json and .md here")
    args = parser.parse_args(argv)
    if not args.fixtures.is_dir():
        print(f"interceptors replay: {args.fixtures} is not a directory", file=sys.stderr)
        return 2
    try:
        factory = load_adapter(args.adapter)
    except (ImportError, AttributeError, ValueError) as exc:
        print(f"interceptors replay: cannot load adapter {args.adapter}: {exc}", file=sys.stderr)
        return 2
    try:
        report = replay(args.fixtures, factory)
    except (OSError, ValueError) as exc:
        print(f"interceptors replay: cannot read fixtures: {exc}", file=sys.stderr)
        return 2
    if not report["total"]:
        print(f"interceptors replay: no fixtures under {args.fixtures}", file=sys.stderr)
        return 2
    for f in report["fixtures"]:
        print(f"{'pass' if f['passed'] else 'FAIL'}  {f['id']}" + ("" if f["passed"] else f"  ({f['reason']})"))
    print(f"{report['passed']}/{report['total']} fixtures passed")
    if args.report_dir:
        args.report_dir.mkdir(parents=True, exist_ok=True)
        (args.report_dir / "interceptors-replay.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        (args.report_dir / "interceptors-replay.md").write_text(markdown(report, args.adapter), encoding="utf-8")
    return 0 if report["passed"] == report["total"] else 1


if __name__ == "__main__":
    sys.exit(main())
