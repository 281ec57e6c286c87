"""Server role, a second kind of target: the interceptors working group's fixtures, replayed through an adapter.

    mcp-ext-conformance server --adapter MODULE:FACTORY --wg-fixtures DIR

The SEP-2624 working group (modelcontextprotocol/experimental-ext-interceptors, `conformance/`) publishes
language-neutral JSON fixtures and a four-function adapter contract. The suite does not ship the fixtures
(their repository names no licence); DIR is a checkout's `conformance/fixtures`.

The adapter contract: `FACTORY(interceptors)` returns a session with `list(event | None) -> result`,
`invoke(params) -> {"ok": True, "result"} | {"ok": False, "errorCode"}` and `chain(event, phase, payload,
session_id) -> {"decision", "finalPayload"}`. A factory that raises NotImplementedError does not offer a
behaviour the fixture names: the fixture is reported as not judged, a reason apart from a wrong answer.
The reference implementation's adapter is `reference_servers.interceptor_chain:wg_adapter`.

Theory of operation
-------------------
- Recording: every fixture file under DIR (any depth; a JSON object with the fixture keys, so
  `manifest.json` is passed over) gets a fresh session and its steps in order, each call's answer kept
  as it came (deep-copied). Each fixture runs on a daemon thread with a deadline (the run's response
  timeout per call), so an adapter that raises, returns nonsense or hangs costs that fixture a recorded
  error and nothing else; after `HANG_LIMIT` hangs the remaining fixtures are not attempted.
- Judging follows the fixtures' own rule, as small pure functions of what was recorded: remove the
  fixture's volatile keys from the answer at every depth, canonicalise it with RFC 8785 (`canonical_rfc8785`),
  compare with `expect.canonical` (or the canonical form of `expect.result` when a fixture omits it);
  `apply` steps compare the decision, then the final payload, scrubbed the same way, with
  `finalPayloadCanonical` (or `finalPayload`), `forbids` and `requires`. A fixture passes when every step
  passes.
- Checks are fixed, one per fixture kind the working group's fixture schema allows (`protocol`,
  `behavior`): `interceptors/server/wg-protocol-fixtures` and `interceptors/server/wg-behavior-fixtures`.
  Their ids never depend on the files a user passes; each judges every fixture of its kind, cites each
  one (the report shows what went in and what came out), and names every failing fixture in its reason.
  A kind with no fixture in DIR skips; fixtures whose behaviour the adapter lacks are reported in the
  note, and when that is all of them the check skips; any failing fixture fails it.
- Vocabulary: the working group renamed the `chain` step `apply` and the enforcing mode `enforce`
  `active`. Both spellings are read; each fixture's evidence says which it uses (`vocabulary`), and the
  verdict tallies them, so a run shows which generation of the fixtures it judged.

The checks are catalogued under the source "WG conformance suite" in conformance/requirements/interceptors.yaml.
They judge only recordings of this kind (`target_kind` "wg-fixtures"); a live server's checks skip here and
these skip on a live server (conformance/core/model.py, `Check.target`).
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..core.adapters import load_adapter
from ..core.judging import canonical_rfc8785
from ..core.model import NotApplicable, Violation, check, describe
from ..core.recording import Citing
from ..targets.base import clip

PROFILE = "interceptors"
TARGET_KIND = "wg-fixtures"
KINDS = ("protocol", "behavior")  # the working group's fixture schema allows these two
FIXTURE_KEYS = ("id", "kind", "requirement", "interceptors", "steps", "volatile")
APPLY_OPS = ("apply", "chain")  # "chain" is the step's name in the fixtures before the working group renamed it
GENERATION = {"apply": "newer", "active": "newer", "chain": "older", "enforce": "older"}
HANG_LIMIT = 2  # after this many fixtures without an answer in time, an adapter gets no more chances to hang


class FixtureError(ValueError):
    """The fixtures cannot be read: the run has nothing to judge (a usage problem, not the adapter's)."""


class UnknownStep(Exception):
    """A step whose `op` the fixture format does not have: the fixture's fault, recorded as its failure."""


# ------------------------------------------------------------------------------------------ fixtures

def load_fixtures(directory: Path) -> list[tuple[str, dict]]:
    """(path relative to `directory`, fixture) of every fixture file under it, sorted by path."""
    if not directory.is_dir():
        raise FixtureError(f"{directory} is not a directory")
    fixtures = []
    for path in sorted(directory.rglob("*.json")):
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise FixtureError(f"{path}: not readable as JSON: {exc}") from None
        if not (isinstance(doc, dict) and all(key in doc for key in FIXTURE_KEYS)):
            continue  # manifest.json and other files are not fixtures
        if doc["kind"] not in KINDS:
            raise FixtureError(f"{path}: kind {doc['kind']!r} is neither of the working group's {' nor '.join(KINDS)}")
        shapes = {"id": isinstance(doc["id"], str), "steps": _objects(doc["steps"]) and bool(doc["steps"]),
                  "interceptors": _objects(doc["interceptors"]), "volatile": isinstance(doc["volatile"], list)}
        if not all(shapes.values()):
            raise FixtureError(f"{path}: malformed {', '.join(k for k, ok in shapes.items() if not ok)} "
                               "(the working group's fixture schema)")
        fixtures.append((path.relative_to(directory).as_posix(), doc))
    if not fixtures:
        raise FixtureError(f"no working group fixtures under {directory} (give its conformance/fixtures directory)")
    return fixtures


def _objects(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, dict) for item in value)


