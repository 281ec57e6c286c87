"""Gateway role, sequential-pipeline profile: plugin-pipeline semantics replayed through an adapter.

Theory of operation (the contract is conformance/gateway/ADAPTER.md):

- Scenarios are data: one JSON file per scenario in fixtures/pipeline/, valid against
  schemas/pipeline-fixture.json. Each names the check it serves, the catalog rows it exercises, the
  plugins (a behaviour from a small vocabulary, a kind, a priority, a definition order), one
  tools/call request and its response, and the expected outcome.
- Recording first: `record_pipeline(factory)` builds a fresh pipeline per fixture with
  `factory(plugins)`, calls `await pipeline.process_response(request, response)`, and keeps what came
  back. Every fixture is replayed twice (the second pass feeds `predictable`). Each run happens on a
  daemon thread with its own event loop and a deadline, so an adapter that raises, returns nonsense,
  or hangs (even without ever yielding to the loop) costs that fixture a recorded error and the suite
  nothing else. After `HANG_LIMIT` hangs the remaining runs are not attempted.
- Judging second: each check is a small pure function over the recording. It compares the outcome of
  every fixture whose `check` is its id with that fixture's `expected` (JSON compared canonically:
  sorted keys, no insignificant whitespace) and raises `Violation` naming the first fixture that
  differs, with expected and actual. Only the fields a fixture's `expected` states are compared.
- A factory that raises ValueError is a configuration error: what `configurationError: true` fixtures
  expect, and a failure anywhere else. Any other exception is an adapter fault.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import threading
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .. import schemas_loader
from ..judging import canonical
from ..model import NotObserved, Violation, check

PROFILE = "sequential-pipeline"
PREFIX = f"{PROFILE}/gateway/"
FIXTURE_DIR = Path(__file__).resolve().parent / "fixtures" / "pipeline"
SCHEMA = "pipeline-fixture"
DEFAULT_TIMEOUT = 3.0  # seconds per fixture run: factory + process_response
HANG_LIMIT = 2  # after this many timed-out runs, an adapter is not given more chances to hang


# ------------------------------------------------------------------------------------------ fixtures

class FixtureError(ValueError):
    """A fixture file is malformed: a suite bug, never the adapter's fault."""


