"""Gateway role, sequential-pipeline profile: replaying the fixtures through an adapter (the recording step).

Theory of operation (the contract is conformance/gateway/ADAPTER.md):

- Scenarios are data: one JSON file per scenario in fixtures/pipeline/, valid against
  schemas/pipeline-fixture.json. Each names the check it serves, the catalog rows it exercises, the
  plugins (a behaviour from a small vocabulary, a kind, a priority, a definition order), one
  tools/call request and its response, and the expected outcome.
- `record_pipeline(factory)` builds a fresh pipeline per fixture with `factory(plugins)`, calls
  `await pipeline.process_response(request, response)`, and keeps what came back. Every fixture is
  replayed twice (the second pass feeds `predictable`). Each run happens on a daemon thread with its
  own event loop and a deadline, so an adapter that raises, returns nonsense, or hangs (even without
  ever yielding to the loop) costs that fixture a recorded error and the suite nothing else. After
  `HANG_LIMIT` hangs the remaining runs are not attempted.
- A factory that raises ValueError is a configuration error: what `configurationError: true` fixtures
  expect, and a failure anywhere else. Any other exception is an adapter fault.

The judging is in sequential_pipeline.py. `python -m conformance.gateway.replay module:factory` replays
and judges without the CLI, for interpreters that hold a gateway the suite's own environment cannot install.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import threading
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ..core import schemas_loader
from ..core.adapters import load_adapter
from ..core.judging import canonical_sorted
from .recording import FixtureRun, PipelineRecording

PROFILE = PipelineRecording.PROFILE
FIXTURE_DIR = Path(__file__).resolve().parent / "fixtures" / "pipeline"
SCHEMA = "pipeline-fixture"
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


# ------------------------------------------------------------------------------------------ recording

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
        canonical_sorted(outcome)
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
    return json.loads(canonical_sorted(out))  # detach from anything the adapter still holds


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
        value: tuple[dict | None, str | None, bool]
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
                          timeout: float, unavailable: str | None = None) -> PipelineRecording:
    """Replay every fixture through `factory`, twice, each run bounded by `timeout` seconds (the run's --timeout:
    factory + process_response); never raises for the adapter's fault."""
    rec = PipelineRecording(adapter=adapter or getattr(factory, "__qualname__", repr(factory)))
    fixtures = load_fixtures() if fixtures is None else fixtures
    for fx in fixtures:
        rec.exchanges[fx["id"]] = FixtureRun(fx)
    if unavailable or factory is None or not callable(factory):
        rec.unavailable = rec.fatal = unavailable or f"the adapter is not callable: {factory!r}"
        return rec
    hangs = 0
    outcome: dict | None
    error: str | None
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


@dataclass(frozen=True)
class ReplayPlan:
    """sequential_pipeline's PLAN (core/profile.py): the adapter is driven through every fixture of FIXTURE_DIR
    (load_fixtures); nothing of it varies, so the plan has no fields."""


def record_adapter(spec: str, *, timeout: float, **kw) -> PipelineRecording:
    """`module:factory` -> a recording; an adapter that cannot be imported makes every check fail with why."""
    try:
        factory = load_adapter(spec)
    except Exception as exc:  # noqa: BLE001 - an import error in the adapter is reported, not raised
        return record_pipeline_sync(None, adapter=spec, unavailable=f"adapter {spec} unavailable: {_describe(exc)}",
                                    timeout=timeout, **kw)
    return record_pipeline_sync(factory, adapter=spec, timeout=timeout, **kw)



def _seconds(text: str) -> float:
    """The suite's own check of --timeout, as argparse's type."""
    import argparse

    from ..core.spelling import seconds

    try:
        return seconds(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def main(argv: list[str] | None = None) -> int:
    """`python -m conformance.gateway.replay module:factory`: replay the fixtures, print the verdicts as JSON."""
    import argparse
    import sys

    from ..core import roles
    from ..core.model import REGISTRY
    from ..core.runner import evaluate

    parser = argparse.ArgumentParser(prog="python -m conformance.gateway.replay")
    parser.add_argument("adapter", help="module:factory")
    parser.add_argument("--timeout", type=_seconds, default=roles.GATEWAY.default_timeout,
                        help=f"seconds per fixture run (default {roles.GATEWAY.default_timeout:g})")
    args = parser.parse_args(argv)
    roles.GATEWAY.load()
    rec = record_adapter(args.adapter, timeout=args.timeout)
    results = [evaluate(c, rec).to_json() for cid, c in sorted(REGISTRY.items()) if c.profile == PROFILE]
    json.dump(results, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    from conformance.gateway.replay import main as _main  # the package's module, not this __main__ copy

    raise SystemExit(_main())
