"""openai-agents, stock: MCP servers handed to an Agent as its docs teach, nothing else.

The harness's `contextMiddleware` and `knownRequirements` have no place in the framework, so a stock
host has nothing to give them to; it passes every listed tool to the model.
"""

import asyncio
import os
import sys
from contextlib import AsyncExitStack
from pathlib import Path

from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
from agents.mcp import MCPServerStdio, MCPServerStreamableHttp
from openai import AsyncOpenAI

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from harness_io import answer, load_config, turns  # noqa: E402


def mcp_server(name: str, spec: dict):
    if "url" in spec:
        return MCPServerStreamableHttp(name=name, params={"url": spec["url"]})
    return MCPServerStdio(name=name, params={"command": spec["command"], "args": spec.get("args", []),
                                             "env": {**os.environ, **spec.get("env", {})}})


async def main() -> None:
    set_tracing_disabled(True)
    config = load_config()
    model = OpenAIChatCompletionsModel(model=os.environ["MCPX_MODEL"], openai_client=AsyncOpenAI())
    async with AsyncExitStack() as stack:
        servers = [await stack.enter_async_context(mcp_server(n, s)) for n, s in config["mcpServers"].items()]
        agent = Agent(name="host", instructions="You are a helpful assistant.", model=model, mcp_servers=servers)
        history: list = []
        async for message in turns():
            try:
                result = await Runner.run(agent, history + [{"role": "user", "content": message}])
            except Exception as exc:  # noqa: BLE001 - one failed turn is reported, the conversation goes on
                answer("", error=repr(exc))
                continue
            history = result.to_input_list()
            answer(str(result.final_output))


if __name__ == "__main__":
    asyncio.run(main())
