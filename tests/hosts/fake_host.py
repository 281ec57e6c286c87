"""A small SDK-free host that follows HARNESS.md, or breaks one rule.

    python tests/hosts/fake_host.py [--break MUTANT | --variant VARIANT] [--stream]

A second, independent host next to reference_clients.host: plain JSON-RPC over
pipes and httpx, blocking I/O, one request at a time. Each mutant in `MUTANTS`
is named after the check it must make fail and declares the checks it fails;
tests/test_host_mutants.py proves it fails exactly those. Each of `VARIANTS` is the reverse, an allowed-variant
double: it takes another reading the sources allow, and must pass every check.
"""

from __future__ import annotations

import os
import sys

if __name__ == "__main__" and os.environ.get("MCPX_DOUBLES_PREFORK"):  # run as that fork server's child
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    from tests.prefork_doubles import hand_over

    hand_over()

import argparse
import json
import subprocess
import time
import unicodedata
from concurrent.futures import ThreadPoolExecutor

import httpx

ER, CM, PP, AUG, IC = ("execution-requirements/host/", "context-middleware/host/", "preprocessor-tools/host/",
                       "augmentation/host/", "interceptors/host/")
# {name: (fails: the full ids of the checks it must fail, does: one line)}, the contract of tests/README.md.
# Where two rules overlap a mutant fails more than one check by necessity: a host that drops tools with
# unknown requirements also drops the near-miss tools (their strings are unknown too) and the tool whose
# error the model should read; a host that skips request-phase middleware on a turn lets that turn's PII through
# (and never shows what it would do with the malformed results of later turns). A host that ignores priorities,
# reads an object priorityHint as 0 or lets audit validators block does so with the overridden policy too
# (interceptors/overrides, run claimed: its overrides use an object priorityHint and mode audit). A timeout is a
# failure too: a host that blocks on every failure, or on every audit-mode failure, does so when one times out
# (interceptors/overrides-timeout).
MUTANTS = {
    "offers-preprocessors": ({PP + "never-offered-to-model"}, "offers preprocessor tools to the model (but refuses to run them)"),
    "runs-model-preprocessor-call": ({PP + "model-cannot-call-preprocessor"}, "runs any tool the model names, offered or not"),
    "drops-tools-of-preprocessor-servers": ({PP + "ordinary-tools-offered"}, "offers no tool of a server that has a preprocessor"),
    "preprocessors-skip-last-turn": ({PP + "runs-every-turn"}, "skips the last preprocessor on turn 3"),
    "reruns-preprocessors-after-tool-calls": ({PP + "runs-before-model-and-tools"}, "runs the preprocessors again after a tool call"),
    "drops-preprocessor-output": ({PP + "output-reaches-model"}, "runs preprocessors but never shows the model their output"),
    "persists-preprocessor-output": ({PP + "output-not-persisted"}, "keeps preprocessor output in the history"),
    "shuffles-preprocessors": ({PP + "all-run-in-stable-order"}, "runs the preprocessors in reverse order on even turns"),
    "drops-tools-with-unknown-requirements": ({ER + "no-inferred-equivalence", ER + "partly-unknown-offered", ER + "requirement-strings-not-rewritten", ER + "unknown-requirement-offered"}, "treats unknown requirement strings as unsatisfiable"),
    "filters-when-any-known-false": ({ER + "partly-unknown-offered"}, "filters on one known-false string, ignoring unknown ones"),
    "filters-satisfied": ({ER + "satisfiable-offered"}, "takes every known requirement string as unsatisfiable"),
    "case-folds-requirements": ({ER + "no-inferred-equivalence"}, "compares requirement strings case-insensitively"),
    "normalizes-requirements": ({ER + "no-inferred-equivalence"}, "compares requirement strings after NFKC normalization and trimming"),
    "rewrites-tool-errors": ({ER + "requirement-strings-not-rewritten"}, "NFKD-normalizes and lowercases tool error results before the model sees them"),
    "request-middleware-first-turn-only": ({CM + "model-sees-middleware-output", CM + "request-middleware-runs-every-turn", CM + "malformed-content-blocks-turn", CM + "malformed-metadata-blocks-turn"}, "runs request-phase middleware on the first turn only"),
    "sends-raw-message": ({CM + "model-sees-middleware-output"}, "invokes request-phase middleware but sends the model the original message"),
    "skips-response-middleware": ({CM + "response-middleware-applied"}, "never runs response-phase middleware"),
    "forwards-metadata": ({CM + "metadata-not-forwarded"}, "shows the model the middleware metadata"),
    "offers-middleware-as-tools": ({CM + "middleware-not-offered-as-tools"}, "offers middleware to the model as tools"),
    "offers-augmentations-as-tools": ({AUG + "augmentations-not-offered-as-tools"}, "offers augmentations to the model as tools"),
    "definition-order": ({CM + "priority-order"}, "runs middleware in configuration order, ignoring priority"),
    "default-priority-zero": ({CM + "priority-order"}, "takes a missing priority as 0"),
    "reverses-ties": ({CM + "equal-priority-definition-order"}, "runs equal-priority middleware in reverse configuration order"),
    "unchained": ({CM + "chained-input"}, "gives every middleware the original message"),
    "fails-open": ({CM + "failing-middleware-blocks-turn"}, "sends the unprocessed message when middleware fails"),
    "accepts-string-content": ({CM + "malformed-content-blocks-turn"}, "takes a middleware result whose content is a string as one text block"),
    "ignores-malformed-metadata": ({CM + "malformed-metadata-blocks-turn"}, "uses a middleware result whatever its metadata"),
    "ignores-replace": ({AUG + "replace-hint-applied"}, "treats the replace hint as append"),
    "prepend-as-append": ({AUG + "prepend-hint-applied"}, "treats the prepend hint as append"),
    "append-as-prepend": ({AUG + "append-hint-applied"}, "treats the append hint as prepend"),
    "ignores-filter-hint": ({AUG + "filter-hint-applied"}, "treats the filter hint as append and offers every tool"),
    "ignores-suggested-tool-set": ({CM + "suggested-tool-set-applied"},
                                   "offers every tool whatever metadata.suggestedToolSet says"),
    "ignores-wildcard-hooks": ({IC + "hooked-interceptors-invoked"}, "never invokes interceptors hooked on \"*\""),
    "ignores-response-mutations": ({IC + "response-mutations-applied"}, "invokes response-phase mutators but gives the model the unmutated result"),
    "sends-original-request": ({IC + "mutated-request-sent"}, "runs the request chain, then sends the tool call as the model wrote it"),
    "unchained-mutations": ({IC + "mutations-chained"}, "gives every mutator the original payload and sends the last one's output"),
    "ignores-priority": ({IC + "priority-order", IC + "override-priority-precedence", IC + "override-priority-other-phase"}, "runs mutators in the order interceptors/list gave them"),
    "ties-in-list-order": ({IC + "priority-order"}, "orders mutators by priorityHint, ties in list order instead of by name"),
    "applies-audit-mutations": ({IC + "audit-mutation-not-applied"}, "applies an audit-mode mutator's payload"),
    "audit-validators-block": ({IC + "audit-validator-never-blocks", IC + "override-audit-mode"}, "lets an audit-mode validator's rejection block the call"),
    "blocks-on-warnings": ({IC + "warn-does-not-block"}, "blocks on every valid: false, whatever its severity"),
    "object-priority-as-zero": ({IC + "priority-order", IC + "override-priority-precedence"}, "reads a {request, response} priorityHint as 0"),
    "sorts-validators-by-priority": ({IC + "validate-after-mutate-sending"}, "runs validators that declare a priorityHint before the mutators"),
    "audit-failures-block": ({IC + "audit-failure-never-blocks", IC + "override-timeout-audit-never-blocks"}, "lets a failing audit-mode interceptor without failOpen block the call"),
    "uses-unconfigured-interceptors": ({IC + "unconfigured-server-usable"}, "also runs the interceptors of every server that advertises them, configured or not"),
    "stops-at-first-rejection": ({IC + "all-validations-complete"}, "invokes validators one by one and stops at the first that rejects"),
    "ignores-request-rejections": ({IC + "validator-rejection-blocks"}, "sends the tool call although a request validator rejected it"),
    "validates-before-mutating": ({IC + "validate-after-mutate-sending"}, "runs request validators before the mutators, on the original payload"),
    "mutates-before-validating-responses": ({IC + "validate-before-mutate-receiving"}, "runs response mutators before response validators"),
    "forwards-rejected-results": ({IC + "response-rejection-withholds-result"}, "gives the model a result a response validator rejected"),
    "sends-after-failure": ({IC + "fail-closed-by-default"}, "stops the chain when a fail-closed mutator fails, then sends the request as it stands"),
    "continues-after-failure": ({IC + "mutation-failure-halts-chain"}, "goes on with the chain after a fail-closed mutator failed (and blocks at the end)"),
    "fails-closed-always": ({IC + "fail-open-proceeds", IC + "override-timeout-fail-open-proceeds", IC + "override-fail-open"}, "blocks when any interceptor fails, failOpen: true or not"),
    "ignores-priority-override": ({IC + "override-priority-precedence", IC + "override-priority-other-phase"}, "orders mutators by their declared priorityHint, ignoring the config's overrides"),
    "ignores-mode-override": ({IC + "override-audit-mode"}, "runs interceptors in their declared mode, ignoring a mode override"),
    "ignores-fail-open-override": ({IC + "override-fail-open"}, "routes a failure by the declared failOpen, ignoring a failOpen override"),
    "merges-priority-override": ({IC + "override-priority-other-phase"}, "merges an object priorityHint override into the declared object, keeping the phases it does not name"),
    "named-entry-whole-server": ({IC + "named-entry-only"}, "takes an entry that names one interceptor for its whole server: also uses the ones no entry names"),
    "ignores-narrowed-hooks": ({IC + "override-narrowed-hooks"}, "invokes interceptors on every hook they declare, ignoring narrowing overrides"),
    # The widened response hook is one guard does not serve: that invocation fails, fail-closed, and the result's
    # mutators never run, so their order on the result is not observed either.
    "applies-widened-hooks": ({IC + "override-widening-rejected", IC + "override-priority-other-phase"}, "applies override hooks as given, also when they widen the declared ones"),
    "timeouts-fail-closed": ({IC + "override-timeout-fail-open-proceeds"}, "blocks when a failOpen: true interceptor times out (other failures as declared)"),
    "timeouts-proceed": ({IC + "override-timeout-fail-closed-blocks"}, "lets the message proceed when an interceptor times out, failOpen or not"),
    "audit-timeouts-block": ({IC + "override-timeout-audit-never-blocks"}, "lets an audit-mode interceptor without failOpen block the call when it times out"),
    # Ignoring timeoutMs leaves turn 1 of interceptors/overrides-timeout waiting for a 60 s stall: the turn is never
    # answered within the turn timeout, and the two later turns are never run.
    "ignores-timeout-override": ({IC + "override-timeout-fail-open-proceeds", IC + "override-timeout-fail-closed-blocks",
                                  IC + "override-timeout-audit-never-blocks"}, "neither applies nor passes on an override's timeoutMs: waits for the stalled answer"),
    **{f"invalid-message-{p}": ({f"{p}/host/wire-messages-valid"},
                                 f"in {p} scenarios, also sends a notification with jsonrpc \"1.0\"")
       for p in ("preprocessor-tools", "execution-requirements", "context-middleware", "augmentation", "interceptors")},
}