def vocabulary(fixture: dict) -> dict:
    """Which of the working group's spellings a fixture uses: `apply`/`chain` steps, `active`/`enforce` modes.

    `generation` is "newer" (apply, active), "older" (chain, enforce), "mixed", or "either" when the
    fixture uses neither word (both generations read it alike)."""
    words = {step.get("op") for step in fixture.get("steps") or () if isinstance(step, dict)}
    words |= {item.get("mode") for item in fixture.get("interceptors") or () if isinstance(item, dict)}
    used = sorted(w for w in words if w in GENERATION)
    eras = {GENERATION[w] for w in used}
    return {"words": used, "generation": eras.pop() if len(eras) == 1 else "mixed" if eras else "either"}


# ------------------------------------------------------------------------------------------ recording

@dataclass
class FixtureReplay:
    """One fixture, replayed: what went in and each call's answer, as the adapter gave it."""

    file: str
    fixture: dict
    answers: list[dict] = field(default_factory=list)  # per step: {"value": ...} or {"raised": "..."}
    error: str | None = None  # createSession raised, or the fixture ran out of time: no (more) answers
    lacks: str | None = None  # the factory raised NotImplementedError: a behaviour the adapter does not offer
    duration: float = 0.0

    @property
    def id(self) -> str:
        return self.fixture["id"]

    @property
    def kind(self) -> str:
        return self.fixture["kind"]

    def to_report(self) -> dict:
        """The Exchange shape of results.json: the fixture that went in, the adapter's answers that came out."""
        fx = self.fixture
        request = {"file": self.file, "id": fx["id"], "kind": fx["kind"], "requirement": fx["requirement"],
                   "description": fx.get("description") or "", "vocabulary": vocabulary(fx),
                   "interceptors": fx["interceptors"], "steps": fx["steps"]}
        failure = f"adapter lacks behaviour {self.lacks}" if self.lacks else self.error
        return {"label": f"fixture {fx['id']}", "request": request, "response": {"answers": self.answers},
                "failure": failure, "elapsedSeconds": round(self.duration, 6)}


@dataclass
class WgFixtureRecording(Citing):
    """The working group's fixtures replayed through one adapter (conformance.core.recording.Recording)."""

    profile: str = PROFILE
    target_kind: str = TARGET_KIND
    adapter: str = ""
    directory: str = ""
    unavailable: str | None = None  # the adapter cannot be loaded or the fixtures read: every check fails with it
    init_failed: bool = False
    fatal: str | None = None
    claimed: bool = True  # replaying the fixtures claims the profile
    claimed_by: str | None = "option"
    claim_reason: str = "the working group's fixtures were replayed through the adapter"
    by_option: bool = True
    exchanges: dict[str, FixtureReplay] = field(default_factory=dict)

    def has_fixture(self, need: str) -> bool:
        return True  # the fixtures are the run's own data

    def replays_of(self, kind: str) -> list[FixtureReplay]:
        """Every fixture of `kind`, each cited."""
        return [self.cite(label) for label, r in self.exchanges.items() if r.kind == kind]


