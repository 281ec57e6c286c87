"""langchain-mcp-adapters + a LangGraph agent (`langchain.agents.create_agent`), stock, as the adapter's
README teaches: `MultiServerMCPClient(...).get_tools()` handed to the agent.

That example is stateless: listing and every tool call open a fresh session (a fresh stdio process).
The harness's `contextMiddleware` and `knownRequirements` have no place here; every tool is offered.
"""

import asyncio
import os
import sys
from pathlib import Path

from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langchain_mcp_adapters.client import MultiServerMCPClient
from langchain_openai import ChatOpenAI

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from harness_io import answer, load_config, turns  # noqa: E402


def connection(spec: dict) -> dict:
    if "url" in spec:
        return {"url": spec["url"], "transport": "streamable_http"}
    return {"command": spec["command"], "args": spec.get("args", []), "env": {**os.environ, **spec.get("env", {})},
            "transport": "stdio"}


async def main() -> None:
    config = load_config()
    client = MultiServerMCPClient({name: connection(spec) for name, spec in config["mcpServers"].items()})
    tools = await client.get_tools()
    model = ChatOpenAI(model=os.environ["MCPX_MODEL"], base_url=os.environ["OPENAI_BASE_URL"])
    agent = create_agent(model, tools, system_prompt="You are a helpful assistant.")
    history: list = []
    async for message in turns():
        try:
            state = await agent.ainvoke({"messages": history + [HumanMessage(message)]})
        except Exception as exc:  # noqa: BLE001 - one failed turn is reported, the conversation goes on
            answer("", error=repr(exc))
            continue
        history = state["messages"]
        answer(history[-1].text)


if __name__ == "__main__":
    asyncio.run(main())