# Allowed-variant doubles: name -> (the checks whose source leaves room for it, what it does differently).
VARIANTS = {
    "context-in-user-message": ({PP + "output-not-persisted", PP + "output-reaches-model"},
                                "appends the preprocessor context to this turn's user message; its history keeps "
                                "the plain message"),
    "no-requirement-filtering": ({ER + "known-unsatisfiable-filtered", ER + "satisfiable-offered",
                                  ER + "unknown-requirement-offered", ER + "partly-unknown-offered"},
                                 "offers every tool, also one whose requirement is known unsatisfiable (clients MAY "
                                 "filter; this one does not)"),
    "parallel-validations": ({IC + "all-validations-complete", IC + "validate-after-mutate-sending",
                              IC + "validate-before-mutate-receiving", IC + "validator-rejection-blocks"},
                             "invokes a phase's validators all at once, every request in flight together (SEP-2624: "
                             "validations MAY be invoked in parallel)"),
    "concurrent-preprocessors": ({PP + "all-run-in-stable-order", PP + "runs-every-turn"},
                                 "runs the preprocessors at once (the first starts late on even turns, so the calls "
                                 "arrive in another order) and injects their results in configuration order"),
}


class Stdio:
    def __init__(self, spec: dict):
        env = {**os.environ, **(spec.get("env") or {})}
        self.proc = subprocess.Popen([spec["command"], *spec.get("args", [])], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, env=env, text=True, encoding="utf-8")
        self.next = 0

    def request(self, method: str, params: dict) -> dict:
        self.next += 1
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": self.next, "method": method, "params": params})
                              + "\n")
        self.proc.stdin.flush()
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("server closed stdout")
            message = json.loads(line)
            if message.get("id") == self.next:
                return message

    def notify(self, method: str, version: str = "2.0") -> None:
        self.proc.stdin.write(json.dumps({"jsonrpc": version, "method": method}) + "\n")
        self.proc.stdin.flush()

    def many(self, requests: list[tuple[str, dict]]) -> list[dict]:
        """Several requests in flight at once (all written before any answer is read), answers in request order."""
        ids = []
        for method, params in requests:
            self.next += 1
            ids.append(self.next)
            self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": self.next, "method": method, "params": params})
                                  + "\n")
        self.proc.stdin.flush()
        got: dict = {}
        while len(got) < len(ids):
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("server closed stdout")
            message = json.loads(line)
            if message.get("id") in ids:
                got[message["id"]] = message
        return [got[i] for i in ids]