def _settled(value: Any) -> Any:
    """An adapter may answer with an awaitable; the worker thread has no loop of its own running, so run one."""
    if not inspect.isawaitable(value):
        return value

    async def wait():
        return await value

    return asyncio.run(wait())


def _call(session: Any, step: dict) -> Any:
    op = step.get("op")
    if op == "list":
        return session.list(step.get("event"))
    if op == "invoke":
        return session.invoke(step["params"])
    if op in APPLY_OPS:
        context = step.get("context") or {}
        return session.chain(step["event"], step["phase"], step["payload"], context.get("sessionId"))
    raise UnknownStep(f"unknown step op {op!r}")


def _replay(factory: Callable, replay: FixtureReplay) -> None:
    """Run one fixture on the calling thread, filling `replay` as it goes; never raises."""
    try:
        session = _settled(factory(copy.deepcopy(replay.fixture["interceptors"])))
    except NotImplementedError as exc:  # the adapter's way to say it does not offer a named behaviour
        replay.lacks = str(exc) or type(exc).__name__
        return
    except Exception as exc:  # noqa: BLE001 - an adapter that cannot host the fixture fails it, with the reason
        replay.error = f"createSession failed: {describe(exc)}"
        return
    for step in replay.fixture["steps"]:
        try:
            replay.answers.append({"value": copy.deepcopy(_settled(_call(session, copy.deepcopy(step))))})
        except UnknownStep as exc:
            replay.answers.append({"raised": str(exc)})
        except Exception as exc:  # noqa: BLE001 - whatever the adapter does is recorded, never raised
            replay.answers.append({"raised": f"the adapter raised {describe(exc)}"})


def _replay_bounded(factory: Callable, replay: FixtureReplay, timeout: float) -> bool:
    """Replay on a daemon thread with a deadline of `timeout` per call; True when it ran out of time."""
    shadow = FixtureReplay(replay.file, replay.fixture)  # the worker fills its own copy: a late answer lands nowhere
    worker = threading.Thread(target=_replay, args=(factory, shadow), name=f"wg-fixture-{replay.id}", daemon=True)
    started = time.perf_counter()
    worker.start()
    limit = timeout * (1 + len(replay.fixture["steps"]))
    worker.join(limit)
    replay.duration = time.perf_counter() - started
    replay.answers, replay.lacks = list(shadow.answers), shadow.lacks
    if worker.is_alive():
        replay.error = f"no answer within {limit:g} s (step {len(replay.answers)} of {len(replay.fixture['steps'])})"
        return True
    replay.error = shadow.error
    return False


def record(factory: Callable | None, directory: Path, *, adapter: str = "", timeout: float,
           unavailable: str | None = None) -> WgFixtureRecording:
    """Replay every fixture under `directory` through `factory`; never raises for the adapter's fault."""
    rec = WgFixtureRecording(adapter=adapter or getattr(factory, "__qualname__", repr(factory)),
                             directory=str(directory))
    if unavailable is None:
        try:
            for file, fixture in load_fixtures(directory):
                label = fixture["id"] if fixture["id"] not in rec.exchanges else f"{fixture['id']} ({file})"
                rec.exchanges[label] = FixtureReplay(file, fixture)
        except FixtureError as exc:
            unavailable = f"cannot replay the working group's fixtures: {exc}"
    if unavailable is None and (factory is None or not callable(factory)):
        unavailable = f"the adapter is not callable: {factory!r}"
    if unavailable or factory is None:  # a None factory has its reason just above
        rec.unavailable = rec.fatal = unavailable
        return rec
    hangs = 0
    for replay in rec.exchanges.values():
        if hangs >= HANG_LIMIT:
            replay.error = f"not run: the adapter already hung on {hangs} fixtures"
            continue
        hangs += _replay_bounded(factory, replay, timeout)
    if hangs:
        rec.fatal = f"the adapter hung on {hangs} fixture(s)"
    return rec


