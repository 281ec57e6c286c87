"""Chat Completions through the official `openai` client (AsyncOpenAI), streamed or not."""

from __future__ import annotations

import os
from typing import Any

from .logic import StreamAssembler, assistant_message


class ModelError(Exception):
    """The model request failed (HTTP error, timeout, unusable answer)."""


class ChatModel:
    def __init__(self, model: str, stream: bool, timeout: float) -> None:
        # Imported here: `openai` takes about a second to import, and __main__ warms it up in a
        # thread while the MCP servers start, so the first turn does not pay for it.
        from openai import AsyncOpenAI

        self.model = model
        self.stream = stream
        # Base URL and key come from OPENAI_BASE_URL / OPENAI_API_KEY, as the client reads them itself.
        # No retries: a retried request would reach the model twice, and the turn has its own deadline.
        self.client = AsyncOpenAI(api_key=os.environ.get("OPENAI_API_KEY") or "not-needed",
                                  timeout=timeout, max_retries=int(os.environ.get("MCPX_LLM_RETRIES", "0")))

    async def complete(self, messages: list[dict], tools: list[dict]) -> dict:
        """The assistant message (Chat Completions shape) answering `messages`."""
        kwargs: dict[str, Any] = {"model": self.model, "messages": messages}
        if tools:
            kwargs["tools"] = tools
        try:
            if self.stream:
                return await self._streamed(kwargs)
            response = await self.client.chat.completions.create(**kwargs)
        except ModelError:
            raise
        except Exception as exc:  # noqa: BLE001 - APIError, timeouts, malformed bodies
            raise ModelError(f"{type(exc).__name__}: {exc}") from None
        if not response.choices:
            raise ModelError("the model answered with no choices")
        message = response.choices[0].message
        calls = [{"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
                 for c in message.tool_calls or () if getattr(c, "function", None) is not None]
        return assistant_message(message.content, calls)

    async def _streamed(self, kwargs: dict) -> dict:
        assembler = StreamAssembler()
        stream = await self.client.chat.completions.create(stream=True, **kwargs)
        try:
            async for chunk in stream:
                for choice in chunk.choices or ():
                    if choice.index in (0, None) and choice.delta is not None:
                        assembler.add(choice.delta)
        finally:
            await stream.close()
        return assembler.message()

    async def close(self) -> None:
        await self.client.close()
