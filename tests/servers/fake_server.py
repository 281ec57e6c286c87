"""A small raw JSON-RPC stdio server that follows the fixture contract, or breaks one rule.

    python tests/servers/fake_server.py [--break MUTANT] [--plain]

Written without the SDK on purpose: it is a second, independent correct
implementation of every server-role fixture (it must pass every check), it
starts in a few milliseconds, and it can break a rule at any level, the wire
included. Each mutant in `MUTANTS` is named after the one check it must make
fail; tests/test_server_mutants.py proves that it does, and only that one.
`--plain` is an MCP server with tools and no extension at all.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys

MUTANTS = {
    # preprocessor-tools
    "preprocessor-tools/flag-is-boolean": "an extra tool carries \"preprocessor\": \"yes\"",
    "preprocessor-tools/fixture-flagged": "conformance_memories is listed with preprocessor false",
    "preprocessor-tools/preprocessor-tool-callable": "conformance_memories ignores the query",
    "preprocessor-tools/ordinary-tool-unaffected": "conformance_echo shouts its input",
    "preprocessor-tools/wire-messages-valid": "an invalid log notification before the memories result",
    # execution-requirements
    "execution-requirements/requirements-are-strings": "an extra tool declares requirements as one string",
    "execution-requirements/requirements-namespaced": "an extra tool declares the bare string \"production\"",
    "execution-requirements/fixture-requirements-declared-exactly": "lists gated_case's string lowercased",
    "execution-requirements/satisfied-requirement-allows-call": "gated_ok runs its body, then reports an error",
    "execution-requirements/unmet-requirement-fails-call": "gated_unmet pretends to succeed",
    "execution-requirements/unmet-requirement-body-not-run": "checks requirements after running the body",
    "execution-requirements/all-requirements-enforced": "any one satisfied requirement is enough",
    "execution-requirements/requirement-matching-exact": "matches requirement strings case-insensitively",
    "execution-requirements/unmet-error-names-requirement": "the error says only \"precondition failed\"",
    "execution-requirements/wire-messages-valid": "answers side_effects with jsonrpc \"1.0\"",
    # context-middleware
    "context-middleware/capability-advertised": "serves middleware but does not advertise it",
    "context-middleware/list-result-valid": "lists conformance_identity twice",
    "context-middleware/invoke-result-valid": "a real middleware returns metadata as a string",
    "context-middleware/identity-preserves-every-content-type": "identity drops annotations",
    "context-middleware/uppercase-transforms-text": "uppercase counts every block as changed",
    "context-middleware/uppercase-leaves-non-text-unchanged": "uppercase shouts embedded resources too",
    "context-middleware/invalid-arguments-rejected": "strict_args accepts anything",
    "context-middleware/unknown-middleware-rejected": "an unknown name returns the context",
    "context-middleware/malformed-invoke-rejected": "a missing context is taken as empty",
    "context-middleware/unadvertised-method-rejected": "answers middleware/list without advertising it",
    "context-middleware/wire-messages-valid": "an invalid log notification before the middleware list",
    # augmentation
    "augmentation/capability-advertised": "serves augmentation but does not advertise it",
    "augmentation/list-result-valid": "an augmentation without inputSchema",
    "augmentation/augment-result-valid": "a real augmentation returns bare content blocks",
    "augmentation/identity-returns-context": "identity drops the audio block",
    "augmentation/prepend-note-hint": "prepend_note hints append",
    "augmentation/unknown-augmentation-rejected": "an unknown name returns empty content",
    "augmentation/malformed-augment-rejected": "a missing context is taken as empty",
    "augmentation/unadvertised-method-rejected": "answers augmentation/list without advertising it",
    "augmentation/wire-messages-valid": "an invalid log notification before the augmentation list",
}

SATISFIED = {"conformance:satisfied"}
GATED = {
    "conformance_gated_ok": ["conformance:satisfied"],
    "conformance_gated_unmet": ["conformance:unsatisfied"],
    "conformance_gated_mixed": ["conformance:satisfied", "conformance:unsatisfied"],
    "conformance_gated_case": ["Conformance:Satisfied"],
}
OBJ = {"type": "object"}
BAD_NOTE = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "loud", "data": "x"}}


class Fake:
    def __init__(self, mutant: str | None, plain: bool):
        self.m = mutant or ""
        self.plain = plain
        self.counter = 0

    def broken(self, name: str) -> bool:
        return self.m == name

    # -- definitions -------------------------------------------------------------------
    def tools(self) -> list[dict]:
        tools = [{"name": "conformance_echo", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}},
                                                              "required": ["text"]}}]
        if self.plain:
            return tools
        memories = {"name": "conformance_memories", "preprocessor": not self.broken("preprocessor-tools/fixture-flagged"),
                    "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}
        tools.append(memories)
        for name, reqs in GATED.items():
            if name == "conformance_gated_case" and self.broken("execution-requirements/fixture-requirements-declared-exactly"):
                reqs = [r.lower() for r in reqs]
            tools.append({"name": name, "inputSchema": OBJ, "execution": {"requirements": list(reqs)}})
        tools.append({"name": "conformance_side_effects", "inputSchema": OBJ})
        if self.broken("preprocessor-tools/flag-is-boolean"):
            tools.append({"name": "notes_lookup", "inputSchema": OBJ, "preprocessor": "yes"})
        if self.broken("execution-requirements/requirements-are-strings"):
            tools.append({"name": "deploy", "inputSchema": OBJ, "execution": {"requirements": "env:production"}})
        if self.broken("execution-requirements/requirements-namespaced"):
            tools.append({"name": "deploy", "inputSchema": OBJ, "execution": {"requirements": ["production"]}})
        return tools

    def capabilities(self) -> dict:
        caps: dict = {"tools": {}}
        if self.plain:
            return caps
        if not self.broken("context-middleware/capability-advertised") and \
                not self.broken("context-middleware/unadvertised-method-rejected"):
            caps["contextMiddleware"] = {}
        if not self.broken("augmentation/capability-advertised") and \
                not self.broken("augmentation/unadvertised-method-rejected"):
            caps["augmentation"] = {"listChanged": False}
        return caps

    def middleware(self) -> list[dict]:
        items = [{"name": "conformance_identity", "inputSchema": OBJ},
                 {"name": "conformance_uppercase", "inputSchema": OBJ},
                 {"name": "conformance_strict_args",
                  "inputSchema": {"type": "object", "properties": {"mode": {"type": "string", "enum": ["a", "b"]}},
                                  "required": ["mode"], "additionalProperties": False}},
                 {"name": "stamp", "description": "a real middleware", "inputSchema": OBJ}]
        if self.broken("context-middleware/list-result-valid"):
            items.append({"name": "conformance_identity", "inputSchema": OBJ})
        return items

    def augmentations(self) -> list[dict]:
        items = [{"name": "conformance_identity", "inputSchema": OBJ},
                 {"name": "conformance_prepend_note", "inputSchema": OBJ},
                 {"name": "summarize", "description": "a real augmentation", "inputSchema": OBJ}]
        if self.broken("augmentation/list-result-valid"):
            items.append({"name": "loose"})
        return items

    # -- dispatch ------------------------------------------------------------------------
    def handle(self, msg: dict) -> list[dict]:
        """The messages to write for one received message."""
        method, rid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
        if rid is None:
            return []
        out: list[dict] = []
        try:
            result = self.dispatch(method, params, out)
        except RpcError as err:
            return out + [{"jsonrpc": "2.0", "id": rid, "error": {"code": err.code, "message": err.message}}]
        reply = {"jsonrpc": "2.0", "id": rid, "result": result}
        if method == "tools/call" and params.get("name") == "conformance_side_effects" and \
                self.broken("execution-requirements/wire-messages-valid"):
            reply["jsonrpc"] = "1.0"
        return out + [reply]

    def dispatch(self, method, params, out: list[dict]):
        if method == "initialize":
            return {"protocolVersion": params.get("protocolVersion", "2025-11-25"), "capabilities": self.capabilities(),
                    "serverInfo": {"name": "fake-conformance-server", "version": "0"}}
        if method == "ping":
            return {}
        if method == "tools/list":
            return {"tools": self.tools()}
        if method == "tools/call":
            return self.call(params.get("name"), params.get("arguments") or {}, out)
        plain_unknown = self.plain or (method.startswith("middleware/") and "contextMiddleware" not in self.capabilities()
                                       and not self.broken("context-middleware/capability-advertised")
                                       and not self.broken("context-middleware/unadvertised-method-rejected")) \
            or (method.startswith("augmentation/") and "augmentation" not in self.capabilities()
                and not self.broken("augmentation/capability-advertised")
                and not self.broken("augmentation/unadvertised-method-rejected"))
        if plain_unknown:
            raise RpcError(-32601, f"Method not found: {method}")
        if method == "middleware/list":
            if self.broken("context-middleware/wire-messages-valid"):
                out.append(BAD_NOTE)
            return {"middleware": self.middleware()}
        if method == "middleware/invoke":
            return self.invoke(params)
        if method == "augmentation/list":
            if self.broken("augmentation/wire-messages-valid"):
                out.append(BAD_NOTE)
            return {"augmentations": self.augmentations()}
        if method == "augmentation/augment":
            return self.augment(params)
        raise RpcError(-32601, f"Method not found: {method}")

    def call(self, name, args, out):
        if name == "conformance_echo":
            text = str(args.get("text", ""))
            return text_result(text.upper() if self.broken("preprocessor-tools/ordinary-tool-unaffected") else text)
        if name == "conformance_memories" and not self.plain:
            if self.broken("preprocessor-tools/wire-messages-valid"):
                out.append(BAD_NOTE)
            query = "" if self.broken("preprocessor-tools/preprocessor-tool-callable") else str(args.get("query", ""))
            return text_result(f"memories for: {query}")
        if name == "conformance_side_effects" and not self.plain:
            return text_result(str(self.counter))
        if name in GATED and not self.plain:
            return self.gated(name)
        raise RpcError(-32602, f"Unknown tool: {name}")

    def gated(self, name):
        reqs = GATED[name]
        if self.broken("execution-requirements/requirement-matching-exact"):
            unmet = [r for r in reqs if r.lower() not in {s.lower() for s in SATISFIED}]
        else:
            unmet = [r for r in reqs if r not in SATISFIED]
        if self.broken("execution-requirements/all-requirements-enforced") and len(unmet) < len(reqs):
            unmet = []
        pretend = (self.broken("execution-requirements/unmet-requirement-fails-call") and name == "conformance_gated_unmet") \
            or (self.broken("execution-requirements/all-requirements-enforced") and name == "conformance_gated_mixed") \
            or (self.broken("execution-requirements/requirement-matching-exact") and name == "conformance_gated_case")
        if pretend:
            return text_result("ran")  # claims success without the side effect, so only one check sees it
        if self.broken("execution-requirements/unmet-requirement-body-not-run"):
            self.counter += 1  # the body runs before anything is checked
            if not unmet:
                return text_result("ran")
        elif unmet:
            pass
        else:
            self.counter += 1
            if self.broken("execution-requirements/satisfied-requirement-allows-call"):
                return error_result("something went wrong after running")
            return text_result("ran")
        if self.broken("execution-requirements/unmet-error-names-requirement"):
            return error_result("precondition failed")
        return error_result(f"unmet execution requirements: {', '.join(unmet)}")

    def invoke(self, params):
        name, context, args = params.get("name"), params.get("context"), params.get("arguments") or {}
        if context is None and self.broken("context-middleware/malformed-invoke-rejected"):
            context = []
        if not isinstance(context, list):
            raise RpcError(-32602, "context must be an array of content blocks")
        context = copy.deepcopy(context)
        if name == "conformance_identity":
            if self.broken("context-middleware/identity-preserves-every-content-type"):
                for block in context:
                    block.pop("annotations", None)
            return {"content": context}
        if name == "conformance_uppercase":
            changed = 0
            for block in context:
                if block.get("type") == "text":
                    upper = block["text"].upper()
                    changed += upper != block["text"]
                    block["text"] = upper
                elif block.get("type") == "resource" and self.broken("context-middleware/uppercase-leaves-non-text-unchanged"):
                    block["resource"]["text"] = block["resource"].get("text", "").upper()
            if self.broken("context-middleware/uppercase-transforms-text"):
                changed = len(context)
            return {"content": context, "metadata": {"changed": changed}}
        if name == "conformance_strict_args":
            if args.get("mode") not in ("a", "b") and not self.broken("context-middleware/invalid-arguments-rejected"):
                raise RpcError(-32602, "mode must be \"a\" or \"b\"")
            return {"content": context, "metadata": {"mode": args.get("mode")}}
        if name == "stamp":
            metadata = "none" if self.broken("context-middleware/invoke-result-valid") else {"stamped": True}
            return {"content": [{"type": "text", "text": "[stamp]"}] + context, "metadata": metadata}
        if self.broken("context-middleware/unknown-middleware-rejected"):
            return {"content": context}
        raise RpcError(-32602, f"Unknown middleware: {name}")

    def augment(self, params):
        name, context = params.get("name"), params.get("context")
        if context is None and self.broken("augmentation/malformed-augment-rejected"):
            context = []
        if not isinstance(context, list):
            raise RpcError(-32602, "context must be an array of content blocks")
        if name == "conformance_identity":
            if self.broken("augmentation/identity-returns-context"):
                context = [b for b in context if b.get("type") != "audio"]
            return {"content": [{"content": b} for b in context]}
        if name == "conformance_prepend_note":
            hint = "append" if self.broken("augmentation/prepend-note-hint") else "prepend"
            return {"content": [{"content": {"type": "text", "text": "NOTE"}}], "hint": hint}
        if name in ("summarize", "loose"):
            block = {"type": "text", "text": "summary"}
            if self.broken("augmentation/augment-result-valid"):
                return {"content": [block], "hint": "prepend"}
            return {"content": [{"content": block, "properties": {"relevance": 1.0}}], "hint": "prepend"}
        if self.broken("augmentation/unknown-augmentation-rejected"):
            return {"content": []}
        raise RpcError(-32602, f"Unknown augmentation: {name}")


class RpcError(Exception):
    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code, self.message = code, message


def text_result(text: str) -> dict:
    return {"content": [{"type": "text", "text": text}]}


def error_result(text: str) -> dict:
    return {"content": [{"type": "text", "text": text}], "isError": True}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--break", dest="mutant", choices=sorted(MUTANTS))
    parser.add_argument("--plain", action="store_true")
    args = parser.parse_args()
    fake = Fake(args.mutant, args.plain)
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            msg = json.loads(line)
        except ValueError:
            print(json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}), flush=True)
            continue
        for out in fake.handle(msg):
            sys.stdout.write(json.dumps(out) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
