"""The suite's upstream fixture server, or one of its mutants that breaks one rule.

    python tests/servers/fake_server.py [--break MUTANT]... [--variant VARIANT] [--plain] [--slow SECONDS]

The correct server is conformance/gateway/upstream.py (raw JSON-RPC, no SDK: an implementation of
every server-role fixture independent of reference_servers, which must pass every check). This file
subclasses it: `MUTANTS = {name: (fails: the full ids of the checks it must fail, does: one line)}`
(tests/README.md); each is named after the one check it must make fail, and
tests/test_server_mutants.py proves that it does, and only that one. `--plain` is an MCP server with
one tool and no extension at all. `--break` may be repeated (several mutants at once, for the tests of the
reports' counts); `--slow` waits before each answer (for the tests that interrupt a run midway). `VARIANTS`
are the reverse of mutants, allowed-variant doubles: each takes another reading a source (or the base
protocol) allows, and must pass every check.
"""

from __future__ import annotations

import os
import sys

if __name__ == "__main__" and os.environ.get("MCPX_DOUBLES_PREFORK"):  # run as that fork server's child
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    from tests.prefork_doubles import hand_over

    hand_over()

import argparse
import time
import unicodedata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script from anywhere

from conformance.gateway.upstream import (  # noqa: E402
    GATED,
    OBJ,
    SATISFIED,
    FixtureServer,
    Log,
    error_result,
    serve_stdio,
    text_result,
)
from conformance.targets.peerkit import RpcError  # noqa: E402

