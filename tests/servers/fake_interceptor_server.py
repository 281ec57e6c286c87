"""An SDK-free interceptors server (SEP-2624 fixture contract), or one of its mutants that breaks one rule.

    python tests/servers/fake_interceptor_server.py [--break MUTANT | --variant VARIANT] [--plain]

Raw JSON-RPC over stdio on top of the suite's upstream fixture server in its plain form (one tool, no
other extension), so it is an implementation of the `interceptors` fixture contract independent of
reference_servers. Unbroken it passes every interceptors check; each mutant in `MUTANTS` breaks one rule,
and tests/test_interceptor_mutants.py proves it fails exactly the checks listed with it. `--plain` offers
no interceptors (and answers their methods -32601). Each of `VARIANTS` (`--variant X`) is the reverse of a
mutant, an allowed-variant double: it takes another reading a source allows and must still pass every check.
"""

from __future__ import annotations

import os
import sys

if __name__ == "__main__" and os.environ.get("MCPX_DOUBLES_PREFORK"):  # run as that fork server's child
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    from tests.prefork_doubles import hand_over

    hand_over()

import argparse
import copy
import fnmatch
import json
import re
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script from anywhere

from conformance.gateway.upstream import FixtureServer, Log, serve_stdio  # noqa: E402
from conformance.targets.peerkit import RpcError  # noqa: E402

EXT = "io.modelcontextprotocol/interceptors"
P = "interceptors/server/"