class Http:
    def __init__(self, spec: dict):
        self.url, self.client, self.next, self.session = spec["url"], httpx.Client(timeout=10, verify=False), 0, None

    def _post(self, body: dict) -> httpx.Response:
        headers = {"accept": "application/json, text/event-stream"}
        if self.session:
            headers["mcp-session-id"] = self.session
        response = self.client.post(self.url, json=body, headers=headers)
        self.session = response.headers.get("mcp-session-id", self.session)
        return response

    def request(self, method: str, params: dict) -> dict:
        self.next += 1
        return self._post({"jsonrpc": "2.0", "id": self.next, "method": method, "params": params}).json()

    def many(self, requests: list[tuple[str, dict]]) -> list[dict]:
        """Several requests at once, one POST each on its own thread; answers in request order."""
        bodies = []
        for method, params in requests:
            self.next += 1
            bodies.append({"jsonrpc": "2.0", "id": self.next, "method": method, "params": params})
        with ThreadPoolExecutor(max_workers=len(bodies) or 1) as pool:
            return [r.json() for r in pool.map(self._post, bodies)]

    def notify(self, method: str, version: str = "2.0") -> None:
        self._post({"jsonrpc": version, "method": method})


class Host:
    def __init__(self, mutant: str, stream: bool, variant: str = ""):
        self.m = mutant
        self.variant = variant
        self.stream = stream
        self.config = json.load(open(os.environ["MCPX_CONFIG"], encoding="utf-8"))
        # Every URL is plain HTTP on loopback: verify=False spares each client loading a certificate store.
        self.llm = httpx.Client(base_url=os.environ["OPENAI_BASE_URL"], timeout=30, verify=False,
                                headers={"authorization": f"Bearer {os.environ['OPENAI_API_KEY']}"})
        self.servers, self.caps, self.tools = {}, {}, []  # tools: (server, tool dict)
        for name, spec in self.config["mcpServers"].items():
            conn = Stdio(spec) if "command" in spec else Http(spec)
            init = conn.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                               "clientInfo": {"name": "fake-host", "version": "0"}})
            conn.notify("notifications/initialized")
            if self.m == f"invalid-message-{os.environ['MCPX_SCENARIO'].split('/')[0]}":
                conn.notify("notifications/initialized", version="1.0")
            self.servers[name], self.caps[name] = conn, init["result"].get("capabilities", {})
            self.tools += [(name, t) for t in conn.request("tools/list", {})["result"]["tools"]]
        self.interceptors = []  # (server, definition), from interceptors/list on each configured server
        wanted_servers = [w["server"] for w in self.config.get("interceptors", [])]
        if self.m == "uses-unconfigured-interceptors":
            wanted_servers += [s for s, c in self.caps.items() if "io.modelcontextprotocol/interceptors" in
                               (c.get("extensions") or {}) and s not in wanted_servers]
        entries = {w["server"]: [] for w in self.config.get("interceptors", [])}
        for w in self.config.get("interceptors", []):
            entries[w["server"]].append(w)
        for server in dict.fromkeys(wanted_servers):  # a server named by several entries is listed once
            listed = self.servers[server].request("interceptors/list", {})["result"]["interceptors"]
            named = {w.get("name") for w in entries.get(server) or ()}
            for w in entries.get(server) or [{}]:
                self.interceptors += [(server, self.policy(d, w.get("overrides") or {})) for d in listed
                                      if w.get("name") in (None, d["name"])]
            if self.m == "named-entry-whole-server" and None not in named:
                self.interceptors += [(server, d) for d in listed if d["name"] not in named]
            self.interceptors = [(s, d) for s, d in self.interceptors if d is not None]
        self.history: list[dict] = []
        self.turn = 0
        self.keep = None  # this turn's filter hint: the tools to offer (None: all)

    # -- interceptors (SEP-2624), around each tools/call -----------------------------------------
    def policy(self, d: dict, overrides: dict) -> dict | None:
        """The definition with its overrides applied (they take precedence); None when they widen its hooks."""
        merged = dict(d)
        for key in ("priorityHint", "mode", "failOpen", "timeoutMs"):
            if key in overrides and self.m != {"priorityHint": "ignores-priority-override", "mode": "ignores-mode-override",
                                               "failOpen": "ignores-fail-open-override",
                                               "timeoutMs": "ignores-timeout-override"}.get(key):
                merged[key] = overrides[key]
        if self.m == "merges-priority-override" and isinstance(d.get("priorityHint"), dict) and \
                isinstance(overrides.get("priorityHint"), dict):
            merged["priorityHint"] = {**d["priorityHint"], **overrides["priorityHint"]}
        if "hooks" in overrides:
            declared = {(e, h["phase"]) for h in d["hooks"] for e in h["events"]}
            wanted = {(e, h["phase"]) for h in overrides["hooks"] for e in h["events"]}
            widens = any(pair not in declared and ("*", pair[1]) not in declared for pair in wanted)
            if widens and self.m != "applies-widened-hooks":
                print(f"fake-host: {d['name']} refused: its override hooks widen the declared ones", file=sys.stderr)
                return None
            if widens or self.m != "ignores-narrowed-hooks":
                merged["hooks"] = overrides["hooks"]
        return merged

    def intercept(self, phase: str, payload):
        """The payload after the phase's chain; Stopped when the message must not go on."""
        return Chain(self, phase).run(payload)

    # -- requirements ----------------------------------------------------------------------
    def _key(self, s: str) -> str:
        if self.m == "case-folds-requirements":
            return s.casefold()
        if self.m == "normalizes-requirements":
            return unicodedata.normalize("NFKC", s).strip()
        return s

    def _offer(self, server: str, tool: dict) -> bool:
        reqs = (tool.get("execution") or {}).get("requirements") or []
        known = {self._key(k): v for k, v in self.config.get("knownRequirements", {}).items()}
        status = [known.get(self._key(r)) for r in reqs]
        if self.m == "filters-satisfied":
            status = [None if s is None else False for s in status]
        if self.m == "drops-tools-with-unknown-requirements" and None in status:
            return False
        if self.m == "filters-when-any-known-false":
            return False not in status
        if not reqs or None in status or all(status) or self.variant == "no-requirement-filtering":
            return True
        return False  # all known, one known false: optional filtering, done here

    def offered(self) -> list[tuple[str, dict]]:
        out = []
        preprocessor_servers = {s for s, t in self.tools if t.get("preprocessor") is True}
        for server, tool in self.tools:
            if tool.get("preprocessor") is True and self.m != "offers-preprocessors":
                continue
            if self.m == "drops-tools-of-preprocessor-servers" and server in preprocessor_servers:
                continue
            if self._offer(server, tool):
                out.append((server, tool))
        return out

    # -- middleware ------------------------------------------------------------------------
    def chain(self, phase: str, text: str) -> tuple[str, list]:
        entries = [e for e in self.config.get("contextMiddleware", []) if e.get("phase") == phase]
        default = 0 if self.m == "default-priority-zero" else 50
        if self.m != "definition-order":
            indexed = list(enumerate(entries))
            if self.m == "reverses-ties":
                indexed.sort(key=lambda p: (p[1].get("priority", default), -p[0]))
            else:
                indexed.sort(key=lambda p: (p[1].get("priority", default), p[0]))
            entries = [e for _, e in indexed]
        context, metadata = [{"type": "text", "text": text}], []
        original = list(context)
        for entry in entries:
            server = entry["server"]
            given = original if self.m == "unchained" else context
            params = {"name": entry["name"], "arguments": entry.get("arguments", {}), "context": given}
            if "contextMiddleware" in self.caps[server]:
                answer = self.servers[server].request("middleware/invoke", params)
                if "error" in answer:
                    raise MiddlewareFailed(answer["error"].get("message"))
                content, meta = answer["result"].get("content"), answer["result"].get("metadata")
                if isinstance(content, str) and self.m == "accepts-string-content":
                    content = [{"type": "text", "text": content}]
                if not isinstance(content, list) or not all(isinstance(b, dict) and isinstance(b.get("type"), str)
                                                            for b in content):
                    raise MalformedResult("content is not an array of content blocks")
                if meta is not None and not isinstance(meta, dict) and self.m != "ignores-malformed-metadata":
                    raise MalformedResult("metadata is not an object")
                context = content
                metadata.append(meta)
                suggested = meta.get("suggestedToolSet") if isinstance(meta, dict) else None
                if isinstance(suggested, list) and phase == "request" and self.m != "ignores-suggested-tool-set":
                    self.keep = set(suggested) if self.keep is None else self.keep & set(suggested)
            else:
                answer = self.servers[server].request("augmentation/augment", params)
                if "error" in answer:
                    raise MiddlewareFailed(answer["error"].get("message"))
                blocks = [a["content"] for a in answer["result"]["content"]]
                hint = answer["result"].get("hint") or "append"
                if hint == "filter" and self.m != "ignores-filter-hint" and phase == "request":
                    self.keep = {a["content"].get("text") for a in answer["result"]["content"]
                                 if (a.get("properties") or {}).get("relevance", 1) >= 0.5}
                    continue
                hint = {"ignores-replace": {"replace": "append"}, "prepend-as-append": {"prepend": "append"},
                        "append-as-prepend": {"append": "prepend"}}.get(self.m, {}).get(hint, hint)
                context = blocks if hint == "replace" else blocks + context if hint == "prepend" else context + blocks
        return "\n".join(b.get("text", "") for b in context if b.get("type") == "text"), metadata

    # -- a turn ----------------------------------------------------------------------------
    def preprocess(self, text: str) -> list[str]:
        found = [(s, t) for s, t in self.tools if t.get("preprocessor") is True]
        if self.m == "shuffles-preprocessors" and self.turn % 2 == 0:
            found.reverse()
        if self.m == "preprocessors-skip-last-turn" and self.turn == 3:
            found = found[:-1]
        def run(i: int, server: str, tool: dict) -> str:
            props = (tool.get("inputSchema") or {}).get("properties") or {}
            required = (tool.get("inputSchema") or {}).get("required") or []
            args = {k: text for k, v in props.items() if v.get("type") == "string" and (k in required or k == "query")}
            if self.variant == "concurrent-preprocessors" and i == 0 and self.turn % 2 == 0:
                time.sleep(0.3)  # the first starts late: its call arrives after the second's
            result = self.servers[server].request("tools/call", {"name": tool["name"], "arguments": args})
            return _text(result.get("result", {}))

        if self.variant == "concurrent-preprocessors":  # each on a server of its own here, so the calls overlap
            with ThreadPoolExecutor(max_workers=len(found) or 1) as pool:
                return list(pool.map(lambda job: run(*job), [(i, s, t) for i, (s, t) in enumerate(found)]))
        return [run(i, server, tool) for i, (server, tool) in enumerate(found)]

    def ask(self, messages: list[dict], tools: list[dict]) -> dict:
        body = {"model": os.environ["MCPX_MODEL"], "messages": messages, "tools": tools or None}
        if not self.stream:
            return self.llm.post("/chat/completions", json=body).json()["choices"][0]["message"]
        message: dict = {"role": "assistant", "content": "", "tool_calls": []}
        with self.llm.stream("POST", "/chat/completions", json={**body, "stream": True}) as response:
            for line in response.iter_lines():
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                delta = json.loads(line[6:])["choices"][0]["delta"]
                message["content"] += delta.get("content") or ""
                for call in delta.get("tool_calls") or ():
                    while len(message["tool_calls"]) <= call["index"]:
                        message["tool_calls"].append({"type": "function", "function": {"name": "", "arguments": ""}})
                    slot = message["tool_calls"][call["index"]]
                    slot["id"] = call.get("id", slot.get("id"))
                    slot["function"]["name"] += call.get("function", {}).get("name") or ""
                    slot["function"]["arguments"] += call.get("function", {}).get("arguments") or ""
        if not message["tool_calls"]:
            del message["tool_calls"]
        return message

    def answer(self, user: str) -> dict:
        self.turn += 1
        self.keep = None
        try:
            if self.m == "request-middleware-first-turn-only" and self.turn > 1:
                text, metadata = user, []
            else:
                text, metadata = self.chain("request", user)
        except MiddlewareFailed as exc:
            if self.m != "fails-open" or isinstance(exc, MalformedResult):  # (fails-open: on errors only)
                return {"role": "assistant", "content": "", "error": f"request middleware failed: {exc}"}
            text, metadata = user, []
        if self.m == "sends-raw-message" and not any("augmentation" in c for c in self.caps.values()):
            text = user  # (on middleware servers: augmentation hints are judged separately)
        context = self.preprocess(text)
        offered = [(s, t) for s, t in self.offered() if self.keep is None or t["name"] in self.keep]
        specs = [{"type": "function", "function": {"name": t["name"], "description": t.get("description", ""),
                                                   "parameters": t.get("inputSchema", {})}} for _, t in offered]
        kind = {"offers-middleware-as-tools": "contextMiddleware", "offers-augmentations-as-tools": "augmentation"}
        if self.m in kind:
            specs += [{"type": "function", "function": {"name": e["name"], "parameters": {"type": "object"}}}
                      for e in self.config.get("contextMiddleware", []) if kind[self.m] in self.caps[e["server"]]]
        extra = [{"role": "system", "content": "Context:\n" + "\n".join(context)}] if context else []
        if self.m == "drops-preprocessor-output":
            extra = []
        if self.m == "forwards-metadata":
            extra.append({"role": "system", "content": json.dumps(metadata)})
        turn_messages = [{"role": "user", "content": text}]
        if self.m == "persists-preprocessor-output":
            self.history += extra
        sent = turn_messages[:1]  # the user message the model gets (turn_messages is what the history keeps)
        if self.variant == "context-in-user-message" and extra:
            sent = [{"role": "user", "content": text + "\n\n" + extra[0]["content"]}]
            extra = []
        for _ in range(6):
            reply = self.ask(self.history + extra + sent + turn_messages[1:], specs)
            calls = reply.get("tool_calls") or []
            turn_messages.append({k: v for k, v in reply.items() if v is not None})
            if not calls:
                break
            for call in calls:
                turn_messages.append({"role": "tool", "tool_call_id": call["id"],
                                      "content": self.run_tool(call["function"]["name"],
                                                               json.loads(call["function"]["arguments"] or "{}"),
                                                               offered)})
            if self.m == "reruns-preprocessors-after-tool-calls":
                context = self.preprocess(text)
                extra = [{"role": "system", "content": "Context:\n" + "\n".join(context)}]
        self.history += turn_messages
        final = turn_messages[-1].get("content") or ""
        if self.m != "skips-response-middleware":
            final, _ = self.chain("response", final)
        return {"role": "assistant", "content": final}

    def run_tool(self, name: str, arguments: dict, offered) -> str:
        pool = self.tools if self.m == "runs-model-preprocessor-call" else offered
        for server, tool in pool:
            if tool["name"] == name and (tool.get("preprocessor") is not True or pool is self.tools):
                params = {"name": name, "arguments": arguments}
                if self.interceptors:
                    try:
                        sent = self.intercept("request", {"method": "tools/call", "params": params})["params"]
                    except Stopped as exc:
                        return f"tool call blocked: {exc}"
                    params = params if self.m == "sends-original-request" else sent
                result = self.servers[server].request("tools/call", params)
                if self.interceptors and "result" in result:
                    try:
                        result = {"result": self.intercept("response", result["result"])}
                    except Stopped as exc:
                        return f"tool result withheld: {exc}"
                text = _text(result.get("result") or {}) or json.dumps(result.get("error"))
                if self.m == "rewrites-tool-errors" and (result.get("result") or {}).get("isError"):
                    text = unicodedata.normalize("NFKD", text).lower()
                return text
        return f"tool {name} is not available"


