"""pydantic-ai, conforming: the stock host plus the framework's own hooks and `context_recipe`.

- Hook 1, `toolset.filtered(func)`: `func(ctx, tool_def)` decides per model request whether the model
  sees a tool. A `ToolDefinition` carries the tool's `_meta` and annotations but neither `preprocessor`
  nor `execution.requirements` (the typed mcp 2.x `Tool` it was built from has dropped them), so the
  filter looks the tool up in a raw `tools/list` taken through the toolset's own FastMCP client session.
- Hook 2, instructions as a function: evaluated for each run, it adds this turn's preprocessor output;
  a later run with `message_history` uses the agent's current instructions, not earlier ones.
- Context middleware is application code around `agent.run`.
"""

import asyncio
import os
import sys
from pathlib import Path

from pydantic_ai import Agent
from pydantic_ai.mcp import load_mcp_toolsets
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import context_recipe as ctx  # noqa: E402
from harness_io import answer, load_config, turns  # noqa: E402

BASE_INSTRUCTIONS = "You are a helpful assistant."


async def main() -> None:
    config = load_config()
    known = config.get("knownRequirements", {})
    middleware = config.get("contextMiddleware", [])
    names = list(config["mcpServers"])
    raw: dict[str, dict[str, dict]] = {}  # server -> tool name -> the tool as listed

    def offered_on(server: str):
        def keep(run_ctx, tool_def) -> bool:
            listed = raw.get(server, {}).get(tool_def.name.removeprefix(f"{server}_"))
            return listed is None or ctx.offered(listed, known)
        return keep

    # load_mcp_toolsets gives one prefixed toolset per server, in configuration order.
    prefixed = load_mcp_toolsets(os.environ["MCPX_CONFIG"])
    model = OpenAIChatModel(os.environ["MCPX_MODEL"], provider=OpenAIProvider())
    agent = Agent(model, toolsets=[t.filtered(offered_on(n)) for n, t in zip(names, prefixed)])
    turn_context = {"preprocessed": ""}

    @agent.instructions
    def instructions() -> str:
        extra = turn_context["preprocessed"]
        return f"{BASE_INSTRUCTIONS}\n\nContext for this message:\n{extra}" if extra else BASE_INSTRUCTIONS

    async with agent:
        sessions = {n: t.wrapped.client.session for n, t in zip(names, prefixed)}
        for name in names:
            raw[name] = {t["name"]: t for t in await ctx.raw_tools(sessions[name])}
        listed = [(n, sessions[n], list(raw[n].values())) for n in names]
        history: list = []
        async for message in turns():
            try:
                message = await ctx.run_middleware(middleware, "request", sessions, message)
            except ctx.MiddlewareFailed as exc:
                answer("", error=str(exc))
                continue
            turn_context["preprocessed"] = await ctx.run_preprocessors(listed, message)
            try:
                result = await agent.run(message, message_history=history)
                history = result.all_messages()
                answer(await ctx.run_middleware(middleware, "response", sessions, str(result.output)))
            except Exception as exc:  # noqa: BLE001 - one failed turn is reported, the conversation goes on
                answer("", error=repr(exc))


if __name__ == "__main__":
    asyncio.run(main())
