"""Gateway role, sequential-pipeline profile: the checks, judged from the fixture replays (replay.py).

Each check is a small pure function over the recording. It compares the outcome of every fixture whose
`check` is its id with that fixture's `expected` (JSON compared canonically: sorted keys, no
insignificant whitespace) and raises `Violation` naming the first fixture that differs, with expected
and actual. Only the fields a fixture's `expected` states are compared.
"""

from __future__ import annotations

from ..core.judging import canonical_sorted
from ..core.model import NotObserved, Violation, check
from .recording import PipelineRecording
from .replay import ReplayPlan

PROFILE = "sequential-pipeline"
PREFIX = f"{PROFILE}/gateway/"


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
    if expected["allowed"] and "response" in expected and canonical_sorted(actual["response"]) != canonical_sorted(
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
                if "response" in want and canonical_sorted(want["response"]) != canonical_sorted(have.get("response")):
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
    runs = [rec.cite(fid) for fid in rec.exchanges]
    for run in runs:
        if run.error or run.repeat_error:
            continue  # an adapter fault is its own fixture's failure, not a sign of unpredictability
        if canonical_sorted(run.actual) != canonical_sorted(run.repeat):
            raise Violation(f"fixture {run.id}: a second replay with a freshly built pipeline gave another outcome",
                            expected=run.actual, actual=run.repeat)
    compared = [r for r in runs if not (r.error or r.repeat_error)]
    if not compared:
        raise NotObserved("no fixture produced an outcome twice")
    return f"{len(compared)} fixture(s) replayed twice with the same outcome"


# (check id, what the suite does, what the gateway must do)
CHECKS = [
    ("sequential-pipeline/gateway/chained-input",
     "Replays chains of appending, uppercasing, passing and recording plugins and compares what each saw and "
     "the final response.",
     "Process a response through the plugins one after another, each receiving the previous plugin's output "
     "(not the original), and return the last output."),
    ("sequential-pipeline/gateway/ascending-priority",
     "Replays plugins whose priorities differ from their definition order, middleware and security mixed.",
     "Run middleware and security plugins as one pipeline sorted by priority, lower numbers first."),
    ("sequential-pipeline/gateway/default-priority",
     "Replays a plugin without a priority next to one with priority 50, in both definition orders.",
     "Give a plugin without a priority the default priority 50."),
    ("sequential-pipeline/gateway/priority-range-enforced",
     "Builds pipelines with priorities -1 and 101 (and the boundaries 0 and 100).",
     "Accept priorities 0-100 and reject any other priority when the pipeline is configured."),
    ("sequential-pipeline/gateway/equal-priority-definition-order",
     "Replays plugins of one kind with equal priorities, defined in non-alphabetical order.",
     "Run plugins of equal priority in the order they are defined."),
    ("sequential-pipeline/gateway/middleware-before-security-on-ties",
     "Replays a security plugin defined before a middleware plugin of the same priority.",
     "At equal priority, run middleware plugins before security plugins, as Gatekit 0.3.0 does."),
    ("sequential-pipeline/gateway/block-stops-chain",
     "Replays a block in the middle of a chain, and two blocks in a row.",
     "Stop processing at the first plugin that blocks: the response is not delivered and later plugins "
     "never run."),
    ("sequential-pipeline/gateway/block-reason-names-plugin",
     "Replays a blocking plugin and reads the outcome's reason.",
     "Give a blocked response a reason that names the plugin that blocked it."),
    ("sequential-pipeline/gateway/block-reason-carried",
     "Replays a blocking plugin with a reason of its own and reads the outcome's reason.",
     "Carry the blocking plugin's own reason text into the blocked outcome."),
    ("sequential-pipeline/gateway/auditors-after-pipeline",
     "Replays auditing plugins defined first and with a low priority, on allowed and blocked responses.",
     "Keep auditing plugins out of the processing pipeline: they run after it completes, whatever their "
     "priority, and are not processing stages."),
    ("sequential-pipeline/gateway/auditors-definition-order",
     "Replays several auditing plugins defined in non-alphabetical order.",
     "Run auditing plugins in definition order."),
    ("sequential-pipeline/gateway/auditors-see-final-response",
     "Replays auditing plugins after modifying plugins and compares what the auditors recorded.",
     "Show auditing plugins the final response the pipeline produced."),
    ("sequential-pipeline/gateway/auditors-cannot-modify",
     "Replays an auditing plugin that tries to change the response it is shown.",
     "Deliver the pipeline's final response unchanged by anything an auditing plugin does."),
    ("sequential-pipeline/gateway/raising-plugin-fails-closed",
     "Replays a middleware and a security plugin that raise an exception.",
     "Block a response when a plugin raises (fail closed), naming the plugin, and run no later plugin."),
]


def _register(check_id: str, does: str, must: str) -> None:
    assert check_id.startswith(PREFIX), check_id

    def judge(rec: PipelineRecording) -> str:
        return judge_fixtures(rec, check_id)

    judge.__name__ = f"judge_{check_id.removeprefix(PREFIX).replace('-', '_')}"
    check(check_id, does=does, must=must)(judge)


for _check_id, _does, _must in CHECKS:
    _register(_check_id, _does, _must)

check("sequential-pipeline/gateway/predictable",
      does="Replays every fixture a second time with a freshly built pipeline.",
      must="Give the same stage order and outcome for the same plugins and input every time.")(judge_predictable)

CHECK_IDS = tuple(check_id for check_id, _, _ in CHECKS) + ("sequential-pipeline/gateway/predictable",)


def verdicts(rec: PipelineRecording) -> list[dict]:
    """Every pipeline check's Result, as report JSON."""
    from ..core.model import REGISTRY
    from ..core.runner import evaluate

    return [evaluate(REGISTRY[cid], rec).to_json() for cid in CHECK_IDS]

PLAN = ReplayPlan()
