"""Host role, profile `augmentation` (PR #142): the application applies augmentation hints.

Scenario `augmentation/hints`: a server advertising only `augmentation`, with
three augmentations chained by priority: `scenario_replace` (hint `replace`,
returns REPLACED-<nonce>), then `scenario_prepend` (PREPENDED-<nonce>), then
`scenario_append` (APPENDED-<nonce>). Applied as named, the model's user
message is PREPENDED, REPLACED, APPENDED in that order, without the user's
ORIGINAL-<nonce>. Last, `scenario_filter` (hint `filter`, the harness's reading
of the PR's tool-relevance example) names scenario_keep (relevance 0.9),
scenario_also (none) and scenario_drop (0.1), the server's three tools: the
model is offered the first two only, and the message is left as it was.
"""

from __future__ import annotations

from ..core.judging import match_name
from ..core.model import NotObserved, Violation, check
from .common import ScenarioPlan, wire_check
from .recording import HostRecording, last_user_message, offer_problems, tool_names

PROFILE = "augmentation"
SCENARIO = "augmentation/hints"
SCENARIOS = (SCENARIO,)
AUGMENTATIONS = ("scenario_replace", "scenario_prepend", "scenario_append", "scenario_filter")
KEPT, DROPPED = ("scenario_keep", "scenario_also"), ("scenario_drop",)


def _user_message(rec: HostRecording) -> tuple[str, str]:
    run = rec.cite(SCENARIO, turns_needed=0)
    augments = run.calls(1, "augmentation/augment")
    if not augments:
        raise NotObserved(f"the host never called augmentation/augment{'; ' + run.fatal if run.fatal else ''}")
    requests = run.model_in(1)
    if not requests:
        raise NotObserved("the host sent the model no request")
    # Only the hint is judged here: an augmentation that ran after the model request shows up as a hint
    # missing from that request's text, not as a timing verdict smuggled into three hint checks.
    return last_user_message(requests[0].body), run.nonce


def _order(text: str, first: str, second: str, nonce: str) -> bool:
    a, b = text.find(f"{first}-{nonce}"), text.find(f"{second}-{nonce}")
    return 0 <= a < b


@check("augmentation/host/replace-hint-applied",
       does="chains scenario_replace (hint replace) first and reads the model's user message",
       must="content hinted `replace` takes the place of the original context")
def replace_applied(rec: HostRecording):
    text, nonce = _user_message(rec)
    if f"REPLACED-{nonce}" not in text or f"ORIGINAL-{nonce}" in text:
        raise Violation("the replace hint was not applied", expected=f"REPLACED-{nonce} without ORIGINAL-{nonce}",
                        actual=text)


@check("augmentation/host/prepend-hint-applied",
       does="chains scenario_prepend (hint prepend) after scenario_replace and reads the model's user message",
       must="content hinted `prepend` goes before the current context")
def prepend_applied(rec: HostRecording):
    text, nonce = _user_message(rec)
    if not _order(text, "PREPENDED", "REPLACED", nonce):
        raise Violation("the prepend hint was not applied", expected=f"PREPENDED-{nonce} before REPLACED-{nonce}",
                        actual=text)


@check("augmentation/host/append-hint-applied",
       does="chains scenario_append (hint append) last and reads the model's user message",
       must="content hinted `append` goes after the current context")
def append_applied(rec: HostRecording):
    text, nonce = _user_message(rec)
    if not _order(text, "REPLACED", "APPENDED", nonce):
        raise Violation("the append hint was not applied", expected=f"REPLACED-{nonce} before APPENDED-{nonce}",
                        actual=text)

@check("augmentation/host/filter-hint-applied",
       does="chains scenario_filter (hint filter) last; it names the server's three tools, scenario_keep (relevance "
            "0.9), scenario_also (no relevance) and scenario_drop (0.1); reads the tools and the user message of the "
            "turn's model requests",
       must="content hinted `filter` (the harness's reading): the context stays as it is, and the model is offered "
            "only the named tools whose relevance is absent or at least 0.5")
def filter_applied(rec: HostRecording):
    run = rec.cite(SCENARIO, turns_needed=0)
    if not [e for e in run.calls(1, "augmentation/augment") if e["params"].get("name") == "scenario_filter"]:
        raise NotObserved(f"the host never invoked scenario_filter{'; ' + run.fatal if run.fatal else ''}")
    requests = [r for r in run.model_in(1) if r.valid]
    if not requests:
        raise NotObserved("the host sent the model no request")
    problems = []
    for r in requests:
        problems += offer_problems(r.body, KEPT, DROPPED)
        text = last_user_message(r.body)
        problems += [f"the user message holds {n}" for n in KEPT + DROPPED if n in text]
    if problems:
        raise Violation("the filter hint was not applied", expected={"offered": list(KEPT), "not offered":
                        list(DROPPED), "user message": "unchanged by the filter"}, actual=sorted(set(problems)))
    return f"{', '.join(KEPT)} offered, {', '.join(DROPPED)} left out"


@check("augmentation/host/augmentations-not-offered-as-tools",
       does="reads the tools of every model request in the augmentation scenario",
       must="augmentations are application controlled: never offered to the model as tools")
def not_tools(rec: HostRecording):
    run = rec.cite(SCENARIO, turns_needed=0)
    requests = [r for r in run.model if r.valid]
    if not requests:
        raise NotObserved(f"the host sent the model no request{'; ' + run.fatal if run.fatal else ''}")
    offered = sorted({n for r in requests for n in tool_names(r.body) if any(match_name([n], a) for a in AUGMENTATIONS)})
    if offered:
        raise Violation("augmentations were offered to the model as tools", expected="no augmentation name in tools",
                        actual=offered)
    return f"{len(requests)} model request(s), no augmentation among their tools"


wire_check("augmentation/host/wire-messages-valid", SCENARIOS)
PLAN = ScenarioPlan(SCENARIOS)
