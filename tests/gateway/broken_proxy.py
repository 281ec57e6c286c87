"""A raw stdio MCP proxy that breaks one transparency rule, chosen by `--break MODE`.

    MCPX_UPSTREAM_COMMAND="..." python tests/gateway/broken_proxy.py [--break MODE] [--marker TEXT]

Written without the SDK, so each flaw is exactly the one named: unbroken, it passes every message
through (and passes every transparency check). `MUTANTS[mode] = (fails, does)`, the contract of
tests/README.md; tests/test_gateway_transparency.py proves each mode fails exactly those checks. Most flaws are things
real proxies do: rebuild tools from a typed model (dropping unknown fields), normalise strings,
rewrite error messages, advertise what they pass through and then not route it.
`--marker` is appended to the upstream's command line (`--tag`), so tests can find both processes.
The `copy-<profile>` modes answer that profile's requests from a copy of the upstream fixtures of their own
(an in-process FixtureServer with another run mark) and never forward them; the `drop-optional-<profile>`
modes rebuild that profile's items and results from the fields a typed model knows.
`--variant X` is one of `VARIANTS`, allowed-variant doubles: another reading a source allows; each passes every check.
"""

from __future__ import annotations

import os
import sys

if __name__ == "__main__" and os.environ.get("MCPX_DOUBLES_PREFORK"):  # run as that fork server's child
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    from tests.prefork_doubles import hand_over

    hand_over()

import argparse
import asyncio
import json
import shlex
from pathlib import Path

CM, AUG, PP, ER = "context-middleware/gateway/", "augmentation/gateway/", "preprocessor-tools/gateway/", \
    "execution-requirements/gateway/"
