"""A small MCP server with the context extensions on FastMCP 4.x, over stdio.

    pip install -r requirements.txt
    python server.py
    mcp-ext-conformance server --command "python server.py"

It offers a preprocessor tool (`preprocessor: true`), a tool gated by `execution.requirements`, one context
middleware and one interceptor. The tools are ordinary `@mcp.tool` functions. SDK: FastMCP 4 runs on `mcp` 2.x,
whose `Tool` type drops fields it does not know (`meta=` would put them under `_meta`, where no proposal
looks), and it has no API for other methods. Its low-level server is the `mcp` SDK's, so one entry in that
server's middleware list, ahead of FastMCP's own, puts the fields back and serves the extension methods.
"""

import datetime
import re

from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from mcp.shared.exceptions import MCPError

INTERCEPTORS_EXTENSION = "io.modelcontextprotocol/interceptors"
SIGNED_IN = "auth:signed_in"  # an opaque requirement string (SEP-2487): matched exactly, never interpreted
EMAIL = re.compile(r"[\w.+-]+@[\w-]+(\.[\w-]+)+")
API_KEY = re.compile(r"\bsk-[A-Za-z0-9]{16,}")
EXTENSION_FIELDS = {"current_context": {"preprocessor": True},
                    "post_note": {"execution": {"requirements": [SIGNED_IN]}}}
MIDDLEWARE = [{"name": "redact_emails", "description": "Replaces e-mail addresses in text blocks with [EMAIL].",
               "inputSchema": {"type": "object", "properties": {}, "additionalProperties": False}}]
INTERCEPTORS = [{"name": "no_api_keys", "type": "validation", "description": "Rejects payloads carrying an API key.",
                 "hooks": [{"events": ["tools/call"], "phase": "request"}]}]
satisfied: set[str] = set()  # one stdio process is one session

mcp = FastMCP("example-fastmcp4")


@mcp.tool
def current_context() -> str:
    """Today's date, for the host to put before every prompt."""
    return f"Today is {datetime.date.today():%A %d %B %Y}."


@mcp.tool
def sign_in() -> str:
    """Sign in; post_note needs it."""
    satisfied.add(SIGNED_IN)
    return "signed in"


@mcp.tool
def post_note(text: str) -> str:
    """Post a note (needs a signed-in session)."""
    unmet = [r for r in EXTENSION_FIELDS["post_note"]["execution"]["requirements"] if r not in satisfied]
    if unmet:  # enforced before the body runs, naming what is unmet
        raise ToolError(f"unmet execution requirements: {', '.join(unmet)}")
    return f"posted: {text}"


def invalid(message: str) -> MCPError:
    return MCPError(code=-32602, message=message)


def strings(value, path="$"):
    """Every string in a JSON value, with its JSONPath."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from strings(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from strings(item, f"{path}[{index}]")


def middleware_invoke(params: dict) -> dict:
    if params.get("name") != "redact_emails":
        raise invalid(f"Unknown middleware: {params.get('name')!r}")
    context, arguments = params.get("context"), params.get("arguments", {})
    if not isinstance(context, list) or not all(isinstance(b, dict) for b in context):
        raise invalid("context must be an array of content blocks")
    if not isinstance(arguments, dict) or arguments:
        raise invalid("redact_emails takes no arguments")
    return {"content": [{**b, "text": EMAIL.sub("[EMAIL]", b["text"])} if b.get("type") == "text" else b
                        for b in context]}


def interceptor_invoke(params: dict) -> dict:
    name, event, phase = params.get("name"), params.get("event"), params.get("phase")
    if name != "no_api_keys":
        raise invalid(f"Unknown interceptor: {name!r}")
    if not isinstance(event, str) or phase not in ("request", "response") or "payload" not in params:
        raise invalid("interceptor/invoke needs name, event, phase and payload")
    if (event, phase) != ("tools/call", "request"):
        raise invalid(f"no_api_keys does not hook {event} in the {phase} phase")
    if params.get("config") not in (None, {}):
        raise invalid("no_api_keys takes no config")
    found = [{"path": path, "message": "looks like an API key", "severity": "error"}
             for path, text in strings(params["payload"]) if API_KEY.search(text)]
    return {"interceptor": name, "type": "validation", "phase": phase, "valid": not found,
            **({"severity": "error", "messages": found} if found else {})}


EXTENSION_METHODS = {
    "middleware/list": lambda params: {"middleware": MIDDLEWARE},
    "middleware/invoke": middleware_invoke,
    "interceptors/list": lambda params: {"interceptors": [
        i for i in INTERCEPTORS if not params.get("event") or any(
            params["event"] in h["events"] or "*" in h["events"] for h in i["hooks"])]},
    "interceptor/invoke": interceptor_invoke,
}


async def extensions(ctx, call_next):
    """SDK: an entry of the low-level server's middleware sees every request before the method is looked up."""
    if ctx.method in EXTENSION_METHODS:
        return EXTENSION_METHODS[ctx.method](dict(ctx.params or {}))
    result = await call_next(ctx)
    if hasattr(result, "model_dump"):  # the SDK's typed result, as the dict that goes on the wire
        result = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    if ctx.method == "initialize":  # SDK: capabilities have no place for these
        result["capabilities"].update(contextMiddleware={}, extensions={
            **result["capabilities"].get("extensions", {}), INTERCEPTORS_EXTENSION: {"supportedEvents": ["tools/call"]}})
    elif ctx.method == "tools/list":  # SDK: the Tool type dropped preprocessor and execution.requirements
        for tool in result["tools"]:
            tool.update(EXTENSION_FIELDS.get(tool["name"], {}))
    return result


mcp._mcp_server.middleware.insert(0, extensions)  # SDK: no public API reaches this list

if __name__ == "__main__":
    mcp.run(show_banner=False)