def record_adapter(spec: str, directory: Path, *, timeout: float) -> WgFixtureRecording:
    """`module:factory` -> a recording; an adapter that cannot be imported makes every check fail with why."""
    try:
        factory = load_adapter(spec)
    except Exception as exc:  # noqa: BLE001 - an import error in the adapter is reported, not raised
        return record(None, directory, adapter=spec, unavailable=f"adapter {spec} unavailable: {describe(exc)}",
                      timeout=timeout)
    return record(factory, directory, adapter=spec, timeout=timeout)


def record_run(adapter: str, fixtures: str, profiles, *, timeout: float, say=None) -> dict[str, WgFixtureRecording]:
    """The plugin's entry for a server run whose target is an adapter: {profile: recording} of the profiles asked
    for (the replay records the interceptors profile only)."""
    if PROFILE not in profiles:
        return {}
    if say:
        say(f"replaying the interceptors working group's fixtures in {fixtures} through {adapter}")
    rec = record_adapter(adapter, Path(fixtures), timeout=timeout)
    if say and not rec.unavailable:
        tally = {kind: sum(r.kind == kind for r in rec.exchanges.values()) for kind in KINDS}
        say(f"  {len(rec.exchanges)} fixture(s): " + ", ".join(f"{n} {kind}" for kind, n in tally.items())
            + f"; vocabulary {generations(rec.exchanges.values())}" + (f"; {rec.fatal}" if rec.fatal else ""))
    return {PROFILE: rec}


def target_description(adapter: str, fixtures: str) -> dict:
    """results.json's `target` for such a run."""
    return {"kind": "adapter", "adapter": adapter, "fixtures": fixtures}


# ------------------------------------------------------------------------------------------ judging

def scrub(value: Any, volatile: set[str]) -> Any:
    """The value without any key named in `volatile`, at every depth."""
    if isinstance(value, dict):
        return {k: scrub(v, volatile) for k, v in value.items() if k not in volatile}
    if isinstance(value, list):
        return [scrub(v, volatile) for v in value]
    return value


def _expected(expect: dict, key: str, value_key: str) -> str:
    """The fixture's precomputed canonical string, or the canonical form of the value it stands for."""
    return expect[key] if key in expect else canonical_rfc8785(expect[value_key])


def _canonical(value: Any, volatile: set[str]) -> str:
    return canonical_rfc8785(scrub(value, volatile))


def step_failure(step: dict, answer: dict, volatile: set[str]) -> str | None:
    """None when the recorded answer meets the step's expectation, else why not."""
    op, expect = step.get("op"), step.get("expect") or {}
    if "raised" in answer:
        return f"{op}: {answer['raised']}"
    got = answer["value"]
    try:
        if op == "list":
            actual, wanted = _canonical(got, volatile), _expected(expect, "canonical", "result")
            return None if actual == wanted else f"list: expected {wanted}, got {actual}"
        if op == "invoke":
            if not isinstance(got, dict) or not isinstance(got.get("ok"), bool):
                return f"invoke: the adapter answered {got!r}, not {{ok, result}} or {{ok, errorCode}}"
            if "errorCode" in expect:
                if got["ok"]:
                    return f"invoke: expected JSON-RPC error {expect['errorCode']}, got a result"
                return None if got.get("errorCode") == expect["errorCode"] else \
                    f"invoke: expected error {expect['errorCode']}, got {got.get('errorCode')}"
            if not got["ok"]:
                return f"invoke: expected a result, got error {got.get('errorCode')}"
            actual, wanted = _canonical(got.get("result"), volatile), _expected(expect, "canonical", "result")
            return None if actual == wanted else f"invoke: expected {wanted}, got {actual}"
        if op in APPLY_OPS:
            if not isinstance(got, dict):
                return f"{op}: the adapter answered {got!r}, not {{decision, finalPayload}}"
            if got.get("decision") != expect.get("decision"):
                return f"{op}: expected decision {expect.get('decision')}, got {got.get('decision')}"
            final = _canonical(got.get("finalPayload"), volatile)
            if "finalPayloadCanonical" in expect or "finalPayload" in expect:
                wanted = _expected(expect, "finalPayloadCanonical", "finalPayload")
                if final != wanted:
                    return f"{op}: expected final payload {wanted}, got {final}"
            absent = [s for s in expect.get("forbids") or () if s in final]
            missing = [s for s in expect.get("requires") or () if s not in final]
            if absent or missing:
                return f"{op}: final payload {final} contains {absent} / lacks {missing}"
            return None
    except (TypeError, ValueError) as exc:  # rfc8785 refuses what is not JSON (a NaN, a set, a non-string key)
        return f"{op}: the answer is not JSON: {exc}"
    return f"unknown step op {op!r}"


