"""pydantic-ai, stock: `load_mcp_toolsets` on the harness's `mcpServers` file, an Agent, its history.

The harness's `contextMiddleware` and `knownRequirements` keys are not part of the framework's
config shape, so a stock host ignores them; every listed tool goes to the model.
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
from harness_io import answer, turns  # noqa: E402


async def main() -> None:
    model = OpenAIChatModel(os.environ["MCPX_MODEL"], provider=OpenAIProvider())  # OPENAI_BASE_URL, OPENAI_API_KEY
    agent = Agent(model, toolsets=load_mcp_toolsets(os.environ["MCPX_CONFIG"]),
                  instructions="You are a helpful assistant.")
    async with agent:
        history: list = []
        async for message in turns():
            try:
                result = await agent.run(message, message_history=history)
            except Exception as exc:  # noqa: BLE001 - one failed turn is reported, the conversation goes on
                answer("", error=repr(exc))
                continue
            history = result.all_messages()
            answer(str(result.output))


if __name__ == "__main__":
    asyncio.run(main())
