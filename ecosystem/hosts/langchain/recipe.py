"""langchain-mcp-adapters + a LangGraph agent (`create_agent`), conforming.

- No list-time hook in the adapter: `load_mcp_tools` turns each MCP tool into a LangChain tool whose
  metadata holds the annotations and `_meta` only, so `preprocessor` and `execution.requirements`
  are gone even on mcp 1.x, whose typed `Tool` still has them. The application owns the tool list,
  though: it filters it against a raw `tools/list` before building the agent.
- One session per server, held open (the README's `client.session(name)`), so preprocessors and
  middleware reach the same server process the tools do.
- Hook: a `@dynamic_prompt` agent middleware builds each model request's system prompt from the
  run's context (this turn's preprocessor output); it is not part of the graph state, so never history.
- Context middleware is application code around `agent.ainvoke`.
"""

import asyncio
import os
import sys
from contextlib import AsyncExitStack
from pathlib import Path

from langchain.agents import create_agent
from langchain.agents.middleware import ModelRequest, dynamic_prompt
from langchain_core.messages import HumanMessage
from langchain_mcp_adapters.client import MultiServerMCPClient
from langchain_mcp_adapters.tools import load_mcp_tools
from langchain_openai import ChatOpenAI

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import context_recipe as ctx  # noqa: E402
from harness_io import answer, load_config, turns  # noqa: E402

BASE_PROMPT = "You are a helpful assistant."


def connection(spec: dict) -> dict:
    if "url" in spec:
        return {"url": spec["url"], "transport": "streamable_http"}
    return {"command": spec["command"], "args": spec.get("args", []), "env": {**os.environ, **spec.get("env", {})},
            "transport": "stdio"}


@dynamic_prompt
def with_preprocessed(request: ModelRequest) -> str:
    extra = (request.runtime.context or {}).get("preprocessed")
    return f"{BASE_PROMPT}\n\nContext for this message:\n{extra}" if extra else BASE_PROMPT


async def main() -> None:
    config = load_config()
    known = config.get("knownRequirements", {})
    middleware = config.get("contextMiddleware", [])
    client = MultiServerMCPClient({name: connection(spec) for name, spec in config["mcpServers"].items()})
    async with AsyncExitStack() as stack:
        sessions, listed, tools = {}, [], []
        for name in config["mcpServers"]:
            session = sessions[name] = await stack.enter_async_context(client.session(name))
            raw = await ctx.raw_tools(session)
            listed.append((name, session, raw))
            keep = {t["name"] for t in raw if ctx.offered(t, known)}
            tools += [t for t in await load_mcp_tools(session) if t.name in keep]
        model = ChatOpenAI(model=os.environ["MCPX_MODEL"], base_url=os.environ["OPENAI_BASE_URL"])
        agent = create_agent(model, tools, middleware=[with_preprocessed])
        history: list = []
        async for message in turns():
            try:
                message = await ctx.run_middleware(middleware, "request", sessions, message)
            except ctx.MiddlewareFailed as exc:
                answer("", error=str(exc))
                continue
            preprocessed = await ctx.run_preprocessors(listed, message)
            try:
                state = await agent.ainvoke({"messages": history + [HumanMessage(message)]},
                                            context={"preprocessed": preprocessed})
                history = state["messages"]
                answer(await ctx.run_middleware(middleware, "response", sessions, history[-1].text))
            except Exception as exc:  # noqa: BLE001 - one failed turn is reported, the conversation goes on
                answer("", error=repr(exc))


if __name__ == "__main__":
    asyncio.run(main())
