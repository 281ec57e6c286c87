"""The hand tool: one interceptor or middleware request, sent to a server and judged on the spot.

    mcp-ext-conformance interceptors list   TARGET [--event E]
    mcp-ext-conformance interceptors invoke NAME --event E --phase P --payload JSON|@FILE [--config JSON]
                                            [--timeout-ms N] TARGET
    mcp-ext-conformance middleware list     TARGET
    mcp-ext-conformance middleware invoke   NAME --context JSON|@FILE [--arguments JSON] TARGET

TARGET is `--command CMD` (stdio) or `--url URL` (Streamable HTTP), as for the server role. For trying an
interceptor by hand while writing it, the way a conformance run would see it: the tool connects
(`initialize`), lists (every page), sends the one request asked for, prints what came back, and judges that
exchange with the server role's own judges: the result's schema and its ValidationResult/MutationResult
branch against the listed type, the refusal of a name that is not listed or an event and phase that are not
hooked, the JSON-RPC error object. Exit 0 when nothing is wrong, 1 when something is, 2 when the target
cannot be reached or the request cannot be built.

Nothing here is a check of its own: a full run (`mcp-ext-conformance server`) judges far more (fixtures,
timeouts, the wire). What is said here as a `problem` is what the same run would fail; what is a `note` it
would report at most as a warning.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..client.recording import Recording
from ..client.session import Session
from .common import shape_violations
from .hand_arguments import TARGET_OPTIONS
from .interceptors import EXTENSION_ID, INVOKE, LIST, result_shape_problems

MIDDLEWARE_CAPABILITY = "contextMiddleware"
TIMEOUT_DATA = ("interceptor", "timeoutMs", "phase")  # the SEP's timeout error example carries these


@dataclass
class Verdict:
    """What the one exchange showed: the problems a run would fail, and notes it would at most warn about."""

    request: dict | None = None
    response: Any = None
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    summary: str = ""
    table: list[str] | None = None  # a list, one line per item, shown instead of the raw response


def item_line(item: dict) -> str:
    """One listed interceptor or middleware: name, type, hooks by phase, policy."""
    hooks = "; ".join(f"{h.get('phase')}: {', '.join(map(str, h.get('events') or ()))}"
                      for h in item.get("hooks") or () if isinstance(h, dict))
    policy = [f"{key} {json.dumps(item[key])}" for key in ("mode", "failOpen") if key in item]
    return "  ".join(str(part) for part in (item.get("name"), item.get("type") or "", hooks, *policy) if part)


# -- pure judges of one exchange ------------------------------------------------------------------------------

def error_object_problems(error: Any) -> list[str]:
    """A JSON-RPC error object: an integer code and a string message."""
    if not isinstance(error, dict):
        return ["the error is not an object"]
    problems = []
    if not isinstance(error.get("code"), int) or isinstance(error.get("code"), bool):
        problems.append(f"the error's code is not an integer: {error.get('code')!r}")
    if not isinstance(error.get("message"), str):
        problems.append("the error has no string message")
    return problems


def hooks(item: dict | None, event: str, phase: str) -> bool | None:
    """Whether a listed interceptor hooks (event, phase); None where a pattern other than "*" leaves it open
    (what a namespace wildcard or a custom pattern matches is the implementation's to define)."""
    if not isinstance(item, dict):
        return None
    open_pattern = False
    for hook in item.get("hooks") or ():
        if not isinstance(hook, dict) or hook.get("phase") not in (phase, "both"):
            continue
        events = [e for e in hook.get("events") or () if isinstance(e, str)]
        if event in events or "*" in events:
            return True
        open_pattern = open_pattern or any("*" in e for e in events)
    return None if open_pattern else False


def judge_interceptor_list(result: Any, event: str | None) -> Verdict:
    verdict = Verdict(problems=shape_violations("interceptor-list-result", result, "interceptors/list"))
    items = result.get("interceptors") if isinstance(result, dict) else None
    items = [i for i in items or () if isinstance(i, dict)]
    if event is not None:
        for item in items:
            if not any(hooks(item, event, phase) is not False for phase in ("request", "response")):
                verdict.problems.append(f"{item.get('name')!r} is in the list filtered by {event} but hooks "
                                        "neither it nor \"*\"")
    verdict.summary = f"{len(items)} interceptor(s)" + (f" for {event}" if event else "")
    verdict.table = [item_line(i) for i in items]
    return verdict


def judge_interceptor_invoke(listed: dict | None, known: bool, params: dict, response: Any) -> Verdict:
    """`listed`: the interceptor as listed (None when it is not); `known`: whether the list could be read."""
    verdict = Verdict(request=params, response=response)
    name, event, phase = params.get("name"), params.get("event"), params.get("phase")
    hooked = hooks(listed, str(event), str(phase)) if listed is not None else None
    if isinstance(response, dict) and "error" in response:
        error = response["error"]
        verdict.problems += error_object_problems(error)
        code = error.get("code") if isinstance(error, dict) else None
        verdict.summary = f"a JSON-RPC error {code}: {error.get('message') if isinstance(error, dict) else error!r}"
        if known and listed is None and code != -32602:
            verdict.notes.append(f"{name!r} is not listed: the suite expects -32602 (invalid params) for an "
                                 f"unknown interceptor, got {code}")
        if code == -32000 and "timeoutMs" in params:
            data = error.get("data") if isinstance(error, dict) else None
            missing = [k for k in TIMEOUT_DATA if not isinstance(data, dict) or k not in data]
            if missing:
                verdict.notes.append(f"a timeout error without data.{', data.'.join(missing)} (the SEP's example "
                                     "carries interceptor, timeoutMs and phase)")
        return verdict
    if not (isinstance(response, dict) and "result" in response):
        verdict.problems.append("the response has neither a result nor an error")
        return verdict
    result = response["result"]
    if known and listed is None:
        verdict.problems.append(f"{name!r} is not listed, yet the invocation was answered with a result "
                                "(an unknown interceptor is an error)")
    if hooked is False:
        verdict.problems.append(f"{name!r} does not hook {event} in the {phase} phase, yet the invocation was "
                                "answered with a result (it is an error)")
    kind = listed.get("type") if isinstance(listed, dict) else None
    verdict.problems += result_shape_problems(result, kind, "the result")
    is_validation = isinstance(result, dict) and "valid" in result
    if kind in ("validation", "mutation") and (kind == "validation") != is_validation:
        verdict.problems.append(f"a {kind} interceptor answered a "
                                f"{'ValidationResult' if is_validation else 'MutationResult'}")
    if is_validation:
        verdict.summary = f"a ValidationResult: valid {json.dumps(result.get('valid'))}"
        messages = result.get("messages")
        if isinstance(messages, list) and messages:
            verdict.summary += f", {len(messages)} message(s)"
    elif isinstance(result, dict) and "modified" in result:
        verdict.summary = f"a MutationResult: modified {json.dumps(result.get('modified'))}"
    else:
        verdict.summary = "a result of neither branch"
    return verdict


def judge_middleware_list(result: Any) -> Verdict:
    verdict = Verdict(problems=shape_violations("middleware-list-result", result, "middleware/list"))
    items = result.get("middleware") if isinstance(result, dict) else None
    items = [i for i in items or () if isinstance(i, dict)]
    verdict.summary = f"{len(items)} middleware"
    verdict.table = [item_line(i) for i in items]
    return verdict


def judge_middleware_invoke(listed: dict | None, known: bool, params: dict, response: Any) -> Verdict:
    verdict = Verdict(request=params, response=response)
    if isinstance(response, dict) and "error" in response:
        error = response["error"]
        verdict.problems += error_object_problems(error)
        verdict.summary = (f"a JSON-RPC error {error.get('code') if isinstance(error, dict) else ''}: "
                           f"{error.get('message') if isinstance(error, dict) else error!r}")
        return verdict
    if not (isinstance(response, dict) and "result" in response):
        verdict.problems.append("the response has neither a result nor an error")
        return verdict
    if known and listed is None:
        verdict.problems.append(f"{params.get('name')!r} is not listed, yet the invocation was answered with a "
                                "result (an unknown middleware is an error)")
    result = response["result"]
    verdict.problems += shape_violations("middleware-invoke-result", result, "the result")
    content = result.get("content") if isinstance(result, dict) else None
    verdict.summary = f"{len(content) if isinstance(content, list) else 'no'} content block(s)"
    return verdict


# -- the exchange -----------------------------------------------------------------------------------------------

class Unreachable(Exception):
    """The target could not be started or did not complete `initialize` (exit 2)."""


async def exchange(spec, kind: str, action: str, params: dict, event: str | None = None) -> Verdict:
    """Connect, list, send the one request asked for (for `invoke`), and judge it."""
    rec = Recording(profile="hand", target=spec.describe())
    async with spec.connect() as conn:
        session = Session(conn, rec)
        init = await session.initialize()
        if not init.has_result:
            raise Unreachable(f"initialize got {init.outcome_text(200)}")
        interceptors = kind == "interceptors"
        list_method, key = (LIST, "interceptors") if interceptors else ("middleware/list", "middleware")
        notes = []
        advertised = (isinstance(rec.capabilities.get("extensions"), dict)
                      and EXTENSION_ID in rec.capabilities["extensions"]) if interceptors \
            else MIDDLEWARE_CAPABILITY in rec.capabilities
        if not advertised:
            where = f'capabilities.extensions["{EXTENSION_ID}"]' if interceptors else \
                f"capabilities.{MIDDLEWARE_CAPABILITY}"
            notes.append(f"{where} is not advertised in the initialize result")
        if action == "list":
            listed = await session.send("list", list_method, {"event": event} if event else {})
            verdict = (judge_interceptor_list(listed.result, event) if interceptors
                       else judge_middleware_list(listed.result))
            verdict.request, verdict.response = listed.request, listed.response or {"failure": listed.failure}
            if not listed.has_result:
                verdict.problems = [f"{list_method} got {listed.outcome_text(300)}"]
                verdict.summary = "no list"
        else:
            items = await session.list_all(list_method, key, "list")
            known = items is not None
            listed = next((i for i in items or () if isinstance(i, dict) and i.get("name") == params.get("name")),
                          None)
            sent = await session.send("invoke", INVOKE if interceptors else "middleware/invoke", params)
            if sent.failure:
                verdict = Verdict(request=sent.request, response={"failure": sent.failure},
                                  problems=[f"no answer: {sent.failure}"], summary="no answer")
            else:
                judge = judge_interceptor_invoke if interceptors else judge_middleware_invoke
                verdict = judge(listed, known, params, sent.response)
                verdict.request = sent.request
            if not known:
                notes.append(f"{list_method} did not answer a list, so whether the name is listed is unknown")
        verdict.notes = notes + verdict.notes
        return verdict


# -- the command line ---------------------------------------------------------------------------------------------

def json_argument(text: str, what: str) -> Any:
    """A JSON value given inline or as @FILE."""
    source = text
    if text.startswith("@"):
        try:
            with open(text[1:], encoding="utf-8") as handle:
                source = handle.read()
        except OSError as exc:
            raise ValueError(f"{what}: cannot read {text[1:]!r} ({exc.strerror or exc})") from None
    try:
        return json.loads(source)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{what} is not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None


def target_values(args) -> dict:
    """The server role's option values for the target named on the command line (the run's options by
    attribute), from which the CLI builds the TargetSpec as a run would (TargetSpec.from_run)."""
    return {name.replace("-", "_"): getattr(args, name.replace("-", "_")) for name in TARGET_OPTIONS}


def params_from(args) -> dict:
    if args.action == "list":
        return {}
    params: dict[str, Any] = {"name": args.name}
    if args.subcommand == "interceptors":
        params.update(event=args.event, phase=args.phase, payload=json_argument(args.payload, "--payload"))
        if args.config is not None:
            params["config"] = json_argument(args.config, "--config")
        if args.timeout_ms is not None:
            params["timeoutMs"] = args.timeout_ms
    else:
        params["context"] = json_argument(args.context, "--context")
        if args.arguments is not None:
            params["arguments"] = json_argument(args.arguments, "--arguments")
    return params


def render(verdict: Verdict) -> str:
    """What a person reads: the request, the response, then the verdict."""
    lines = ["-> " + json.dumps(verdict.request, ensure_ascii=False)]
    if verdict.table is not None and not verdict.problems:
        lines += ["<- " + line for line in verdict.table]
    else:
        lines.append("<- " + json.dumps(verdict.response, indent=2, ensure_ascii=False).replace("\n", "\n   "))
    lines += [f"problem: {p}" for p in verdict.problems]
    lines += [f"note: {n}" for n in verdict.notes]
    lines.append(f"{'FAIL' if verdict.problems else 'ok'}: {verdict.summary}")
    return "\n".join(lines)


def as_json(verdict: Verdict) -> str:
    return json.dumps({"request": verdict.request, "response": verdict.response, "ok": not verdict.problems,
                       "summary": verdict.summary, "problems": verdict.problems, "notes": verdict.notes},
                      indent=2, ensure_ascii=False)


__all__ = ["Verdict", "Unreachable", "exchange", "params_from", "render", "as_json",
           "judge_interceptor_invoke", "judge_interceptor_list", "judge_middleware_invoke", "judge_middleware_list"]
