"""Replay the interceptors working group's JSON conformance fixtures through an adapter.

    python -m conformance.tools.interceptors_replay --fixtures DIR [--adapter MODULE:FACTORY] [--report-dir DIR]

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
`rfc8785` package), compare with `expect.canonical` (or, when a fixture omits
it, the canonical form of `expect.result`); `apply` steps compare the decision
and then the final payload, scrubbed the same way, with `finalPayloadCanonical`
(or `finalPayload`), `forbids` and `requires`. Older WG fixtures name the
`apply` step `chain`; both are read. A fixture passes when every step passes;
the report gives passed/total, per fixture and per requirement tag. Exit 0 when
every fixture passed, 1 otherwise, 2 on bad usage (no fixtures, unloadable
adapter).

An adapter that does not offer a fixture's named behaviour raises
NotImplementedError from FACTORY: the fixture then fails with "adapter lacks
behaviour ...", a reason apart from a wrong answer.

`--report-dir` also gets the suite's own reports (conformance/report/results.py):
results.json in schemas/results.json's format (role server, profile
interceptors, target kind adapter), summary.md, index.html, badges/ and
junit.xml, so `mcp-ext-conformance dashboard` can put the replay beside any
run. Each fixture is one check, `interceptors/server/wg-<kind>-<name>` (the
fixture id with `/` and `_` as `-`: check ids are profile/role/slug and a slug
is `[a-z0-9-]+`), at level MUST (each fixture states a MUST; its requirement tag,
`SEP-2624/...` or the WG's own `SEC/...`, opens the check's requirement). A
failing fixture is a fail; one whose behaviour the adapter lacks is a skip
with that reason, as a check whose fixture a server does not expose is; neither
is a pass. results.json's exitCode is the command's.
"""

from __future__ import annotations

import argparse
import importlib
import json
import re
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

import rfc8785

from ..report import results as reports
from ..core.model import Result

DEFAULT_ADAPTER = "reference_servers.interceptor_chain:wg_adapter"
FIXTURE_KEYS = ("id", "kind", "requirement", "interceptors", "steps", "volatile")
APPLY_OPS = ("apply", "chain")  # "chain" is the step's name in the WG's fixtures before they renamed it "apply"


@dataclass
class FixtureResult:
    id: str
    requirement: str
    passed: bool
    steps: int
    reason: str | None = None
    failures: list[dict] = field(default_factory=list)
    kind: str = "protocol"
    description: str = ""
    duration: float = 0.0
    lacks_behaviour: bool = False  # the adapter raised NotImplementedError: not a wrong answer


def canonical(value: Any) -> str:
    return rfc8785.dumps(value).decode("utf-8")


def scrub(value: Any, volatile: set[str]) -> Any:
    """The value without any key named in `volatile`, at every depth."""
    if isinstance(value, dict):
        return {k: scrub(v, volatile) for k, v in value.items() if k not in volatile}
    if isinstance(value, list):
        return [scrub(v, volatile) for v in value]
    return value


def expected_canonical(expect: dict, key: str, value_key: str) -> str:
    """The fixture's precomputed canonical string, or the canonical form of the value it stands for."""
    return expect[key] if key in expect else canonical(expect[value_key])


def judge_step(step: dict, session, volatile: set[str]) -> str | None:
    """None when the step passes, else why not."""
    expect = step["expect"]
    if step["op"] == "list":
        actual = canonical(scrub(session.list(step.get("event")), volatile))
        wanted = expected_canonical(expect, "canonical", "result")
        return None if actual == wanted else f"list: expected {wanted}, got {actual}"
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
        wanted = expected_canonical(expect, "canonical", "result")
        return None if actual == wanted else f"invoke: expected {wanted}, got {actual}"
    if step["op"] in APPLY_OPS:
        context = step.get("context") or {}
        got = session.chain(step["event"], step["phase"], step["payload"], context.get("sessionId"))
        if got.get("decision") != expect["decision"]:
            return f"apply: expected decision {expect['decision']}, got {got.get('decision')}"
        final = canonical(scrub(got.get("finalPayload"), volatile))
        if "finalPayloadCanonical" in expect or "finalPayload" in expect:
            wanted = expected_canonical(expect, "finalPayloadCanonical", "finalPayload")
            if final != wanted:
                return f"apply: expected final payload {wanted}, got {final}"
        absent = [s for s in expect.get("forbids") or () if s in final]
        missing = [s for s in expect.get("requires") or () if s not in final]
        if absent or missing:
            return f"apply: final payload {final} contains {absent} / lacks {missing}"
        return None
    return f"unknown step op {step.get('op')!r}"


