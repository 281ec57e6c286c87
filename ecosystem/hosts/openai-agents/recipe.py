"""openai-agents, conforming: the stock host plus the framework's own hooks and `context_recipe`.

- Hook 1, `tool_filter=` on each MCP server: a callable that gets `(ToolFilterContext, tool)` and
  returns whether the model sees the tool. On mcp 2.x the tool it gets is the SDK's typed `Tool`,
  which has already lost `preprocessor` and `execution.requirements`, so the filter looks the tool up
  by server and name in a raw `tools/list` taken at start-up through the server's own session.
- Hook 2, `instructions=` as a function: called for each model request of a run, it adds this
  turn's preprocessor output, which therefore never enters `result.to_input_list()` (the history).
- `RunConfig(tool_not_found_behavior="return_error_to_model")`: a call to a tool the model was not
  given (a hidden preprocessor asked for by name) is answered with an error it can read; the default
  ends the run with `ModelBehaviorError`.
- Context middleware is application code around `Runner.run`: request phase on the user message
  before the run, response phase on `final_output` after it.
"""

import asyncio
import os
import sys
from contextlib import AsyncExitStack
from pathlib import Path

from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, set_tracing_disabled
from agents.mcp import MCPServerStdio, MCPServerStreamableHttp
from openai import AsyncOpenAI

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import context_recipe as ctx  # noqa: E402
from harness_io import answer, load_config, turns  # noqa: E402

BASE_INSTRUCTIONS = "You are a helpful assistant."
RUN_CONFIG = RunConfig(tool_not_found_behavior="return_error_to_model")


def mcp_server(name: str, spec: dict, tool_filter):
    if "url" in spec:
        return MCPServerStreamableHttp(name=name, params={"url": spec["url"]}, tool_filter=tool_filter)
    return MCPServerStdio(name=name, params={"command": spec["command"], "args": spec.get("args", []),
                                             "env": {**os.environ, **spec.get("env", {})}},
                          tool_filter=tool_filter)


async def main() -> None:
    set_tracing_disabled(True)
    config = load_config()
    known = config.get("knownRequirements", {})
    middleware = config.get("contextMiddleware", [])
    raw: dict[str, dict[str, dict]] = {}  # server -> tool name -> the tool as listed

    def tool_filter(context, tool) -> bool:
        listed = raw.get(context.server_name, {}).get(tool.name)
        return listed is None or ctx.offered(listed, known)

    turn_context = {"preprocessed": ""}

    def instructions(run_context, agent) -> str:
        extra = turn_context["preprocessed"]
        return f"{BASE_INSTRUCTIONS}\n\nContext for this message:\n{extra}" if extra else BASE_INSTRUCTIONS

    model = OpenAIChatCompletionsModel(model=os.environ["MCPX_MODEL"], openai_client=AsyncOpenAI())
    async with AsyncExitStack() as stack:
        servers = [await stack.enter_async_context(mcp_server(n, s, tool_filter))
                   for n, s in config["mcpServers"].items()]
        for server in servers:
            raw[server.name] = {t["name"]: t for t in await ctx.raw_tools(server.session)}
        sessions = {s.name: s.session for s in servers}
        listed = [(s.name, s.session, list(raw[s.name].values())) for s in servers]
        agent = Agent(name="host", instructions=instructions, model=model, mcp_servers=servers)
        history: list = []
        async for message in turns():
            try:
                message = await ctx.run_middleware(middleware, "request", sessions, message)
            except ctx.MiddlewareFailed as exc:
                answer("", error=str(exc))
                continue
            turn_context["preprocessed"] = await ctx.run_preprocessors(listed, message)
            try:
                result = await Runner.run(agent, history + [{"role": "user", "content": message}],
                                          run_config=RUN_CONFIG)
                history = result.to_input_list()
                answer(await ctx.run_middleware(middleware, "response", sessions, str(result.final_output)))
            except Exception as exc:  # noqa: BLE001 - one failed turn is reported, the conversation goes on
                answer("", error=repr(exc))


if __name__ == "__main__":
    asyncio.run(main())