MUTANTS = {
    "hidden-capability": ({P + "capability-advertised", P + "supported-events-cover-hooks"}, "serves interceptors without advertising the extension"),
    "events-not-covered": ({P + "supported-events-cover-hooks"}, "supportedEvents omits \"*\" and resources/read"),
    "duplicate-name": ({P + "list-result-valid"}, "lists a real interceptor twice"),
    "enforce-mode": ({P + "list-result-valid", P + "fixtures-declared"},
                     "declares the audit fixture with mode \"enforce\" (the older spelling)"),
    "fail-open-default": ({P + "fixtures-declared"}, "declares conformance_validator failOpen: true"),
    # Unfiltered, the list cannot show what a pattern matches: the wildcard check says it follows from the filter.
    "filter-ignored": ({P + "list-filter-by-event", P + "custom-wildcards-match-as-glob"},
                       "interceptors/list ignores the event filter"),
    "filter-no-wildcard": ({P + "list-filter-by-event"}, "the event filter forgets \"*\" hooks"),
    "real-bad-result": ({P + "invoke-result-valid"}, "a real validator answers valid as a string"),
    "message-without-severity": ({P + "invoke-result-valid"}, "a real validator's messages carry no severity"),
    "bare-results": ({P + "result-names-interceptor-and-phase"}, "results omit interceptor, type and phase"),
    "wrong-phase": ({P + "result-names-interceptor-and-phase"}, "results always say phase \"request\""),
    "validator-lenient": ({P + "validator-reports-violation"}, "the validator calls the marker a warning"),
    "validator-folds": ({P + "validator-reports-violation"}, "the validator folds every violation into one message"),
    "validator-modifies": ({P + "validator-does-not-modify"}, "the validator returns a sanitised payload"),
    "mutator-keys": ({P + "mutator-transforms-payload"}, "the mutator uppercases keys as well"),
    "mutator-patch": ({P + "mutator-transforms-payload"}, "the mutator returns only the changed strings"),
    "always-modified": ({P + "mutator-unchanged-not-modified"}, "the mutator always says modified: true"),
    "wildcard-literal": ({P + "wildcard-hook-any-event"}, "a \"*\" hook only accepts listed MCP events"),
    "hooks-ignored": ({P + "invoke-outside-hooks-rejected"}, "invokes an interceptor for any event and phase"),
    "failure-as-result": ({P + "failure-is-error"}, "a failing interceptor answers a result with modified: false"),
    "failure-code": ({P + "failure-is-error"}, "a failing interceptor answers -32000"),
    "config-unchecked": ({P + "invalid-config-rejected"}, "ignores the validator's configSchema"),
    "config-unknown-keys": ({P + "invalid-config-rejected"}, "ignores config keys its configSchema does not name"),
    "config-required-unchecked": ({P + "invalid-config-rejected"}, "runs without a config key the schema requires"),
    "timeout-ignored": ({P + "timeout-cancels", P + "timeout-error-code", P + "timeout-error-data"},
                        "runs the slow fixture to its end whatever timeoutMs says"),
    "timeout-own-limit": ({P + "timeout-cancels"}, "ignores timeoutMs but stops at a limit of its own (4 s)"),
    "timeout-code": ({P + "timeout-error-code"}, "answers a timeout with -32603"),
    "timeout-bare": ({P + "timeout-error-data"}, "answers a timeout -32000 without data"),
    "timeout-keeps-working": ({P + "timeout-cancels"},
                              "answers -32000 at timeoutMs but runs the slow fixture on, so the next request waits"),
    # The server as an invoker (fixture contract version 5): its guarded tools.
    "invoker-mutates-first": ({P + "invoker-rejects-invalid-call", P + "invoker-validation-error-shape"},
                              "runs the receiving chain mutate-then-validate, as if it were sending"),
    "invoker-tool-error": ({P + "invoker-rejects-invalid-call", P + "invoker-validation-error-shape"},
                           "answers a rejected call with a tool result with isError: true"),
    "invoker-skips-mutations": ({P + "invoker-applies-mutations", P + "invoker-mutation-failure-error"},
                                "runs the validations only, never the mutations (the failing one neither)"),
    "invoker-validation-shape": ({P + "invoker-validation-error-shape"},
                                 "answers a rejected call -32603 with the messages under data.errors"),
    "invoker-fail-open": ({P + "invoker-mutation-failure-error"}, "skips a failing mutation and runs the tool"),
    "invoker-mutation-shape": ({P + "invoker-mutation-failure-error"},
                               "answers a failed mutation -32602 without failedInterceptor or lastValidPayload"),
    "invoker-wrong-last-valid": ({P + "invoker-mutation-failure-error"},
                                 "answers a failed mutation -32603 whose lastValidPayload has lost the arguments"),
    # Known variants (named in the reasons, see NAMED in tests/test_interceptor_mutants.py).
    "nested-validation": ({P + "invoke-result-valid", P + "validator-reports-violation", P + "wildcard-hook-any-event"},
                          "validators answer {validation: {valid, severity, messages}}"),
    "phase-both": ({P + "list-result-valid", P + "fixtures-declared"},
                   "declares the uppercase fixture with one hook of phase \"both\""),
    "singular-list": ({P + "list-result-valid", P + "supported-events-cover-hooks", P + "invoke-result-valid",
                       P + "validator-does-not-modify", P + "custom-wildcards-glob", P + "custom-events-namespaced"},
                      "serves interceptor/list instead of interceptors/list"),
    "plural-invoke": ({P + "invoke-result-valid", P + "result-names-interceptor-and-phase",
                       P + "validator-reports-violation", P + "validator-does-not-modify",
                       P + "mutator-transforms-payload", P + "mutator-unchanged-not-modified",
                       P + "wildcard-hook-any-event", P + "invoke-outside-hooks-rejected", P + "failure-is-error",
                       P + "invalid-config-rejected", P + "timeout-cancels", P + "timeout-error-code",
                       P + "timeout-error-data"},
                      "serves interceptors/invoke instead of interceptor/invoke"),
    "oversized-dies": ({P + "oversized-payload-survived"},
                       "exits, as a server out of memory is killed, on a payload of over 4 Mi characters"),
    "unknown-accepted": ({P + "unknown-interceptor-rejected"}, "an unknown name is answered valid: true"),
    "no-param-validation": ({P + "malformed-invoke-rejected"}, "a missing phase or payload is taken as request/null"),
    "bad-envelope": ({P + "wire-messages-valid"}, "answers interceptors/list with jsonrpc \"1.0\""),
    "custom-wildcard-regex": ({P + "custom-wildcards-glob"},
                              "a real interceptor hooks the regular expression \"tools/(call|list)\", not a glob"),
    "custom-wildcard-regex-match": ({P + "custom-wildcards-match-as-glob"},
                                    "matches hook patterns as regular expressions: \"tools/.*\" selects tools/call"),
    "custom-event-bare": ({P + "custom-events-namespaced"},
                          "a real interceptor hooks the custom event \"usageRecord\" (no namespace)"),
}
# Allowed-variant doubles: name -> (the checks whose source leaves room for it, what it does differently).
VARIANTS = {
    "filter-namespace-wildcard": ({P + "list-filter-by-event", P + "custom-wildcards-glob"},
                                  "a real interceptor hooks \"resources/*\" and the event filter matches it as a glob "
                                  "(SEP-2624 §Hooks: implementations MAY support namespace wildcards)"),
    "filter-exact-only": ({P + "list-filter-by-event"},
                          "a real interceptor hooks \"resources/*\" and the event filter matches \"*\" and exact "
                          "events only (custom wildcards are a MAY)"),
    "paged-lists": ({P + "fixtures-declared", P + "list-filter-by-event", P + "list-result-valid"},
                    "interceptors/list, whole and filtered, one interceptor a page (nextCursor)"),
    "supported-events-expanded": ({P + "supported-events-cover-hooks", P + "list-filter-by-event"},
                                  "supportedEvents lists the events its wildcard hooks reach (tools/call, "
                                  "resources/read, usage/record...) rather than \"*\" and \"tools/*\""),
    "hooks-reversed": ({P + "fixtures-declared"},
                       "declares the uppercase fixture's response hook before its request hook (no order is fixed)"),
}
UNCLAIMED_MUTANTS = {
    "unadvertised-served": ({P + "unadvertised-method-rejected"}, "answers interceptors/list without advertising"),
}
PLAIN_MUTANTS = set(UNCLAIMED_MUTANTS)