def fixture_failures(replay: FixtureReplay) -> list[dict]:
    """[{step, reason}] of a replayed fixture; empty when it passed or was not judged (`lacks`)."""
    if replay.lacks:
        return []
    volatile = set(replay.fixture.get("volatile") or ())
    out = [{"step": index, "reason": why} for index, (step, answer)
           in enumerate(zip(replay.fixture["steps"], replay.answers))
           if (why := step_failure(step, answer, volatile))]
    if replay.error:
        out.append({"step": len(replay.answers) if replay.answers else None, "reason": replay.error})
    return out


def generations(replays) -> str:
    """"8 newer (apply/active), 2 older (chain/enforce), 4 either": the vocabulary of the fixtures judged."""
    counts: dict[str, int] = {}
    for replay in replays:
        generation = vocabulary(replay.fixture)["generation"]
        counts[generation] = counts.get(generation, 0) + 1
    labels = {"newer": "newer (apply/active)", "older": "older (chain/enforce)", "mixed": "mixed",
              "either": "either (no apply/chain step, no active/enforce mode)"}
    return ", ".join(f"{counts[g]} {labels[g]}" for g in labels if g in counts)


def judge_kind(rec: WgFixtureRecording, kind: str) -> str:
    """Every fixture of `kind` passes; the note tallies them, the vocabulary, and what was not judged."""
    replays = rec.replays_of(kind)
    if not replays:
        raise NotApplicable(f"no {kind} fixtures among the {len(rec.exchanges)} in {rec.directory}")
    failing = [(r, f) for r in replays if (f := fixture_failures(r))]
    lacking = [r for r in replays if r.lacks]
    if failing:
        raise Violation(
            f"{len(failing)} of {len(replays)} {kind} fixtures failed: " + "; ".join(
                f"{r.id} ({vocabulary(r.fixture)['generation']} vocabulary) step {f[0]['step']}: "
                f"{clip(f[0]['reason'], 240)}" for r, f in failing),
            actual=[{"fixture": r.id, "file": r.file, "requirement": r.fixture["requirement"],
                     "vocabulary": vocabulary(r.fixture), "failures": f} for r, f in failing])
    not_judged = "; ".join(f"{r.id}: adapter lacks behaviour {r.lacks}" for r in lacking)
    if len(lacking) == len(replays):
        raise NotApplicable(f"the adapter lacks a behaviour of every {kind} fixture: {not_judged}")
    judged = [r for r in replays if not r.lacks]
    note = f"{len(judged)}/{len(replays)} {kind} fixtures passed; vocabulary {generations(judged)}"
    return note + (f"; not judged: {not_judged}" if lacking else "")


@check("interceptors/server/wg-protocol-fixtures", target=TARGET_KIND,
       does="replays every protocol fixture of the working group's suite (interceptors/list, interceptor/invoke "
            "and chain semantics) through the adapter and compares each step's answer as RFC 8785 canonical JSON",
       must="every protocol fixture passes every step: the exact wire result, error code, or chain decision and "
            "final payload the fixture states")
def wg_protocol_fixtures(rec: WgFixtureRecording):
    return judge_kind(rec, "protocol")


@check("interceptors/server/wg-behavior-fixtures", target=TARGET_KIND,
       does="replays every behavior fixture of the working group's suite (the flows a security interceptor "
            "must handle) through the adapter, each with its session context",
       must="every behavior fixture whose behaviours the adapter offers passes every step: the decision, the "
            "final payload, and the substrings it forbids or requires")
def wg_behavior_fixtures(rec: WgFixtureRecording):
    return judge_kind(rec, "behavior")