class Chain:
    """One phase's interceptor chain around a tools/call (HARNESS.md §3 step 4), as the host runs it, or breaks it."""

    def __init__(self, host: Host, phase: str):
        self.host, self.m, self.variant, self.phase = host, host.m, host.variant, phase
        active = [(s, d) for s, d in host.interceptors if self.hooked(d)]
        self.mutators = [(s, d) for s, d in active if d["type"] == "mutation"]
        if self.m == "ties-in-list-order":
            self.mutators.sort(key=lambda p: self.priority(p[1]))
        elif self.m != "ignores-priority":
            self.mutators.sort(key=lambda p: (self.priority(p[1]), p[1]["name"]))
        self.validators = [(s, d) for s, d in active if d["type"] == "validation"]

    def hooked(self, d) -> bool:
        return any(h["phase"] == self.phase and ("tools/call" in h["events"]
                                                 or ("*" in h["events"] and self.m != "ignores-wildcard-hooks"))
                   for h in d["hooks"])

    def priority(self, d):
        hint = d.get("priorityHint", 0)
        if isinstance(hint, dict):
            return 0 if self.m == "object-priority-as-zero" else hint.get(self.phase, 0)
        return hint

    def params(self, d, body) -> dict:
        # An override's timeoutMs is passed on: the server gives up at it (-32000), so this blocking host
        # needs no timer of its own.
        return {"name": d["name"], "event": "tools/call", "phase": self.phase, "payload": body,
                **({"timeoutMs": d["timeoutMs"]} if "timeoutMs" in d else {})}

    def invoke(self, server, d, body):
        return self.host.servers[server].request("interceptor/invoke", self.params(d, body))

    def timeout_blocks(self, d, error) -> bool | None:
        """How a timeout (-32000) is routed by a timeout mutant; None: as any failure."""
        if error.get("code") != -32000:
            return None
        if self.m == "timeouts-proceed":
            return False
        if self.m == "timeouts-fail-closed" and d.get("mode") != "audit":
            return True
        if self.m == "audit-timeouts-block" and d.get("mode") == "audit":
            return d.get("failOpen") is not True
        return None

    def tolerated(self, d) -> bool:
        audit = d.get("mode") == "audit" and self.m != "audit-failures-block"
        return audit or (d.get("failOpen") is True and self.m != "fails-closed-always")

    def mutate(self, current):
        original, failed = current, False
        for server, d in self.mutators:
            answer = self.invoke(server, d, original if self.m == "unchained-mutations" else current)
            if "error" in answer:
                if self.tolerated(d):
                    continue
                if self.m == "continues-after-failure":
                    failed = True
                    continue
                if self.m == "sends-after-failure":
                    raise SendAnyway(current)
                raise Stopped(f"{d['name']} failed")
            if d.get("mode") != "audit" or self.m == "applies-audit-mutations":
                current = answer["result"]["payload"]
        if failed:
            raise Stopped("a mutator failed")
        return current

    def invoke_all(self, pairs, body) -> dict:
        """Every validator of `pairs` invoked at once (SEP-2624: validations MAY run in parallel): all requests
        to a server in flight together, the servers side by side. (name, server) -> answer."""
        by_server: dict = {}
        for server, d in pairs:
            by_server.setdefault(server, []).append(d)

        def one(server):
            asked = [("interceptor/invoke", self.params(d, body)) for d in by_server[server]]
            return {(d["name"], server): a for d, a in zip(by_server[server], self.host.servers[server].many(asked))}

        with ThreadPoolExecutor(max_workers=len(by_server) or 1) as pool:
            return {k: v for part in pool.map(one, list(by_server)) for k, v in part.items()}

    def blocks(self, d, answer) -> bool:
        """Whether one validator's answer stops the message."""
        if "error" in answer:
            routed = self.timeout_blocks(d, answer["error"])
            return routed if routed is not None else not self.tolerated(d)
        result = answer["result"]
        if result.get("valid") is not False:
            return False
        blocks = result.get("severity", "error") == "error" or self.m == "blocks-on-warnings"
        if d.get("mode") == "audit" and self.m != "audit-validators-block":
            blocks = False
        if self.phase == "request" and self.m == "ignores-request-rejections":
            blocks = False
        return blocks

    def validate(self, current, which=None) -> None:
        stop = []
        pairs = self.validators if which is None else which
        at_once = self.invoke_all(pairs, current) if self.variant == "parallel-validations" else None
        for server, d in pairs:
            answer = at_once[(d["name"], server)] if at_once is not None else self.invoke(server, d, current)
            if self.blocks(d, answer):
                stop.append(d["name"])
                if "error" not in answer and self.m == "stops-at-first-rejection":
                    break
        if stop:
            raise Stopped(f"stopped by {', '.join(stop)}")

    def run(self, payload):
        if self.phase == "request":
            if self.m == "validates-before-mutating":
                self.validate(payload)
                return self.mutate(payload)
            if self.m == "sorts-validators-by-priority":
                early = [(s, d) for s, d in self.validators if "priorityHint" in d]
                self.validate(payload, early)
                self.validators = [p for p in self.validators if p not in early]
            try:
                payload = self.mutate(payload)
            except SendAnyway as exc:
                return exc.args[0]
            self.validate(payload)
            return payload
        if self.m == "mutates-before-validating-responses":
            payload = self.mutate(payload)
            self.validate(payload)
            return payload
        try:
            self.validate(payload)
        except Stopped:
            if self.m == "forwards-rejected-results":
                return payload
            raise
        mutated = self.mutate(payload)
        return payload if self.m == "ignores-response-mutations" else mutated


class MiddlewareFailed(Exception):
    pass


class MalformedResult(MiddlewareFailed):
    """A middleware result that does not match the schema."""


class Stopped(Exception):
    """The interceptor chain stopped the message."""


class SendAnyway(Exception):
    """(mutant sends-after-failure) the chain stopped at a failure; send what it had."""


def _text(result: dict) -> str:
    return "\n".join(b.get("text", "") for b in result.get("content") or () if b.get("type") == "text")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--break", dest="mutant", default="", choices=["", *MUTANTS])
    parser.add_argument("--variant", default="", choices=["", *VARIANTS])
    parser.add_argument("--stream", action="store_true")
    args = parser.parse_args()
    host = Host(args.mutant, args.stream, args.variant)
    for line in sys.stdin:
        if line.strip():
            print(json.dumps(host.answer(json.loads(line)["content"])), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
