"""mcp-use, conforming: the stock host plus the framework's own hooks and `context_recipe`.

- Hook 1, `MCPAgent(disallowed_tools=[...])`: names the model must not see. mcp-use's typed tools
  (mcp 1.x) still carry `preprocessor` and `execution.requirements`, but the agent never reads them,
  so the recipe computes the names from a raw `tools/list` on each server's own session. The list is by
  bare name across all servers: a preprocessor hides an ordinary tool of the same name elsewhere.
- Hook 2, `agent.set_system_message(...)` before each run: this turn's preprocessor output goes into
  the system message, which the agent keeps out of its conversation memory.
- Context middleware is application code around `agent.run`.
"""

import asyncio
import logging
import os
import sys
from pathlib import Path

os.environ.setdefault("MCP_USE_ANONYMIZED_TELEMETRY", "false")

from langchain_openai import ChatOpenAI  # noqa: E402
from mcp_use import MCPAgent, MCPClient  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import context_recipe as ctx  # noqa: E402
from harness_io import answer, load_config, turns  # noqa: E402

# mcp-use logs to stdout by default; the harness reads answers there, so its logs go to stderr.
for handler in logging.getLogger("mcp_use").handlers:
    if isinstance(handler, logging.StreamHandler):
        handler.setStream(sys.stderr)

BASE_PROMPT = "You are a helpful assistant."


async def main() -> None:
    config = load_config()
    known = config.get("knownRequirements", {})
    middleware = config.get("contextMiddleware", [])
    client = MCPClient.from_config_file(os.environ["MCPX_CONFIG"])
    try:
        await client.create_all_sessions()
        sessions = {name: client.get_session(name).connector.client_session for name in config["mcpServers"]}
        listed = [(name, session, await ctx.raw_tools(session)) for name, session in sessions.items()]
        hidden = sorted({t["name"] for _, _, tools in listed for t in tools if not ctx.offered(t, known)})
        model = ChatOpenAI(model=os.environ["MCPX_MODEL"], base_url=os.environ["OPENAI_BASE_URL"])
        agent = MCPAgent(llm=model, client=client, max_steps=10, disallowed_tools=hidden, system_prompt=BASE_PROMPT)
        await agent.initialize()  # else the first run's initialize() overwrites turn 1's system message
        async for message in turns():
            try:
                message = await ctx.run_middleware(middleware, "request", sessions, message)
            except ctx.MiddlewareFailed as exc:
                answer("", error=str(exc))
                continue
            preprocessed = await ctx.run_preprocessors(listed, message)
            agent.set_system_message(f"{BASE_PROMPT}\n\nContext for this message:\n{preprocessed}"
                                     if preprocessed else BASE_PROMPT)
            try:
                answer(await ctx.run_middleware(middleware, "response", sessions, str(await agent.run(message))))
            except Exception as exc:  # noqa: BLE001 - one failed turn is reported, the conversation goes on
                answer("", error=repr(exc))
    finally:
        await client.close_all_sessions()


if __name__ == "__main__":
    asyncio.run(main())