def replay_fixture(fixture: dict, factory: Callable) -> FixtureResult:
    started = time.perf_counter()
    result = FixtureResult(fixture["id"], fixture["requirement"], False, len(fixture["steps"]),
                           kind=fixture["kind"], description=fixture.get("description") or "")
    try:
        session = factory(fixture["interceptors"])
    except NotImplementedError as exc:  # the adapter's way to say it does not offer a named behaviour
        result.reason, result.lacks_behaviour = f"adapter lacks behaviour {exc}", True
        result.duration = time.perf_counter() - started
        return result
    except Exception as exc:  # an adapter that cannot host the fixture fails it, with the reason
        result.reason = f"createSession failed: {type(exc).__name__}: {exc}"
        result.duration = time.perf_counter() - started
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
    result.duration = time.perf_counter() - started
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


# -- the suite's own report formats -------------------------------------------------------------------------------
def check_id(fixture_id: str) -> str:
    """`interceptors/server/wg-<kind>-<name>`: the fixture id as a slug (schemas/results.json allows [a-z0-9-])."""
    return "interceptors/server/wg-" + re.sub(r"[^a-z0-9]+", "-", fixture_id.lower()).strip("-")


def to_results(report: dict, adapter: str) -> list[Result]:
    """One Result a fixture; a slug two fixture ids share gets the fixture's position appended."""
    results, seen = [], set()
    for index, f in enumerate(report["fixtures"]):
        cid = check_id(f["id"])
        if cid in seen:
            cid = f"{cid}-{index}"
        seen.add(cid)
        outcome = "pass" if f["passed"] else "skip" if f["lacks_behaviour"] else "fail"
        results.append(Result(
            id=cid, level="MUST", outcome=outcome, rows=[],
            requirement=f"{f['requirement']}: {f['description']}" if f["description"] else f["requirement"],
            description=f"Replayed the interceptors working group's fixture {f['id']} ({f['steps']} steps) "
                        f"through the adapter {adapter}.",
            reason=f["reason"], actual=f["failures"] or None, duration=f["duration"]))
    return results


def results_doc(report: dict, adapter: str, started: float, finished: float, exit_code: int) -> dict:
    claim = {"claimed": True, "claimedBy": "option",
             "reason": "the working group's fixtures were replayed (python -m conformance.tools.interceptors_replay)"}
    return reports.results_document(role="server", target={"kind": "adapter", "adapter": adapter},
                                    results=to_results(report, adapter), claims={"interceptors": claim},
                                    started=started, finished=finished, strict=False, exit_code=exit_code)


def junit_xml(doc: dict) -> str:
    """JUnit XML of a results document: a testcase a check; fail is a failure, skip a skip, the rest pass."""
    from junitparser import Failure, JUnitXml, Skipped, TestCase, TestSuite

    suite = TestSuite(f"mcp-ext-conformance.{doc['role']}")
    for c in doc["checks"]:
        case = TestCase(c["slug"], f"{c['profile']}.{c['role']}", c["durationSeconds"])
        reason = c.get("reason") or ""
        if c["outcome"] == "fail":
            failure = Failure(reason)
            failure.text = c["requirement"]
            case.result = [failure]
        elif c["outcome"] == "skip":
            case.result = [Skipped(reason)]
        elif c["outcome"] != "pass":
            case.system_out = f"{c['outcome']}: {reason}"
        suite.add_testcase(case)
    suite.update_statistics()
    suite.time = doc["durationSeconds"]
    xml = JUnitXml()
    xml.add_testsuite(suite)
    return xml.tostring().decode("utf-8")


def write_reports(directory: Path, report: dict, adapter: str, started: float, finished: float,
                  exit_code: int) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "interceptors-replay.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    (directory / "interceptors-replay.md").write_text(markdown(report, adapter), encoding="utf-8")
    doc = results_doc(report, adapter, started, finished, exit_code)
    reports.write_all(directory, doc)
    (directory / "junit.xml").write_text(junit_xml(doc), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.tools.interceptors_replay")
    parser.add_argument("--fixtures", required=True, type=Path, help="directory of WG fixture JSON files")
    parser.add_argument("--adapter", default=DEFAULT_ADAPTER, help=f"MODULE:FACTORY (default {DEFAULT_ADAPTER})")
    parser.add_argument("--report-dir", type=Path,
                        help="write interceptors-replay.json and .md, and results.json, summary.md, index.html, "
                             "badges/, junit.xml here")
    args = parser.parse_args(argv)
    if not args.fixtures.is_dir():
        print(f"interceptors replay: {args.fixtures} is not a directory", file=sys.stderr)
        return 2
    try:
        factory = load_adapter(args.adapter)
    except (ImportError, AttributeError, ValueError) as exc:
        print(f"interceptors replay: cannot load adapter {args.adapter}: {exc}", file=sys.stderr)
        return 2
    started = time.time()
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
    exit_code = 0 if report["passed"] == report["total"] else 1
    if args.report_dir:
        write_reports(args.report_dir, report, args.adapter, started, time.time(), exit_code)
    return exit_code


if __name__ == "__main__":
    sys.exit(main())
