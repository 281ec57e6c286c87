"""mcp-use, stock: `MCPClient.from_config_file` on the harness's `mcpServers` file and an `MCPAgent`
(LangChain underneath) with its own conversation memory, as the docs teach.

The harness's `contextMiddleware` and `knownRequirements` keys mean nothing to the framework; every
tool is offered.
"""

import asyncio
import logging
import os
import sys
from pathlib import Path

os.environ.setdefault("MCP_USE_ANONYMIZED_TELEMETRY", "false")

from langchain_openai import ChatOpenAI  # noqa: E402
from mcp_use import MCPAgent, MCPClient  # noqa: E402

# mcp-use logs to stdout by default; the harness reads answers there, so its logs go to stderr.
for handler in logging.getLogger("mcp_use").handlers:
    if isinstance(handler, logging.StreamHandler):
        handler.setStream(sys.stderr)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from harness_io import answer, turns  # noqa: E402


async def main() -> None:
    client = MCPClient.from_config_file(os.environ["MCPX_CONFIG"])
    model = ChatOpenAI(model=os.environ["MCPX_MODEL"], base_url=os.environ["OPENAI_BASE_URL"])
    agent = MCPAgent(llm=model, client=client, max_steps=10)
    try:
        async for message in turns():
            try:
                answer(str(await agent.run(message)))
            except Exception as exc:  # noqa: BLE001 - one failed turn is reported, the conversation goes on
                answer("", error=repr(exc))
    finally:
        await client.close_all_sessions()


if __name__ == "__main__":
    asyncio.run(main())