MUTANTS = {
    # preprocessor-tools
    "preprocessor-tools/flag-is-boolean": ({"preprocessor-tools/server/flag-is-boolean"}, "an extra tool carries \"preprocessor\": \"yes\""),
    "preprocessor-tools/fixture-flagged": ({"preprocessor-tools/server/fixture-flagged"}, "conformance_memories is listed with preprocessor false"),
    "preprocessor-tools/preprocessor-tool-callable": ({"preprocessor-tools/server/preprocessor-tool-callable"}, "conformance_memories ignores the query"),
    "preprocessor-tools/ordinary-tool-unaffected": ({"preprocessor-tools/server/ordinary-tool-unaffected"}, "conformance_echo shouts its input"),
    "preprocessor-tools/ping-answered": ({"preprocessor-tools/server/ping-answered"}, "answers ping -32601, as if the method did not exist"),
    "preprocessor-tools/string-request-id-answered": ({"preprocessor-tools/server/string-request-id-answered"}, "refuses a request whose id is a string with -32600 (ids must be numbers)"),
    "preprocessor-tools/progress-token-call-answered": ({"preprocessor-tools/server/progress-token-call-answered"}, "refuses a tools/call carrying _meta.progressToken with -32602 (an unknown parameter)"),
    "preprocessor-tools/wire-messages-valid": ({"preprocessor-tools/server/wire-messages-valid"}, "a progress notification whose progress is the string \"0.5\" (lax parsing would take it) before the memories result"),
    # execution-requirements
    "execution-requirements/requirements-are-strings": ({"execution-requirements/server/requirements-are-strings"}, "an extra tool declares requirements as one string"),
    "execution-requirements/requirements-namespaced": ({"execution-requirements/server/requirements-namespaced"}, "an extra tool declares the bare string \"production\""),
    "execution-requirements/fixture-requirements-declared-exactly": ({"execution-requirements/server/fixture-requirements-declared-exactly"}, "lists gated_case's string lowercased"),
    "execution-requirements/satisfied-requirement-allows-call": ({"execution-requirements/server/satisfied-requirement-allows-call"}, "gated_ok runs its body, then reports an error"),
    "execution-requirements/unmet-requirement-fails-call": ({"execution-requirements/server/unmet-requirement-fails-call"}, "gated_unmet pretends to succeed"),
    "execution-requirements/unmet-requirement-body-not-run": ({"execution-requirements/server/unmet-requirement-body-not-run"}, "checks requirements after running the body"),
    "execution-requirements/all-requirements-enforced": ({"execution-requirements/server/all-requirements-enforced"}, "any one satisfied requirement is enough"),
    "execution-requirements/near-miss-nfc": ({"execution-requirements/server/near-miss-requirements-unmet"}, "normalises requirement strings to NFC before matching"),
    "execution-requirements/near-miss-confusable": ({"execution-requirements/server/near-miss-requirements-unmet"}, "folds a Cyrillic а to a Latin a before matching"),
    "execution-requirements/near-miss-whitespace": ({"execution-requirements/server/near-miss-requirements-unmet"}, "trims requirement strings before matching"),
    "execution-requirements/requirement-matching-exact": ({"execution-requirements/server/requirement-matching-exact"}, "matches requirement strings case-insensitively"),
    "execution-requirements/unmet-error-names-requirement": ({"execution-requirements/server/unmet-error-names-requirement"}, "the error says only \"precondition failed\""),
    "execution-requirements/wire-messages-valid": ({"execution-requirements/server/wire-messages-valid"}, "answers side_effects with jsonrpc \"1.0\""),
    # context-middleware
    "context-middleware/capability-advertised": ({"context-middleware/server/capability-advertised"}, "serves middleware but does not advertise it"),
    "context-middleware/list-result-valid": ({"context-middleware/server/list-result-valid"}, "lists conformance_identity twice"),
    "context-middleware/invoke-result-valid": ({"context-middleware/server/invoke-result-valid"}, "a real middleware returns metadata as a string"),
    "context-middleware/identity-preserves-every-content-type": ({"context-middleware/server/identity-preserves-every-content-type"}, "identity drops annotations"),
    "context-middleware/identity-merges-text": ({"context-middleware/server/identity-preserves-every-content-type"}, "identity merges adjacent text blocks into one"),
    "context-middleware/uppercase-transforms-text": ({"context-middleware/server/uppercase-transforms-text"}, "uppercase counts every block as changed"),
    "context-middleware/uppercase-leaves-non-text-unchanged": ({"context-middleware/server/uppercase-leaves-non-text-unchanged"}, "uppercase shouts embedded resources too"),
    "context-middleware/invalid-arguments-rejected": ({"context-middleware/server/invalid-arguments-rejected"}, "strict_args accepts anything"),
    "context-middleware/unknown-middleware-rejected": ({"context-middleware/server/unknown-middleware-rejected"}, "an unknown name returns the context"),
    "context-middleware/malformed-invoke-rejected": ({"context-middleware/server/malformed-invoke-rejected"}, "a missing context is taken as empty"),
    "context-middleware/unadvertised-method-rejected": ({"context-middleware/server/unadvertised-method-rejected"}, "answers middleware/list without advertising it"),
    "context-middleware/wire-messages-valid": ({"context-middleware/server/wire-messages-valid"}, "an invalid log notification before the middleware list"),
    # augmentation
    "augmentation/capability-advertised": ({"augmentation/server/capability-advertised"}, "serves augmentation but does not advertise it"),
    "augmentation/list-result-valid": ({"augmentation/server/list-result-valid"}, "an augmentation without inputSchema"),
    "augmentation/augment-result-valid": ({"augmentation/server/augment-result-valid"}, "a real augmentation returns bare content blocks"),
    "augmentation/identity-returns-context": ({"augmentation/server/identity-returns-context"}, "identity drops the audio block"),
    "augmentation/identity-merges-text": ({"augmentation/server/identity-returns-context"}, "identity merges adjacent text blocks into one"),
    "augmentation/identity-drops-annotations": ({"augmentation/server/identity-returns-context"}, "identity drops the blocks' annotations"),
    "augmentation/prepend-note-hint": ({"augmentation/server/prepend-note-hint"}, "prepend_note hints append"),
    "augmentation/unknown-augmentation-rejected": ({"augmentation/server/unknown-augmentation-rejected"}, "an unknown name returns empty content"),
    "augmentation/malformed-augment-rejected": ({"augmentation/server/malformed-augment-rejected"}, "a missing context is taken as empty"),
    "augmentation/unadvertised-method-rejected": ({"augmentation/server/unadvertised-method-rejected"}, "answers augmentation/list without advertising it"),
    "augmentation/wire-messages-valid": ({"augmentation/server/wire-messages-valid"}, "an invalid log notification before the augmentation list"),
    "augmentation/list-changed-notified": ({"augmentation/server/list-changed-notified"}, "advertises listChanged: true, but conformance_list_toggle changes the list without notifying"),
    "augmentation/list-changed-additions-only": ({"augmentation/server/list-changed-notified"}, "notifies right after initialized and when conformance_list_toggle adds conformance_transient, never when it removes it (two notifications for two changes)"),
    "augmentation/list-changed-after-initialized": ({"augmentation/server/list-changed-notified"}, "sends list_changed right after initialized and with its first augmentation/list answer, never when the list changes (two notifications, both before any change)"),
    "augmentation/transient-augmentation-answers": ({"augmentation/server/transient-augmentation-answers"}, "lists conformance_transient but answers it -32602 unknown augmentation"),
}