IC = "interceptors/gateway/"
OPTIONAL = "optional-fields-arrive-unchanged"  # a mutant that cuts off a result, or rebuilds one, loses these too
INTERCEPTORS_EXTENSION = "io.modelcontextprotocol/interceptors"
MUTANTS = {
    "drop-preprocessor": ({PP + "flag-passes-through"}, "rebuilds tools without the preprocessor field"),
    "block-preprocessor-calls": ({PP + "tool-calls-pass-through", PP + OPTIONAL},
                                 "refuses calls of conformance_memories"),
    "invalid-note-preprocessor": ({PP + "wire-messages-valid"}, "an invalid log notification before the memories result"),
    "strip-execution": ({ER + "requirements-pass-through", ER + OPTIONAL},
                        "rebuilds tools without the execution field (its taskSupport lost too)"),
    "casefold-requirements": ({ER + "requirements-pass-through"}, "lowercases requirement strings"),
    "fail-satisfied-call": ({ER + "satisfied-call-passes"}, "turns conformance_gated_ok's result into an error"),
    "swallow-unmet-requirement": ({ER + "unmet-error-passes-through"},
                                  "replaces a failed call's text with \"tool call failed\""),
    "jsonrpc-1-execution": ({ER + "wire-messages-valid"}, "answers conformance_gated_ok with jsonrpc \"1.0\""),
    "hang-middleware-invoke": ({CM + "capability-forwarded-or-refused", CM + "invoke-every-content-type-unchanged",
                                CM + "invoke-params-arrive-unchanged", CM + OPTIONAL},
                               "advertises contextMiddleware but never answers middleware/invoke"),
    "refuse-middleware-32602": ({CM + "capability-forwarded-or-refused"},
                                "drops contextMiddleware and answers its methods -32602 instead of -32601"),
    "alter-image-data": ({CM + "invoke-every-content-type-unchanged"},
                         "re-encodes image data in middleware/invoke results"),
    "inject-invoke-argument": ({CM + "invoke-params-arrive-unchanged"},
                               "adds an argument to middleware/invoke on the way upstream"),
    "invalid-note-middleware": ({CM + "wire-messages-valid"}, "an invalid log notification before middleware/list"),
    "drop-augmentation-methods": ({AUG + "capability-forwarded-or-refused", AUG + "augment-every-content-type-unchanged",
                                   AUG + "augment-params-arrive-unchanged", AUG + OPTIONAL},
                                  "advertises augmentation but answers its methods -32601 itself"),
    "forward-augmentation-unadvertised": ({AUG + "capability-forwarded-or-refused"},
                                          "drops the augmentation capability but forwards its methods"),
    "drop-hint": ({AUG + "augment-every-content-type-unchanged"}, "drops hint from augmentation/augment results"),
    "merge-middleware-text": ({CM + "invoke-every-content-type-unchanged"},
                              "joins adjacent text blocks of middleware/invoke results into one"),
    "merge-augmented-text": ({AUG + "augment-every-content-type-unchanged", AUG + OPTIONAL},
                             "joins adjacent text items of augmentation/augment results into one (the second "
                             "item's properties go with it)"),
    "inject-augment-argument": ({AUG + "augment-params-arrive-unchanged"},
                                "adds an argument to augmentation/augment on the way upstream"),
    "invalid-note-augmentation": ({AUG + "wire-messages-valid"}, "an invalid log notification before augmentation/list"),
    "drop-interceptors-capability": ({IC + "capability-forwarded-or-refused"},
                                     "drops the interceptors extension from capabilities but forwards its methods"),
    "drop-interceptors-list": ({IC + "capability-forwarded-or-refused", IC + "list-passes-through", IC + OPTIONAL},
                               "advertises the interceptors extension but answers interceptors/list -32601 itself"),
    "drop-interceptor-invoke": ({IC + "capability-forwarded-or-refused", IC + "invoke-results-unchanged",
                                 IC + "invoke-params-arrive-unchanged", IC + OPTIONAL},
                                "advertises the interceptors extension but answers interceptor/invoke -32601 itself"),
    "strip-interceptor-policy": ({IC + "list-passes-through", IC + OPTIONAL},
                                 "rebuilds interceptor definitions from name, type and hooks (mode, failOpen, "
                                 "priorityHint, configSchema lost)"),
    "drop-list-filter": ({IC + "list-passes-through"}, "forwards interceptors/list without its params (the event filter)"),
    "drop-invoke-context": ({IC + "invoke-params-arrive-unchanged"},
                            "drops context from interceptor/invoke on the way upstream"),
    "drop-validation-messages": ({IC + "invoke-results-unchanged"},
                                 "keeps only the first message of a validation result"),
    "invalid-note-interceptors": ({IC + "wire-messages-valid"}, "an invalid log notification before interceptors/list"),
    **{f"copy-{profile}": ({profile + "/gateway/" + slug for slug in slugs},
                           f"answers {profile}'s requests from a copy of its own, never forwards them")
       for profile, slugs in {
           "preprocessor-tools": ("flag-passes-through", "tool-calls-pass-through", "optional-fields-arrive-unchanged"),
           "execution-requirements": ("requirements-pass-through", "satisfied-call-passes", "unmet-error-passes-through",
                                      "optional-fields-arrive-unchanged"),
           "context-middleware": ("capability-forwarded-or-refused", "invoke-every-content-type-unchanged",
                                  "invoke-params-arrive-unchanged", "optional-fields-arrive-unchanged"),
           "augmentation": ("capability-forwarded-or-refused", "augment-every-content-type-unchanged",
                            "augment-params-arrive-unchanged", "optional-fields-arrive-unchanged"),
           "interceptors": ("capability-forwarded-or-refused", "list-passes-through", "invoke-results-unchanged",
                            "invoke-params-arrive-unchanged", "optional-fields-arrive-unchanged")}.items()},
    **{f"drop-optional-{profile}": ({profile + "/gateway/optional-fields-arrive-unchanged"},
                                    f"rebuilds {profile}'s items and results from the fields it knows (_meta, unknown "
                                    f"keys, info, durationMs, suggestions, version, compat lost)")
       for profile in ("preprocessor-tools", "execution-requirements", "context-middleware", "augmentation",
                       "interceptors")},
    # Not flaws of one check: a clean refusal passes; a dropped connection fails what it cut off.
    "refuse-extensions-cleanly": (set(), "drops contextMiddleware, augmentation and the interceptors extension, "
                                         "answers their methods -32601"),
    "drop-connection": (None, "exits (code 3) at the first tools/call or middleware/augmentation method"),
}
# What each profile's requests are: tool names (a tools/list entry or tools/call), or method prefixes.
# The gated tools' names are the upstream's (filled in by the modes that need them: `upstream()`).
PROFILE_TOOLS: dict[str, set[str]] = {"preprocessor-tools": {"conformance_memories", "conformance_echo"},
                                      "execution-requirements": set()}