INTERCEPTOR_METHODS = {"interceptors/list", "interceptor/invoke", "interceptor/list", "interceptors/invoke"}
EVENT, RESPONSE_ONLY_EVENT, MARKER = "tools/call", "resources/read", "conformance:invalid"
SLOW_SECONDS, OWN_LIMIT_SECONDS = 6.0, 4.0
JSON_TYPES = {"boolean": bool, "string": str, "object": dict, "array": list}
MCP_EVENTS = {"tools/list", "tools/call", "prompts/list", "prompts/get", "resources/list", "resources/read",
              "resources/subscribe", "sampling/createMessage", "elicitation/create", "roots/list", "llm/completion"}


# Guarded tools -> the interceptors the server runs on a call it receives: validations, then mutations.
GUARDS = {"conformance_guarded_echo": ["conformance_validator", "conformance_uppercase"],
          "conformance_guarded_failing": ["conformance_failing"]}


class ToolErrorResult(Exception):
    """A guarded call refused as a tool result with isError: true (a mutant's answer)."""


def hook(events, phase):
    return {"events": list(events), "phase": phase}


def strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def upper(value, keys=False):
    if isinstance(value, str):
        return value.upper()
    if isinstance(value, dict):
        return {(k.upper() if keys else k): upper(v, keys) for k, v in value.items()}
    if isinstance(value, list):
        return [upper(v, keys) for v in value]
    return value