# Allowed-variant doubles: name -> (the checks its reading touches, what it does differently). Each passes every check.
VARIANTS = {
    "paged-lists": ({"preprocessor-tools/server/fixture-flagged", "context-middleware/server/list-result-valid",
                     "augmentation/server/list-result-valid", "augmentation/server/list-changed-notified"},
                    "every list (tools, middleware, augmentations, the re-lists after a change) one item a page"),
    "many-pages": ({"preprocessor-tools/server/fixture-flagged", "execution-requirements/server/"
                    "fixture-requirements-declared-exactly"},
                   f"{21 * 50} real tools before the fixtures, 50 a page: the fixtures are on page 22"),
    "content-meta": ({"augmentation/server/prepend-note-hint"},
                     "conformance_prepend_note's NOTE block carries _meta and annotations (the base protocol's "
                     "optional members of a content block)"),
    "progress-notes": ({"preprocessor-tools/server/progress-token-call-answered"},
                       "sends two progress notifications for a call carrying a progressToken (the receiver MAY)"),
    "augment-extras": ({"augmentation/server/augment-result-valid", "augmentation/server/identity-returns-context",
                        "augmentation/server/prepend-note-hint"},
                       "every AugmentedContent carries properties (relevance, a key of its own), results carry "
                       "metadata, and the real augmentation answers a custom hint (servers MAY define hints)"),
    "middleware-extras": ({"context-middleware/server/list-result-valid", "context-middleware/server/invoke-result-valid",
                           "context-middleware/server/uppercase-transforms-text"},
                          "no middleware has a description, and every result's freeform metadata carries a key of its "
                          "own besides what the contract fixes"),
    "task-support": ({"execution-requirements/server/requirements-are-strings"},
                     "every tool with requirements also carries execution.taskSupport (a server may send both)"),
    "no-list-changed": ({"augmentation/server/list-changed-notified"},
                        "advertises augmentation.listChanged: false and never notifies a change (the notification is "
                        "a MAY): the check skips, saying so"),
}
# Variants whose touched checks skip with a reason rather than pass (the reading leaves nothing to judge).
VARIANT_SKIPS = {"no-list-changed": "listChanged is not true"}
PAGED = {"tools/list": "tools", "middleware/list": "middleware", "augmentation/list": "augmentations"}