def load_fixtures(directory: Path = FIXTURE_DIR) -> list[dict]:
    """Every fixture, validated against the schema, sorted by id; FixtureError names the bad file."""
    fixtures = []
    for path in sorted(directory.glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise FixtureError(f"{path.name}: not JSON: {exc}") from None
        problems = schemas_loader.errors(SCHEMA, data)
        if problems:
            raise FixtureError(f"{path.name}: {'; '.join(problems)}")
        if data["id"] != path.stem:
            raise FixtureError(f"{path.name}: id {data['id']!r} differs from the file name")
        names = [p["name"] for p in data["plugins"]]
        if len(names) != len(set(names)):
            raise FixtureError(f"{path.name}: plugin names repeat")
        fixtures.append(data)
    if not fixtures:
        raise FixtureError(f"no fixtures in {directory}")
    return fixtures


# ------------------------------------------------------------------------------------------ adapter loading

def load_adapter(spec: str) -> Callable:
    """"package.module:factory" -> the factory; ImportError/AttributeError/ValueError say what is wrong."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"adapter must be given as module:factory, not {spec!r}")
    module = importlib.import_module(module_name)
    target: Any = module
    for part in attr.split("."):
        target = getattr(target, part)
    if not callable(target):
        raise ValueError(f"{spec} is not callable")
    return target


# ------------------------------------------------------------------------------------------ recording

@dataclass
class FixtureRun:
    """One fixture, replayed: what went in, what was expected, and what the adapter did."""

    fixture: dict
    actual: dict | None = None  # normalised outcome, or {"configurationError": message}
    error: str | None = None  # an adapter fault or a timeout: the run produced no outcome
    repeat: dict | None = None  # the second pass, for `predictable`
    repeat_error: str | None = None

    @property
    def id(self) -> str:
        return self.fixture["id"]

    def observed(self) -> dict:
        return {"error": self.error} if self.error else dict(self.actual or {})

    def to_report(self) -> dict:
        fx = self.fixture
        # The Exchange shape of results.json: what went into the adapter, and what came out.
        return {"label": f"fixture {fx['id']}",
                "request": {"file": f"conformance/gateway/fixtures/pipeline/{fx['id']}.json",
                            "description": fx["description"], "plugins": fx["plugins"],
                            "request": fx["request"], "response": fx["response"], "expected": fx["expected"]},
                "response": self.observed(), "failure": self.error, "elapsedSeconds": None}


@dataclass
class PipelineRecording:
    """What `conformance.runner.evaluate` reads, for the pipeline half of the gateway role."""

    adapter: str = ""
    unavailable: str | None = None  # the adapter could not be imported or is not callable
    init_failed: bool = False
    fatal: str | None = None
    claimed: bool = True  # running the pipeline suite at all claims the profile
    claimed_by: str | None = "option"
    claim_reason: str = "pipeline semantics are driven through the adapter"
    by_option: bool = True
    touched: list[str] = field(default_factory=list)
    exchanges: dict[str, FixtureRun] = field(default_factory=dict)

    def has_fixture(self, need: str) -> bool:
        return True  # the fixtures are the suite's own data

    def run(self, fixture_id: str) -> FixtureRun:
        if fixture_id not in self.touched:
            self.touched.append(fixture_id)
        return self.exchanges[fixture_id]

    def runs_for(self, check_id: str) -> list[FixtureRun]:
        return [self.run(fid) for fid, r in self.exchanges.items() if r.fixture["check"] == check_id]


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _shape_problem(outcome: Any) -> str | None:
    """Why an adapter's outcome does not have the contract's shape, or None."""
    if not isinstance(outcome, dict):
        return f"process_response returned {type(outcome).__name__}, not an outcome object"
    if not isinstance(outcome.get("allowed"), bool):
        return "outcome.allowed is not a boolean"
    if "response" in outcome and not isinstance(outcome["response"], (dict, type(None))):
        return "outcome.response is neither an object nor null"
    if not isinstance(outcome.get("reason"), (str, type(None))):
        return "outcome.reason is neither a string nor null"
    stages = outcome.get("stages")
    if not isinstance(stages, list) or not all(isinstance(s, str) for s in stages):
        return "outcome.stages is not a list of plugin names"
    audit = outcome.get("audit", [])
    if not isinstance(audit, list) or not all(isinstance(a, dict) and isinstance(a.get("plugin"), str)
                                              for a in audit):
        return "outcome.audit is not a list of {plugin, ...} records"
    try:
        canonical(outcome)
    except (TypeError, ValueError) as exc:
        return f"outcome is not JSON: {exc}"
    return None


async def _replay(factory: Callable, fixture: dict) -> dict:
    """Build a pipeline for the fixture and process its response once (runs on the worker's loop)."""
    plugins = json.loads(json.dumps(fixture["plugins"]))  # each run gets its own copies to change
    request = json.loads(json.dumps(fixture["request"]))
    response = json.loads(json.dumps(fixture["response"]))
    try:
        pipeline = factory(plugins)
        if inspect.isawaitable(pipeline):
            pipeline = await pipeline
    except ValueError as exc:
        return {"configurationError": _describe(exc)}
    outcome = pipeline.process_response(request, response)
    if inspect.isawaitable(outcome):
        outcome = await outcome
    problem = _shape_problem(outcome)
    if problem:
        raise TypeError(problem)
    out = {"allowed": outcome["allowed"], "response": outcome.get("response"), "reason": outcome.get("reason"),
           "stages": list(outcome["stages"]), "audit": list(outcome.get("audit", []))}
    return json.loads(canonical(out))  # detach from anything the adapter still holds


async def _run_bounded(factory: Callable, fixture: dict, timeout: float) -> tuple[dict | None, str | None, bool]:
    """(outcome, error, timed_out). The replay runs on a daemon thread with its own loop: a coroutine that
    never yields, or a factory that blocks, cannot stall the suite, and a leaked thread dies with it."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future = loop.create_future()

    def settle(value) -> None:
        if not done.done():
            done.set_result(value)

    def worker() -> None:
        async def bounded():
            return await asyncio.wait_for(_replay(factory, fixture), timeout)
        try:
            value = (asyncio.run(bounded()), None, False)
        except (asyncio.TimeoutError, TimeoutError):
            value = (None, f"no outcome within {timeout:g} s", True)
        except Exception as exc:  # noqa: BLE001 - whatever the adapter does is recorded, never raised
            frame = traceback.extract_tb(exc.__traceback__)[-1:]
            where = f" (at {frame[0].filename}:{frame[0].lineno})" if frame else ""
            value = (None, f"the adapter raised {_describe(exc)}{where}", False)
        except BaseException as exc:  # SystemExit, KeyboardInterrupt raised by an adapter: still its fault
            value = (None, f"the adapter raised {_describe(exc)}", False)
        try:
            loop.call_soon_threadsafe(settle, value)
        except RuntimeError:  # the suite's loop is gone: nobody is waiting any more
            pass

    threading.Thread(target=worker, name=f"pipeline-fixture-{fixture['id']}", daemon=True).start()
    try:
        # A little slack beyond the inner deadline, for a replay that blocks the worker's loop outright.
        return await asyncio.wait_for(done, timeout + 0.5)
    except (asyncio.TimeoutError, TimeoutError):
        return None, f"no outcome within {timeout:g} s (the adapter blocked its event loop)", True


async def record_pipeline(factory: Callable | None, *, adapter: str = "", fixtures: list[dict] | None = None,
                          timeout: float = DEFAULT_TIMEOUT, unavailable: str | None = None) -> PipelineRecording:
    """Replay every fixture through `factory`, twice; never raises for the adapter's fault."""
    rec = PipelineRecording(adapter=adapter or getattr(factory, "__qualname__", repr(factory)))
    fixtures = load_fixtures() if fixtures is None else fixtures
    for fx in fixtures:
        rec.exchanges[fx["id"]] = FixtureRun(fx)
    if unavailable or factory is None or not callable(factory):
        rec.unavailable = unavailable or f"the adapter is not callable: {factory!r}"
        rec.fatal = rec.unavailable
        return rec
    hangs = 0
    for attempt in ("first", "repeat"):
        for fx in fixtures:
            run = rec.exchanges[fx["id"]]
            if hangs >= HANG_LIMIT:
                outcome, error = None, f"not run: the adapter already hung on {hangs} fixture runs"
            else:
                outcome, error, timed_out = await _run_bounded(factory, fx, timeout)
                hangs += timed_out
            if attempt == "first":
                run.actual, run.error = outcome, error
            else:
                run.repeat, run.repeat_error = outcome, error
    if hangs:
        rec.fatal = f"the adapter hung on {hangs} fixture run(s)"
    return rec


def record_pipeline_sync(factory: Callable | None, **kw) -> PipelineRecording:
    return asyncio.run(record_pipeline(factory, **kw))


def record_adapter(spec: str, **kw) -> PipelineRecording:
    """`module:factory` -> a recording; an adapter that cannot be imported makes every check fail with why."""
    try:
        factory = load_adapter(spec)
    except Exception as exc:  # noqa: BLE001 - an import error in the adapter is reported, not raised
        return record_pipeline_sync(None, adapter=spec, unavailable=f"adapter {spec} unavailable: {_describe(exc)}",
                                    **kw)
    return record_pipeline_sync(factory, adapter=spec, **kw)


# ------------------------------------------------------------------------------------------ judging

def differences(expected: dict, actual: dict) -> list[str]:
    """What in `actual` disagrees with the fields `expected` states (pure; [] when it agrees)."""
    if "error" in actual:
        return [actual["error"]]
    if expected.get("configurationError"):
        if "configurationError" in actual:
            return []
        return ["the pipeline was built and ran: the configuration should have been rejected (ValueError)"]
    if "configurationError" in actual:
        return [f"the configuration was rejected: {actual['configurationError']}"]
    out = []
    if actual["allowed"] != expected["allowed"]:
        out.append(f"allowed is {actual['allowed']}, expected {expected['allowed']}")
    if "stages" in expected and actual["stages"] != expected["stages"]:
        out.append(f"stages ran {actual['stages']}, expected {expected['stages']}")
    if expected["allowed"] and "response" in expected and canonical(actual["response"]) != canonical(
            expected["response"]):
        out.append("the final response differs")
    if not expected["allowed"]:
        wanted = expected.get("reasonContains", [])
        reason = actual.get("reason") or ""
        missing = [w for w in ([wanted] if isinstance(wanted, str) else wanted) if w not in reason]
        if missing:
            out.append(f"the reason {reason!r} does not contain {missing}")
    if "audit" in expected:
        got = actual.get("audit", [])
        if [a.get("plugin") for a in got] != [e["plugin"] for e in expected["audit"]]:
            out.append(f"audit records came from {[a.get('plugin') for a in got]}, "
                       f"expected {[e['plugin'] for e in expected['audit']]}")
        else:
            for want, have in zip(expected["audit"], got):
                if "response" in want and canonical(want["response"]) != canonical(have.get("response")):
                    out.append(f"{want['plugin']} saw a different response")
    return out


def _shown(expected: dict, actual: dict) -> dict:
    """The actual outcome cut to the fields the fixture states, for a readable expected/actual pair."""
    if "error" in actual or "configurationError" in actual:
        return actual
    keys = [k for k in ("allowed", "response", "reason", "stages", "audit") if k in expected or (
        k == "reason" and "reasonContains" in expected)]
    return {k: actual.get(k) for k in keys}


def judge_fixtures(rec: PipelineRecording, check_id: str) -> str:
    runs = rec.runs_for(check_id)
    if not runs:
        raise NotObserved(f"no fixture serves {check_id}")
    for run in runs:
        actual = run.observed()
        diffs = differences(run.fixture["expected"], actual)
        if diffs:
            raise Violation(f"fixture {run.id} ({run.fixture['description']}): {'; '.join(diffs)}",
                            expected=run.fixture["expected"], actual=_shown(run.fixture["expected"], actual))
    return f"{len(runs)} fixture(s) as expected: {', '.join(r.id for r in runs)}"


def judge_predictable(rec: PipelineRecording) -> str:
    runs = [rec.run(fid) for fid in rec.exchanges]
    for run in runs:
        if run.error or run.repeat_error:
            continue  # an adapter fault is its own fixture's failure, not a sign of unpredictability
        if canonical(run.actual) != canonical(run.repeat):
            raise Violation(f"fixture {run.id}: a second replay with a freshly built pipeline gave another outcome",
                            expected=run.actual, actual=run.repeat)
    compared = [r for r in runs if not (r.error or r.repeat_error)]
    if not compared:
        raise NotObserved("no fixture produced an outcome twice")
    return f"{len(compared)} fixture(s) replayed twice with the same outcome"


# (slug, what the suite does, what the gateway must do)
CHECKS = [
    ("chained-input",
     "Replays chains of appending, uppercasing, passing and recording plugins and compares what each saw and "
     "the final response.",
     "Process a response through the plugins one after another, each receiving the previous plugin's output "
     "(not the original), and return the last output."),
    ("ascending-priority",
     "Replays plugins whose priorities differ from their definition order, middleware and security mixed.",
     "Run middleware and security plugins as one pipeline sorted by priority, lower numbers first."),
    ("default-priority",
     "Replays a plugin without a priority next to one with priority 50, in both definition orders.",
     "Give a plugin without a priority the default priority 50."),
    ("priority-range-enforced",
     "Builds pipelines with priorities -1 and 101 (and the boundaries 0 and 100).",
     "Accept priorities 0-100 and reject any other priority when the pipeline is configured."),
    ("equal-priority-definition-order",
     "Replays plugins of one kind with equal priorities, defined in non-alphabetical order.",
     "Run plugins of equal priority in the order they are defined."),
    ("middleware-before-security-on-ties",
     "Replays a security plugin defined before a middleware plugin of the same priority.",
     "At equal priority, run middleware plugins before security plugins, as Gatekit 0.3.0 does."),
    ("block-stops-chain",
     "Replays a block in the middle of a chain, and two blocks in a row.",
     "Stop processing at the first plugin that blocks: the response is not delivered and later plugins "
     "never run."),
    ("block-reason-names-plugin",
     "Replays a blocking plugin and reads the outcome's reason.",
     "Give a blocked response a reason that names the plugin that blocked it."),
    ("block-reason-carried",
     "Replays a blocking plugin with a reason of its own and reads the outcome's reason.",
     "Carry the blocking plugin's own reason text into the blocked outcome."),
    ("auditors-after-pipeline",
     "Replays auditing plugins defined first and with a low priority, on allowed and blocked responses.",
     "Keep auditing plugins out of the processing pipeline: they run after it completes, whatever their "
     "priority, and are not processing stages."),
    ("auditors-definition-order",
     "Replays several auditing plugins defined in non-alphabetical order.",
     "Run auditing plugins in definition order."),
    ("auditors-see-final-response",
     "Replays auditing plugins after modifying plugins and compares what the auditors recorded.",
     "Show auditing plugins the final response the pipeline produced."),
    ("auditors-cannot-modify",
     "Replays an auditing plugin that tries to change the response it is shown.",
     "Deliver the pipeline's final response unchanged by anything an auditing plugin does."),
    ("raising-plugin-fails-closed",
     "Replays a middleware and a security plugin that raise an exception.",
     "Block a response when a plugin raises (fail closed), naming the plugin, and run no later plugin."),
]


def _register(slug: str, does: str, must: str) -> None:
    check_id = PREFIX + slug

    def judge(rec: PipelineRecording) -> str:
        return judge_fixtures(rec, check_id)

    judge.__name__ = f"judge_{slug.replace('-', '_')}"
    check(check_id, does=does, must=must)(judge)


if __name__ != "__main__":  # run with -m, the package has already registered the canonical module's checks
    for _slug, _does, _must in CHECKS:
        _register(_slug, _does, _must)

    check(PREFIX + "predictable",
          does="Replays every fixture a second time with a freshly built pipeline.",
          must="Give the same stage order and outcome for the same plugins and input every time.")(judge_predictable)

CHECK_IDS = tuple(PREFIX + slug for slug, _, _ in CHECKS) + (PREFIX + "predictable",)


def verdicts(rec: PipelineRecording) -> list[dict]:
    """Every pipeline check's Result, as report JSON."""
    from ..model import REGISTRY
    from ..runner import evaluate

    return [evaluate(REGISTRY[cid], rec).to_json() for cid in CHECK_IDS]


def main(argv: list[str] | None = None) -> int:
    """`python -m conformance.gateway.pipeline module:factory`: replay the fixtures, print the verdicts as JSON.
    A thin entry for interpreters that hold a gateway the suite's own environment cannot install."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(prog="python -m conformance.gateway.pipeline")
    parser.add_argument("adapter", help="module:factory")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds per fixture run")
    args = parser.parse_args(argv)
    json.dump(verdicts(record_adapter(args.adapter, timeout=args.timeout)), sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    from conformance.gateway.pipeline import main as _main  # the registered module, not this __main__ copy

    raise SystemExit(_main())
