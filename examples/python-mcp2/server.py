"""A small MCP server with the context extensions on the Python `mcp` SDK 2.x, over stdio.

    pip install -r requirements.txt
    python server.py
    mcp-ext-conformance server --command "python server.py"

It offers a preprocessor tool (`preprocessor: true`), a tool gated by `execution.requirements`, one context
middleware and one interceptor. The SDK fights the proposals in two places, each marked SDK below: its `Tool`
type drops fields it does not know, and it answers methods it does not know -32601 before any handler. One
`Server.middleware` entry (the SDK's hook that sees every request and the result dict) handles both.
"""

import datetime
import re

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

INTERCEPTORS_EXTENSION = "io.modelcontextprotocol/interceptors"
SIGNED_IN = "auth:signed_in"  # an opaque requirement string (SEP-2487): matched exactly, never interpreted
EMAIL = re.compile(r"[\w.+-]+@[\w-]+(\.[\w-]+)+")
API_KEY = re.compile(r"\bsk-[A-Za-z0-9]{16,}")

TOOLS = {
    "current_context": {"description": "Today's date, for the host to put before every prompt.",
                        "inputSchema": {"type": "object", "properties": {}}, "preprocessor": True},
    "sign_in": {"description": "Sign in; post_note needs it.", "inputSchema": {"type": "object", "properties": {}}},
    "post_note": {"description": "Post a note (needs a signed-in session).",
                  "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
                  "execution": {"requirements": [SIGNED_IN]}},
}
MIDDLEWARE = [{"name": "redact_emails", "description": "Replaces e-mail addresses in text blocks with [EMAIL].",
               "inputSchema": {"type": "object", "properties": {}, "additionalProperties": False}}]
INTERCEPTORS = [{"name": "no_api_keys", "type": "validation", "description": "Rejects payloads carrying an API key.",
                 "hooks": [{"events": ["tools/call"], "phase": "request"}]}]
satisfied: set[str] = set()  # one stdio process is one session


class Refused(MCPError):
    def __init__(self, code: int, message: str):
        super().__init__(code=code, message=message)


def invalid(message: str) -> Refused:
    return Refused(-32602, message)


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
    """SDK: a `Server.middleware` entry sees every request before the SDK looks its method up."""
    if ctx.method in EXTENSION_METHODS:
        return EXTENSION_METHODS[ctx.method](dict(ctx.params or {}))
    result = await call_next(ctx)
    if hasattr(result, "model_dump"):  # the SDK's typed result, as the dict that goes on the wire
        result = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    if ctx.method == "initialize":  # SDK: its capabilities type has no place for these
        result["capabilities"].update(contextMiddleware={}, extensions={
            INTERCEPTORS_EXTENSION: {"supportedEvents": ["tools/call"]}})
    elif ctx.method == "tools/list":  # SDK: its Tool type dropped preprocessor and execution.requirements
        for tool in result["tools"]:
            tool.update({k: v for k, v in TOOLS[tool["name"]].items() if k in ("preprocessor", "execution")})
    return result


async def list_tools(ctx, params):
    return types.ListToolsResult(tools=[types.Tool(name=name, **{
        k: v for k, v in tool.items() if k in ("description", "inputSchema")}) for name, tool in TOOLS.items()])


async def call_tool(ctx, params):
    tool = TOOLS.get(params.name)
    if tool is None:
        raise invalid(f"Unknown tool: {params.name}")
    unmet = [r for r in tool.get("execution", {}).get("requirements", []) if r not in satisfied]
    if unmet:  # enforced before the body runs, naming what is unmet
        return types.CallToolResult(isError=True, content=[types.TextContent(
            type="text", text=f"unmet execution requirements: {', '.join(unmet)}")])
    if params.name == "current_context":
        text = f"Today is {datetime.date.today():%A %d %B %Y}."
    elif params.name == "sign_in":
        satisfied.add(SIGNED_IN)
        text = "signed in"
    else:
        text = f"posted: {(params.arguments or {}).get('text', '')}"
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


server = Server("example-python-mcp2", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool)
server.middleware.append(extensions)


async def main():
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