# Fixture contract version 4 (the base upstream server does not offer it): conformance_list_toggle adds
# conformance_transient to the augmentation list or removes it, and this server, which advertises listChanged: true,
# notifies each change.
TOGGLE, TRANSIENT = "conformance_list_toggle", "conformance_transient"
LIST_CHANGED = {"jsonrpc": "2.0", "method": "notifications/augmentation/list_changed"}
BAD_NOTE = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "loud", "data": "x"}}
# Valid to the SDK's types in pydantic's lax mode ("0.5" coerced to a number), not on the wire.
LAX_NOTE = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "t", "progress": "0.5"}}
# Mutants that hide a capability while still serving its methods.
HIDDEN = {"contextMiddleware": ("context-middleware/capability-advertised", "context-middleware/unadvertised-method-rejected"),
          "augmentation": ("augmentation/capability-advertised", "augmentation/unadvertised-method-rejected")}


class Mutant(FixtureServer):
    name = "fake-conformance-server"

    def __init__(self, mutant: str | list[str] | None, plain: bool, meta_carriage: bool = False,
                 near_miss: str | None = None, variant: str | None = None, slow: float = 0.0):
        super().__init__(plain=plain)
        self.m = set([mutant] if isinstance(mutant, str) else mutant or ())
        self.variant = variant or ""
        self.slow = slow
        self.meta_carriage = meta_carriage
        self.near_miss = near_miss
        self.transient = False  # whether conformance_transient is listed
        self.listed_once = False  # whether augmentation/list was answered yet

    def broken(self, name: str) -> bool:
        return name in self.m

    # -- definitions -------------------------------------------------------------------
    def tools(self) -> list[dict]:
        tools = super().tools()
        if self.variant == "task-support":
            for tool in tools:
                if "requirements" in tool.get("execution", {}):
                    tool["execution"]["taskSupport"] = "optional"
        if self.variant == "many-pages":
            tools = [{"name": f"filler_{i:04d}", "description": "a real tool", "inputSchema": OBJ}
                     for i in range(21 * 50)] + tools
        if self.meta_carriage:  # what an SDK that drops unknown Tool fields invites: the fields under _meta
            for tool in tools:
                meta = tool.setdefault("_meta", {})
                if "preprocessor" in tool:
                    meta["com.example/preprocessor"] = tool.pop("preprocessor")
                if "requirements" in tool.get("execution", {}):
                    meta["com.example/requirements"] = tool["execution"].pop("requirements")
        if self.near_miss:
            for tool in tools:
                NEAR_MISSES[self.near_miss](tool)
        if self.plain or self.meta_carriage or self.near_miss:
            return tools
        for tool in tools:
            if tool["name"] == "conformance_memories" and self.broken("preprocessor-tools/fixture-flagged"):
                tool["preprocessor"] = False
            if tool["name"] == "conformance_gated_case" and \
                    self.broken("execution-requirements/fixture-requirements-declared-exactly"):
                tool["execution"]["requirements"] = [r.lower() for r in tool["execution"]["requirements"]]
        if self.broken("preprocessor-tools/flag-is-boolean"):
            tools.append({"name": "notes_lookup", "inputSchema": OBJ, "preprocessor": "yes"})
        if self.broken("execution-requirements/requirements-are-strings"):
            tools.append({"name": "deploy", "inputSchema": OBJ, "execution": {"requirements": "env:production"}})
        if self.broken("execution-requirements/requirements-namespaced"):
            tools.append({"name": "deploy", "inputSchema": OBJ, "execution": {"requirements": ["production"]}})
        return tools

    def capabilities(self) -> dict:
        caps = super().capabilities()
        if "augmentation" in caps:
            caps["augmentation"] = {"listChanged": self.variant != "no-list-changed"}
        for capability, mutants in HIDDEN.items():
            if self.m & set(mutants):
                caps.pop(capability, None)
        return caps

    def serves(self, capability: str) -> bool:
        return super().serves(capability) or bool(self.m & set(HIDDEN.get(capability, ())))

    def middleware(self) -> list[dict]:
        items = super().middleware()
        if self.variant == "middleware-extras":
            items = [{k: v for k, v in item.items() if k != "description"} for item in items]
        if self.broken("context-middleware/list-result-valid"):
            items.append({"name": "conformance_identity", "inputSchema": OBJ})
        return items

    def augmentations(self) -> list[dict]:
        items = super().augmentations()
        if self.broken("augmentation/list-result-valid"):
            items.append({"name": "loose"})
        if not self.plain:
            items.append({"name": TOGGLE, "description": "adds or removes conformance_transient", "inputSchema": OBJ})
        if self.transient:
            items.append({"name": TRANSIENT, "description": "listed between two toggles", "inputSchema": OBJ})
        return items

    # -- behaviour -------------------------------------------------------------------------
    def handle(self, msg) -> list[dict]:
        if self.slow:
            time.sleep(self.slow)
        if self.broken("preprocessor-tools/string-request-id-answered") and isinstance(msg, dict) and \
                isinstance(msg.get("id"), str) and "method" in msg:
            return [{"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32600, "message": "id must be a number"}}]
        early = bool(self.m & {"augmentation/list-changed-after-initialized", "augmentation/list-changed-additions-only"})
        if isinstance(msg, dict) and msg.get("method") == "notifications/initialized" and early:
            return [dict(LIST_CHANGED)]  # before any change: it tells the client nothing
        out = super().handle(msg)
        if isinstance(msg, dict) and msg.get("method") == "augmentation/list" and not self.listed_once and \
                self.broken("augmentation/list-changed-after-initialized"):
            out.append(dict(LIST_CHANGED))  # with the first listing, still before any change
        if isinstance(msg, dict) and msg.get("method") == "augmentation/list":
            self.listed_once = True
        return out

    def reply(self, method, params, message):
        if method == "tools/call" and params.get("name") == "conformance_side_effects" and \
                self.broken("execution-requirements/wire-messages-valid"):
            message["jsonrpc"] = "1.0"
        return message

    def dispatch(self, method, params, out):
        if method == "ping" and self.broken("preprocessor-tools/ping-answered"):
            raise RpcError(-32601, "Method not found: ping")
        if method == "tools/call" and "progressToken" in ((params or {}).get("_meta") or {}) and \
                self.broken("preprocessor-tools/progress-token-call-answered"):
            raise RpcError(-32602, "Invalid params: unexpected field _meta")
        token = ((params or {}).get("_meta") or {}).get("progressToken") if method == "tools/call" else None
        if token is not None and self.variant == "progress-notes":
            out += [{"jsonrpc": "2.0", "method": "notifications/progress",
                     "params": {"progressToken": token, "progress": step, "total": 2}} for step in (1, 2)]
        size = {"paged-lists": 1, "many-pages": 50}.get(self.variant)
        if size and method in PAGED:
            return self.page(super().dispatch(method, {}, out), PAGED[method], (params or {}).get("cursor"), size)
        if method == "middleware/list" and self.broken("context-middleware/wire-messages-valid"):
            out.append(BAD_NOTE)
        if method == "augmentation/list" and self.broken("augmentation/wire-messages-valid"):
            out.append(BAD_NOTE)
        if method == "augmentation/augment" and self.serves("augmentation") and not self.plain and \
                isinstance(params, dict) and params.get("name") == TOGGLE and isinstance(params.get("context"), list):
            self.transient = not self.transient
            silent = bool(self.m & {"augmentation/list-changed-notified", "augmentation/list-changed-after-initialized"}) or \
                (self.broken("augmentation/list-changed-additions-only") and not self.transient) or \
                self.variant == "no-list-changed"
            if not silent:
                out.append(dict(LIST_CHANGED))
            return {"content": []}
        return super().dispatch(method, params, out)

    @staticmethod
    def page(result: dict, key: str, cursor, size: int) -> dict:
        """One page of a list: `size` items from where the opaque cursor points, and the cursor of the next."""
        start = int(cursor.removeprefix("after-")) if isinstance(cursor, str) and cursor.startswith("after-") else 0
        items = result[key]
        page = {**result, key: items[start:start + size]}
        if start + size < len(items):
            page["nextCursor"] = f"after-{start + size}"
        return page

    def call(self, name, args, out):
        if self.plain:
            return super().call(name, args, out)
        if name == "conformance_echo" and self.broken("preprocessor-tools/ordinary-tool-unaffected"):
            return text_result(str(args.get("text", "")).upper())
        if name == "conformance_memories":
            if self.broken("preprocessor-tools/wire-messages-valid"):
                out.append(LAX_NOTE)
            if self.broken("preprocessor-tools/preprocessor-tool-callable"):
                args = {}
        return super().call(name, args, out)

    def unmet(self, name):
        loose = {"execution-requirements/near-miss-nfc": lambda r: unicodedata.normalize("NFC", r),
                 "execution-requirements/near-miss-confusable": lambda r: r.replace("\u0430", "a"),
                 "execution-requirements/near-miss-whitespace": str.strip}
        loose = next((loose[m] for m in sorted(self.m) if m in loose), None)
        if loose:
            return [r for r in GATED[name] if loose(r) not in SATISFIED]
        if self.broken("execution-requirements/requirement-matching-exact"):
            folded = {s.lower() for s in SATISFIED}
            return [r for r in GATED[name] if r.lower() not in folded]
        unmet = super().unmet(name)
        if self.broken("execution-requirements/all-requirements-enforced") and len(unmet) < len(GATED[name]):
            return []
        return unmet

    def gated(self, name):
        pretend = {"execution-requirements/unmet-requirement-fails-call": "conformance_gated_unmet",
                   "execution-requirements/all-requirements-enforced": "conformance_gated_mixed",
                   "execution-requirements/requirement-matching-exact": "conformance_gated_case"}
        if name in {pretend.get(m) for m in self.m}:
            return text_result("ran")  # claims success without the side effect, so only one check sees it
        if self.broken("execution-requirements/unmet-requirement-body-not-run") and self.unmet(name):
            self.counter += 1  # the body runs before anything is checked
        result = super().gated(name)
        if result.get("isError"):
            if self.broken("execution-requirements/unmet-error-names-requirement"):
                return error_result("precondition failed")
        elif self.broken("execution-requirements/satisfied-requirement-allows-call") and name == "conformance_gated_ok":
            return error_result("something went wrong after running")
        return result

    def invoke(self, params):
        name = params.get("name")
        if params.get("context") is None and self.broken("context-middleware/malformed-invoke-rejected"):
            params = {**params, "context": []}
        if name == "conformance_strict_args" and self.broken("context-middleware/invalid-arguments-rejected"):
            return {"content": self.context_of(params), "metadata": {"mode": (params.get("arguments") or {}).get("mode")}}
        if name not in {m["name"] for m in self.middleware()} and \
                self.broken("context-middleware/unknown-middleware-rejected"):
            return {"content": self.context_of(params)}
        result = super().invoke(params)
        if name == "conformance_identity" and self.broken("context-middleware/identity-preserves-every-content-type"):
            for block in result["content"]:
                block.pop("annotations", None)
        if name == "conformance_identity" and self.broken("context-middleware/identity-merges-text"):
            result["content"] = merged_text(result["content"])
        if name == "conformance_uppercase":
            if self.broken("context-middleware/uppercase-transforms-text"):
                result["metadata"]["changed"] = len(result["content"])
            if self.broken("context-middleware/uppercase-leaves-non-text-unchanged"):
                for block in result["content"]:
                    if block.get("type") == "resource":
                        block["resource"]["text"] = block["resource"].get("text", "").upper()
        if name == "stamp" and self.broken("context-middleware/invoke-result-valid"):
            result["metadata"] = "none"
        if self.variant == "middleware-extras":
            result["metadata"] = {**result.get("metadata", {}), "com.example/trace": "t-1"}
        return result

    def augment(self, params):
        name = params.get("name")
        if params.get("context") is None and self.broken("augmentation/malformed-augment-rejected"):
            params = {**params, "context": []}
        if name == "loose":
            name = params["name"] = "summarize"
        if name == "summarize" and self.broken("augmentation/augment-result-valid"):
            return {"content": [{"type": "text", "text": "summary"}], "hint": "prepend"}
        if name not in {a["name"] for a in self.augmentations()} and \
                self.broken("augmentation/unknown-augmentation-rejected"):
            return {"content": []}
        if name == TRANSIENT and self.transient:
            if self.broken("augmentation/transient-augmentation-answers"):
                raise RpcError(-32602, f"unknown augmentation: {name}")
            return {"content": []}
        result = super().augment(params)
        if name == "conformance_identity" and self.broken("augmentation/identity-returns-context"):
            result["content"] = [item for item in result["content"] if item["content"].get("type") != "audio"]
        if name == "conformance_identity" and self.broken("augmentation/identity-merges-text"):
            result["content"] = [{"content": block} for block in merged_text([i["content"] for i in result["content"]])]
        if name == "conformance_identity" and self.broken("augmentation/identity-drops-annotations"):
            for item in result["content"]:
                item["content"].pop("annotations", None)
        if name == "conformance_prepend_note" and self.broken("augmentation/prepend-note-hint"):
            result["hint"] = "append"
        if self.variant == "augment-extras":
            for item in result["content"]:
                item["properties"] = {**item.get("properties", {}), "relevance": 0.5, "com.example/source": "kb"}
            result["metadata"] = {"com.example/trace": "t-1"}
            if name == "summarize":
                result["hint"] = "com.example/condense"
        if name == "conformance_prepend_note" and self.variant == "content-meta":
            for item in result["content"]:
                item["content"] = {**item["content"], "_meta": {"com.example/origin": "notes"},
                                   "annotations": {"audience": ["assistant"], "priority": 0.5}}
        return result


def _move(tool: dict, field: str, *to: str) -> None:
    """Move the tool's field (`preprocessor`, or `requirements` out of `execution`) to the path `to`."""
    source = tool if field == "preprocessor" else tool.get("execution", {})
    if field not in source:
        return
    value = source.pop(field)
    if not tool.get("execution", True):
        del tool["execution"]
    place = tool
    for key in to[:-1]:
        place = place.setdefault(key, {})
    place[to[-1]] = value


# The natural wrong places a newcomer puts the fields in (core/judging.py NEAR_MISSES names each): --near-miss.
NEAR_MISSES = {
    "top-level-requirements": lambda tool: _move(tool, "requirements", "requirements"),
    "string-preprocessor": lambda tool: tool.update(preprocessor=str(tool["preprocessor"]).lower())
    if "preprocessor" in tool else None,
    "annotations": lambda tool: (_move(tool, "preprocessor", "annotations", "preprocessor"),
                                 _move(tool, "requirements", "annotations", "execution", "requirements")),
}


def merged_text(content: list[dict]) -> list[dict]:
    """Adjacent text blocks joined into one (the first one's other fields kept): a pass-through that does this
    changes the context."""
    out: list[dict] = []
    for block in content:
        if out and block.get("type") == "text" and out[-1].get("type") == "text":
            out[-1] = {**out[-1], "text": out[-1]["text"] + "\n" + block["text"]}
        else:
            out.append(dict(block))
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--break", dest="mutant", choices=sorted(MUTANTS), action="append")
    parser.add_argument("--variant", choices=sorted(VARIANTS))
    parser.add_argument("--plain", action="store_true")
    parser.add_argument("--meta-carriage", action="store_true", help="the tool fields under _meta instead")
    parser.add_argument("--near-miss", choices=sorted(NEAR_MISSES), help="the tool fields in a near-miss place")
    parser.add_argument("--slow", type=float, default=0.0, metavar="SECONDS", help="wait before each answer")
    args = parser.parse_args()
    serve_stdio(Mutant(args.mutant, args.plain, args.meta_carriage, args.near_miss, args.variant, args.slow),
                Log(None))


if __name__ == "__main__":
    main()