def upstream():
    """The suite's upstream module, imported only by the modes that use it (every other mode starts as before)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run by path: the package is two levels up
    from conformance.gateway import upstream as module

    PROFILE_TOOLS["execution-requirements"] = set(module.GATED)
    return module
PROFILE_METHODS = {"context-middleware": ("middleware/",), "augmentation": ("augmentation/",),
                   "interceptors": ("interceptors/list", "interceptor/invoke")}
# The fields a typed model knows, by shape: what a drop-optional mode keeps.
KNOWN = {"tool": {"name", "title", "description", "inputSchema", "outputSchema", "annotations", "preprocessor",
                  "execution"},
         "execution": {"requirements", "taskSupport"},
         "tools/call": {"content", "isError", "structuredContent"},
         "middleware/list": {"name", "description", "inputSchema"}, "middleware/invoke": {"content", "metadata"},
         "augmentation/list": {"name", "description", "inputSchema"},
         "augmentation/augment": {"content", "hint", "metadata"}, "augmented": {"content", "properties"},
         "properties": {"relevance"},
         "interceptors/list": {"name", "description", "type", "hooks", "mode", "failOpen", "priorityHint",
                               "configSchema"},
         "interceptor/invoke": {"interceptor", "type", "phase", "valid", "severity", "messages", "modified", "payload"}}
LIST_KEYS = {"middleware/list": "middleware", "augmentation/list": "augmentations", "interceptors/list": "interceptors"}


def known(value, shape: str):
    return {k: v for k, v in value.items() if k in KNOWN[shape]} if isinstance(value, dict) else value


def typed(method: str, result: dict) -> dict:
    """`result` as a typed model would rebuild it: only the known fields (the drop-optional modes)."""
    if method in LIST_KEYS:
        return {**result, LIST_KEYS[method]: [known(item, method) for item in result.get(LIST_KEYS[method]) or ()]}
    result = known(result, method)
    if method == "augmentation/augment":
        result["content"] = [{**known(item, "augmented"), **({"properties": known(item["properties"], "properties")}
                                                             if isinstance(item, dict) and "properties" in item else {})}
                             for item in result.get("content") or ()]
    return result


def typed_tool(tool: dict) -> dict:
    tool = known(tool, "tool")
    if isinstance(tool.get("execution"), dict):
        tool["execution"] = known(tool["execution"], "execution")
    return tool


def of_profile(profile: str, method, name) -> bool:
    """Whether a request (other than tools/list) belongs to `profile`."""
    if profile in PROFILE_TOOLS:
        return method == "tools/call" and name in PROFILE_TOOLS[profile]
    return str(method).startswith(PROFILE_METHODS.get(profile, ("\0",)))


# Allowed-variant doubles (`--variant`): a reading the sources allow, so every check passes.
VARIANTS = {
    "paged-lists": ({PP + "flag-passes-through", ER + "requirements-pass-through", IC + "list-passes-through"},
                    "answers every list (tools, middleware, augmentations, interceptors, the filtered one too) one "
                    "item a page, from the upstream's whole list, with cursors of its own"),
}
PAGED_KEYS = {"tools/list": "tools", "middleware/list": "middleware", "augmentation/list": "augmentations",
             "interceptors/list": "interceptors"}
BAD_NOTE = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "loud", "data": "x"}}


class Broken:
    def __init__(self, mode: str | None, variant: str | None = None):
        self.mode = mode or ""
        self.variant = variant or ""
        self.requests: dict = {}  # id -> request, for what the client sent
        kind, _, profile = self.mode.partition("-")
        self.copied = profile if kind == "copy" else ""  # the profile answered from the copy
        self.typed = self.mode.removeprefix("drop-optional-") if self.mode.startswith("drop-optional-") else ""
        module = upstream() if self.copied or self.typed else None
        self.copy = module.FixtureServer(run="mcpx-run-a-copy-of-its-own") if module and self.copied else None
        if self.copy is not None:
            self.copy.handle({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}})
        self.pages: dict[str, dict] = {}  # paged-lists: cursor -> the rest of a list, as its result
        self.cursors = 0

    def page(self, rid, result: dict, key: str) -> dict:
        """paged-lists: the first item of `result[key]` and a cursor for the rest (kept here, never re-asked)."""
        items = result.get(key)
        if not isinstance(items, list) or len(items) <= 1:
            return result
        self.cursors += 1
        cursor = f"gw-{self.cursors}"
        self.pages[cursor] = {**result, key: items[1:]}
        return {**{k: v for k, v in result.items() if k != "nextCursor"}, key: items[:1], "nextCursor": cursor}

    def refuse(self, msg: dict, code: int) -> dict:
        return {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": code, "message": f"Method not found: {msg['method']}"}}

    def upstream_bound(self, msg: dict):
        """(message for the upstream or None, messages for the client)."""
        method, params = msg.get("method"), msg.get("params") or {}
        if "id" in msg and method:
            self.requests[msg["id"]] = msg
        m = self.mode
        if self.copy is not None and "id" in msg and of_profile(self.copied, method, params.get("name")):
            return None, self.copy.handle(msg)
        cursor = params.get("cursor") if isinstance(params, dict) else None
        if self.variant == "paged-lists" and method in PAGED_KEYS and isinstance(cursor, str) and cursor in self.pages:
            rest = self.pages.pop(cursor)
            return None, [{"jsonrpc": "2.0", "id": msg["id"], "result": self.page(msg["id"], rest, PAGED_KEYS[method])}]
        if m == "drop-connection" and (method == "tools/call" or str(method).startswith(("middleware/", "augmentation/"))):
            sys.stderr.write("broken proxy: dropping the connection\n")
            sys.stderr.flush()
            os._exit(3)
        if m == "block-preprocessor-calls" and method == "tools/call" and params.get("name") == "conformance_memories":
            return None, [{"jsonrpc": "2.0", "id": msg["id"],
                           "error": {"code": -32600, "message": "preprocessor tools are not callable here"}}]
        if m == "hang-middleware-invoke" and method == "middleware/invoke":
            return None, []
        if str(method).startswith("middleware/") and m in ("refuse-middleware-32602", "refuse-extensions-cleanly"):
            return None, [self.refuse(msg, -32602 if m == "refuse-middleware-32602" else -32601)]
        if str(method).startswith("augmentation/") and m in ("drop-augmentation-methods", "refuse-extensions-cleanly"):
            return None, [self.refuse(msg, -32601)]
        if method in ("interceptors/list", "interceptor/invoke") and (
                m == "refuse-extensions-cleanly" or (m, method) in (("drop-interceptors-list", "interceptors/list"),
                                                                    ("drop-interceptor-invoke", "interceptor/invoke"))):
            return None, [self.refuse(msg, -32601)]
        if m == "drop-list-filter" and method == "interceptors/list":
            msg = {k: v for k, v in msg.items() if k != "params"}
        if m == "drop-invoke-context" and method == "interceptor/invoke":
            msg = {**msg, "params": {k: v for k, v in params.items() if k != "context"}}
        if m in ("inject-invoke-argument", "inject-augment-argument") and \
                method == {"inject-invoke-argument": "middleware/invoke", "inject-augment-argument": "augmentation/augment"}[m]:
            msg = {**msg, "params": {**params, "arguments": {**(params.get("arguments") or {}), "gateway": True}}}
        return msg, []

    def client_bound(self, msg: dict) -> list[dict]:
        request = self.requests.pop(msg.get("id"), None) if "method" not in msg else None
        method = (request or {}).get("method")
        name = ((request or {}).get("params") or {}).get("name")
        result = msg.get("result") if isinstance(msg.get("result"), dict) else None
        m = self.mode
        before = []
        if result is not None and method == "initialize":
            caps = result.get("capabilities") or {}
            if m in ("refuse-middleware-32602", "refuse-extensions-cleanly"):
                caps.pop("contextMiddleware", None)
            if m in ("forward-augmentation-unadvertised", "refuse-extensions-cleanly"):
                caps.pop("augmentation", None)
            if m in ("drop-interceptors-capability", "refuse-extensions-cleanly"):
                (caps.get("extensions") or {}).pop(INTERCEPTORS_EXTENSION, None)
        if result is not None and method == "tools/list" and (self.copied in PROFILE_TOOLS or self.typed in PROFILE_TOOLS):
            names = PROFILE_TOOLS[self.copied or self.typed]
            copies = {t["name"]: t for t in self.copy.handle({"jsonrpc": "2.0", "id": 0, "method": "tools/list"})[0]
                      ["result"]["tools"]} if self.copy is not None else {}
            result["tools"] = [(copies.get(t.get("name"), t) if self.copy is not None else typed_tool(t))
                               if t.get("name") in names else t for t in result.get("tools") or ()]
        if result is not None and self.typed and of_profile(self.typed, method, name):
            msg["result"] = result = typed(method, result)
        if result is not None and method == "tools/list":
            for tool in result.get("tools") or ():
                if m == "drop-preprocessor":
                    tool.pop("preprocessor", None)
                if m == "strip-execution":
                    tool.pop("execution", None)
                if m == "casefold-requirements" and isinstance(tool.get("execution"), dict):
                    tool["execution"]["requirements"] = [r.lower() for r in tool["execution"].get("requirements") or ()]
        if result is not None and method == "tools/call":
            if m == "fail-satisfied-call" and name == "conformance_gated_ok":
                msg["result"] = {**result, "content": [{"type": "text", "text": "blocked"}], "isError": True}
            if m == "swallow-unmet-requirement" and result.get("isError"):
                msg["result"] = {**result, "content": [{"type": "text", "text": "tool call failed"}], "isError": True}
            if m == "jsonrpc-1-execution" and name == "conformance_gated_ok":
                msg["jsonrpc"] = "1.0"
            if m == "invalid-note-preprocessor" and name == "conformance_memories":
                before.append(BAD_NOTE)
        if result is not None and method == "middleware/invoke" and m == "alter-image-data":
            for block in result.get("content") or ():
                if isinstance(block, dict) and block.get("type") == "image":
                    block["data"] = block["data"].rstrip("=")  # "harmless" re-encoding: not the same bytes
        if result is not None and method == "middleware/invoke" and m == "merge-middleware-text":
            result["content"] = merged_text(result.get("content") or [])
        if result is not None and method == "augmentation/augment" and m == "merge-augmented-text":
            kept: list = []  # item by item: a text item after a text item is folded into it (its own fields go)
            for item in result.get("content") or ():
                last = kept[-1].get("content") if kept and isinstance(kept[-1], dict) else None
                pair = [last.get("type") if isinstance(last, dict) else None,
                        (item.get("content") or {}).get("type") if isinstance(item, dict) else None]
                if pair == ["text", "text"]:
                    kept[-1] = {**kept[-1], "content": merged_text([last, item["content"]])[0]}
                else:
                    kept.append(item)
            result["content"] = kept
        if result is not None and method == "augmentation/augment" and m == "drop-hint":
            result.pop("hint", None)
        if result is not None and method == "interceptors/list" and m == "strip-interceptor-policy":
            result["interceptors"] = [{k: d[k] for k in ("name", "type", "hooks") if k in d}
                                      for d in result.get("interceptors") or () if isinstance(d, dict)]
        if result is not None and method == "interceptor/invoke" and m == "drop-validation-messages":
            if isinstance(result.get("messages"), list):
                result["messages"] = result["messages"][:1]
        if (m, method) in (("invalid-note-middleware", "middleware/list"), ("invalid-note-augmentation", "augmentation/list"),
                           ("invalid-note-interceptors", "interceptors/list")):
            before.append(BAD_NOTE)
        if result is not None and self.variant == "paged-lists" and method in PAGED_KEYS:
            msg["result"] = self.page(msg.get("id"), msg["result"], PAGED_KEYS[method])
        return before + [msg]


def merged_text(content: list) -> list:
    """Adjacent text blocks joined into one, the first one's other fields kept (a "harmless" normalisation)."""
    out: list = []
    for block in content:
        if out and isinstance(block, dict) and block.get("type") == "text" and out[-1].get("type") == "text":
            out[-1] = {**out[-1], "text": out[-1]["text"] + "\n" + block["text"]}
        else:
            out.append(dict(block) if isinstance(block, dict) else block)
    return out


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--break", dest="mode", choices=sorted(MUTANTS))
    parser.add_argument("--variant", choices=sorted(VARIANTS))
    parser.add_argument("--marker")
    args = parser.parse_args()
    argv = shlex.split(os.environ["MCPX_UPSTREAM_COMMAND"]) + (["--tag", args.marker] if args.marker else [])
    upstream = await asyncio.create_subprocess_exec(*argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
    broken = Broken(args.mode, args.variant)
    loop = asyncio.get_running_loop()
    stdin = asyncio.StreamReader(limit=64 * 1024 * 1024)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stdin), sys.stdin)

    def to_client(messages: list[dict]) -> None:
        for out in messages:
            sys.stdout.write(json.dumps(out, ensure_ascii=False) + "\n")
        sys.stdout.flush()

    async def downstream() -> None:
        while line := await stdin.readline():
            if not line.strip():
                continue
            forward, replies = broken.upstream_bound(json.loads(line))
            to_client(replies)
            if forward is not None:
                upstream.stdin.write((json.dumps(forward, ensure_ascii=False) + "\n").encode())
                await upstream.stdin.drain()
        upstream.stdin.close()

    async def from_upstream() -> None:
        while line := await upstream.stdout.readline():
            if line.strip():
                to_client(broken.client_bound(json.loads(line)))

    await asyncio.gather(downstream(), from_upstream())
    await upstream.wait()


if __name__ == "__main__":
    asyncio.run(main())