class InterceptorServer(FixtureServer):
    name = "fake-interceptor-server"

    def __init__(self, mutant: str | None, plain: bool, variant: str | None = None):
        super().__init__(plain=True)
        self.m = mutant or ""
        self.variant = variant or ""
        self.offers = not plain
        self.backlog = 0.0  # seconds of timed-out work still running (timeout-keeps-working), served one at a time

    def broken(self, name: str) -> bool:
        return self.m == name

    # -- definitions -------------------------------------------------------------------
    def interceptors(self) -> list[dict]:
        items = [
            {"name": "conformance_validator", "type": "validation", "hooks": [hook([EVENT], "request")],
             "configSchema": {"type": "object", "properties": {"strict": {"type": "boolean"}},
                              "additionalProperties": False}},
            {"name": "conformance_uppercase", "type": "mutation", "priorityHint": {"request": -100, "response": 100},
             "hooks": [hook([EVENT], "request"), hook([EVENT], "response")]},
            {"name": "conformance_audit", "type": "validation", "mode": "audit", "failOpen": True,
             "hooks": [hook(["*"], "request"), hook(["*"], "response")]},
            {"name": "conformance_response_only", "type": "validation", "hooks": [hook([RESPONSE_ONLY_EVENT], "response")]},
            {"name": "conformance_failing", "type": "mutation", "failOpen": False, "hooks": [hook([EVENT], "request")]},
            {"name": "conformance_slow", "type": "validation", "hooks": [hook([EVENT], "request")]},
            # Contract version 6; this server supports no custom pattern, so the hook is a literal event name.
            {"name": "conformance_dot_star", "type": "validation", "hooks": [hook(["tools/.*"], "request")]},
            {"name": "secret-scanner", "description": "a real validator", "type": "validation",
             "hooks": [hook([EVENT, "prompts/get"], "request")],
             "configSchema": {"type": "object", "properties": {"entropy": {"type": "string"}},
                              "additionalProperties": False}},
            {"name": "usage-meter", "description": "a real audit validator on a custom event and a glob",
             "type": "validation", "mode": "audit", "failOpen": True,
             "hooks": [hook(["usage/record", "tools/*"], "request")]},
            {"name": "tenant-gate", "description": "a real validator that needs its tenant", "type": "validation",
             "hooks": [hook(["prompts/get"], "request")],
             "configSchema": {"type": "object", "properties": {"tenant": {"type": "string"}}, "required": ["tenant"]}},
        ]
        if self.variant in ("filter-namespace-wildcard", "filter-exact-only"):
            items.append({"name": "resource-audit", "description": "a real audit validator on every resource event",
                          "type": "validation", "mode": "audit", "failOpen": True,
                          "hooks": [hook(["resources/*"], "response")]})
        if self.variant == "hooks-reversed":
            self.named(items, "conformance_uppercase")["hooks"].reverse()
        if self.broken("custom-wildcard-regex"):
            self.named(items, "usage-meter")["hooks"] = [hook(["usage/record", "tools/(call|list)"], "request")]
        if self.broken("custom-event-bare"):
            self.named(items, "usage-meter")["hooks"] = [hook(["usageRecord", "tools/*"], "request")]
        if self.broken("phase-both"):
            items[1]["hooks"] = [hook([EVENT], "both")]
        if self.broken("duplicate-name"):
            items.append(copy.deepcopy(items[-1]))
        if self.broken("enforce-mode"):
            items[2]["mode"] = "enforce"
        if self.broken("fail-open-default"):
            items[0]["failOpen"] = True
        return items

    @staticmethod
    def named(items, name):
        return next(i for i in items if i["name"] == name)

    def by_name(self, name):
        return next((i for i in self.interceptors() if i["name"] == name), None)

    def capabilities(self) -> dict:
        caps = super().capabilities()
        if self.offers and not self.broken("hidden-capability"):
            events = sorted({e for i in self.interceptors() for h in i["hooks"] for e in h["events"]})
            if self.variant == "supported-events-expanded":
                events = sorted({e for e in events if e != "*" and "*" not in e} | {"tools/list"})
            if self.broken("events-not-covered"):
                events = [e for e in events if e not in ("*", RESPONSE_ONLY_EVENT)]
            caps["extensions"] = {EXT: {"supportedEvents": events}}
        return caps

    # -- guarded tools (fixture contract version 5): this server invokes its own interceptors ----------------------
    def tools(self) -> list[dict]:
        tools = super().tools()
        if self.offers:
            text = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
            tools += [{"name": name, "inputSchema": text} for name in GUARDS]
        return tools

    def call(self, name, args: dict, out: list[dict]) -> dict:
        if not (self.offers and name in GUARDS):
            return super().call(name, args, out)
        payload = {"method": "tools/call", "params": {"name": name, "arguments": args}}
        validators = [n for n in GUARDS[name] if self.by_name(n)["type"] == "validation"]
        mutators = [n for n in GUARDS[name] if n not in validators]
        steps = [mutators, validators] if self.broken("invoker-mutates-first") else [validators, mutators]
        for step in steps:
            for interceptor in step:
                if interceptor in validators:
                    payload = self.validate_guarded(interceptor, payload)
                elif not self.broken("invoker-skips-mutations"):
                    payload = self.mutate_guarded(interceptor, payload)
        arguments = payload["params"]["arguments"]
        return {"content": [{"type": "text", "text": str(arguments.get("text", ""))}]}

    def run_as_declared(self, interceptor: str, payload: dict) -> dict:
        """An interceptor's body as the fixture contract defines it: a mutant of a body (validator-lenient,
        mutator-keys...) is judged on interceptor/invoke alone, and only the invoker-* mutants break the chain."""
        mutant = self.m
        self.m = mutant if mutant.startswith("invoker-") else ""
        try:
            return self.run(interceptor, payload)
        finally:
            self.m = mutant

    def validate_guarded(self, interceptor: str, payload: dict) -> dict:
        result = self.run_as_declared(interceptor, payload)
        if result.get("valid") is not False:
            return payload
        errors = [{"interceptor": interceptor, "severity": "error", "message": m["message"]}
                  for m in result.get("messages", ())]
        if self.broken("invoker-tool-error"):
            raise ToolErrorResult("Interceptor validation failed")
        if self.broken("invoker-validation-shape"):
            raise RpcError(-32603, "Interceptor validation failed", {"errors": errors})
        raise RpcError(-32602, "Interceptor validation failed", {"validationErrors": errors})

    def mutate_guarded(self, interceptor: str, payload: dict) -> dict:
        try:
            return self.run_as_declared(interceptor, payload)["payload"]
        except RpcError:
            if self.broken("invoker-fail-open"):
                return payload
            if self.broken("invoker-mutation-shape"):
                raise RpcError(-32602, "Interceptor mutation failed") from None
            if self.broken("invoker-wrong-last-valid"):
                payload = {**payload, "params": {**payload["params"], "arguments": {}}}
            raise RpcError(-32603, "Interceptor mutation failed",
                           {"failedInterceptor": interceptor, "lastValidPayload": payload}) from None

    # -- dispatch ----------------------------------------------------------------------------
    def reply(self, method, params, message):
        if method == "interceptors/list" and self.broken("bad-envelope"):
            message["jsonrpc"] = "1.0"
        return message

    def handle(self, msg) -> list[dict]:
        if self.backlog and isinstance(msg, dict) and "id" in msg:
            time.sleep(self.backlog)  # one request at a time: the next one waits for the work left running
            self.backlog = 0.0
        return super().handle(msg)

    def dispatch(self, method, params, out):
        if method == "tools/call":
            try:
                return super().dispatch(method, params, out)
            except ToolErrorResult as exc:
                return {"content": [{"type": "text", "text": str(exc)}], "isError": True}
        serves = self.offers or self.broken("unadvertised-served")
        list_method = "interceptor/list" if self.broken("singular-list") else "interceptors/list"
        invoke_method = "interceptors/invoke" if self.broken("plural-invoke") else "interceptor/invoke"
        if serves and method == list_method:
            items = self.listing(params.get("event"))
            if self.variant != "paged-lists":
                return {"interceptors": items}
            cursor = params.get("cursor")
            start = int(cursor.removeprefix("after-")) if isinstance(cursor, str) and cursor.startswith("after-") else 0
            page = {"interceptors": items[start:start + 1]}
            return {**page, "nextCursor": f"after-{start + 1}"} if start + 1 < len(items) else page
        if serves and method == invoke_method:
            return self.invoke_interceptor(params)
        if method in INTERCEPTOR_METHODS:  # not the base server's interceptors: this server serves its own, or none
            raise RpcError(-32601, f"Method not found: {method}")
        return super().dispatch(method, params, out)

    @staticmethod
    def hooks(item, event, phase=None, wildcard=True) -> bool:
        return any((phase is None or h["phase"] in (phase, "both")) and
                   (event in h["events"] or wildcard and "*" in h["events"]) for h in item["hooks"])

    def config_problems(self, schema, config) -> list[str]:
        """The few configSchema keywords this server's interceptors use: properties' types, required, no extras."""
        if not isinstance(config, dict):
            return ["config must be an object"]
        props = schema.get("properties", {})
        problems = [f"{k}: wrong type" for k, v in config.items()
                    if k in props and not isinstance(v, JSON_TYPES[props[k]["type"]])]
        if schema.get("additionalProperties") is False and not self.broken("config-unknown-keys"):
            problems += [f"{k}: unknown key" for k in config if k not in props]
        if not self.broken("config-required-unchecked"):
            problems += [f"{k}: required" for k in schema.get("required", ()) if k not in config]
        return problems

    def listing(self, event):
        items = self.interceptors()
        if event is None or self.broken("filter-ignored"):
            return items
        if self.broken("custom-wildcard-regex-match"):
            return [i for i in items if self.hooks(i, event) or any(regex_matches(e, event) for h in i["hooks"]
                                                                     for e in h["events"])]
        globbed = self.variant == "filter-namespace-wildcard"
        return [i for i in items if self.hooks(i, event, wildcard=not self.broken("filter-no-wildcard"))
                or globbed and any(fnmatch.fnmatchcase(event, e) for h in i["hooks"] for e in h["events"])]

    def invoke_interceptor(self, params):
        name, event, phase = params.get("name"), params.get("event"), params.get("phase")
        item = self.by_name(name)
        if item is None:
            if self.broken("unknown-accepted"):
                return {"valid": True}
            raise RpcError(-32602, f"Unknown interceptor: {name}")
        if self.broken("no-param-validation"):
            phase = phase if phase in ("request", "response") else "request"
            params = {"payload": None, **params}
        if not isinstance(event, str) or phase not in ("request", "response") or "payload" not in params:
            raise RpcError(-32602, "interceptor/invoke: name, event, phase and payload are required")
        wildcard_ok = not (self.broken("wildcard-literal") and event not in MCP_EVENTS)
        if not self.broken("hooks-ignored") and not (wildcard_ok and self.hooks(item, event, phase)):
            raise RpcError(-32602, f"{name} does not hook {event} ({phase})")
        if self.broken("oversized-dies") and len(json.dumps(params["payload"])) > 4 * 1024 * 1024:
            os._exit(137)  # what an out-of-memory kill looks like from outside
        config = params.get("config", {})
        schema = item.get("configSchema")
        if schema and not (self.broken("config-unchecked") and name == "conformance_validator"):
            problems = self.config_problems(schema, config)
            if problems:
                raise RpcError(-32602, f"config does not match the configSchema: {'; '.join(problems)}")
        if name == "conformance_slow":
            self.run_slow(params.get("timeoutMs"), phase)
        fields = self.run(name, params["payload"])
        if self.broken("nested-validation") and "valid" in fields:
            fields = {"validation": fields}
        if self.broken("bare-results"):
            return fields
        return {"interceptor": name, "type": item["type"],
                "phase": "request" if self.broken("wrong-phase") else phase, **fields}

    def run_slow(self, timeout_ms, phase) -> None:
        """conformance_slow takes SLOW_SECONDS; a timeoutMs below that cuts it short with -32000."""
        limit = timeout_ms / 1000 if isinstance(timeout_ms, (int, float)) and timeout_ms > 0 else None
        if self.broken("timeout-ignored"):
            limit = None
        elif self.broken("timeout-own-limit"):
            limit = OWN_LIMIT_SECONDS
        if limit is None or limit >= SLOW_SECONDS:
            time.sleep(SLOW_SECONDS)
            return
        time.sleep(limit)
        if self.broken("timeout-keeps-working"):  # answered on time, but the work goes on before the next request
            self.backlog = SLOW_SECONDS - limit
        raise RpcError(-32603 if self.broken("timeout-code") else -32000, "Interceptor execution timeout",
                       None if self.broken("timeout-bare") else
                       {"interceptor": "conformance_slow", "timeoutMs": timeout_ms, "phase": phase})

    def run(self, name, payload) -> dict:
        if name == "conformance_validator":
            found = [s for s in strings(payload) if MARKER in s]
            if found:
                severity = "warn" if self.broken("validator-lenient") else "error"
                messages = [{"message": f"marker found in {s!r}", "severity": severity} for s in found]
                if self.broken("validator-folds"):
                    messages = [{"message": f"marker found in {len(found)} strings", "severity": severity}]
                result = {"valid": self.broken("validator-lenient"), "severity": severity, "messages": messages}
            else:
                result = {"valid": True}
            if self.broken("validator-modifies"):
                result["payload"] = upper(payload)
            return result
        if name == "conformance_uppercase":
            changed = upper(payload)
            if changed != payload and self.broken("mutator-keys"):
                changed = upper(payload, keys=True)
            modified = changed != payload or self.broken("always-modified")
            if self.broken("mutator-patch") and changed != payload:
                return {"modified": modified, "payload": [s.upper() for s in strings(payload) if s != s.upper()]}
            return {"modified": modified, "payload": changed}
        if name == "conformance_failing":
            if self.broken("failure-as-result"):
                return {"modified": False, "payload": payload}
            raise RpcError(-32000 if self.broken("failure-code") else -32603, "Interceptor execution failed")
        if name == "secret-scanner" and self.broken("real-bad-result"):
            return {"valid": "yes"}
        if name == "secret-scanner" and self.broken("message-without-severity"):
            return {"valid": False, "severity": "warn", "messages": [{"message": "high-entropy string"}]}
        return {"valid": True}


def regex_matches(pattern: str, event: str) -> bool:
    try:
        return re.fullmatch(pattern, event) is not None
    except re.error:  # "*" and other globs that are no regular expression
        return False


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--break", dest="mutant", choices=sorted({**MUTANTS, **UNCLAIMED_MUTANTS}))
    parser.add_argument("--variant", choices=sorted(VARIANTS))
    parser.add_argument("--plain", action="store_true")
    args = parser.parse_args()
    serve_stdio(InterceptorServer(args.mutant, args.plain, args.variant), Log(None))


if __name__ == "__main__":
    main()
