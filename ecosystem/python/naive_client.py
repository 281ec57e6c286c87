"""A client on the official Python `mcp` SDK: what its user sees of the extension fields.

    python ecosystem/python/naive_client.py '["python", "ecosystem/wire_server.py"]'

Connects over stdio as the SDK's client docs teach (`stdio_client`,
`ClientSession`), then reads the server twice: through the typed API
(`initialize()`, `list_tools()`, dumped back to JSON by alias) and through the
raw path (`send_request` with a free request model and a result model that
keeps every field). Prints one JSON object; ecosystem/probe.py judges it.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
from mcp import types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from pydantic import BaseModel, ConfigDict


class FreeRequest(types.Request[dict[str, Any] | None, str]):
    """Any method with any params."""


class RawResult(BaseModel):
    model_config = ConfigDict(extra="allow")


def dump(model) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def raw(session: ClientSession, method: str, params: dict | None) -> dict:
    return dump(await session.send_request(FreeRequest(method=method, params=params), RawResult))


async def main(argv: list[str]) -> dict:
    params = StdioServerParameters(command=argv[0], args=argv[1:])
    seen: dict[str, Any] = {"typed": {}, "raw": {}, "methods": {}}
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            seen["typed"]["capabilities"] = dump(init.capabilities)
            seen["typed"]["tools"] = [dump(tool) for tool in (await session.list_tools()).tools]
            try:
                seen["raw"]["tools"] = (await raw(session, "tools/list", {}))["tools"]
            except Exception as exc:  # noqa: BLE001 - recorded, not judged here
                seen["raw"]["error"] = f"{type(exc).__name__}: {exc}"
            for method in ("middleware/list", "augmentation/list"):
                try:
                    await raw(session, method, {})
                    seen["methods"][method] = "answered"
                except Exception as exc:  # noqa: BLE001
                    seen["methods"][method] = f"{type(exc).__name__}: {str(exc)[:120]}"
    # The raw initialize result is not reachable once initialize() has run; a second session reads it.
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            try:
                seen["raw"]["capabilities"] = (await raw(session, "initialize", {
                    "protocolVersion": "2025-11-25", "capabilities": {},
                    "clientInfo": {"name": "naive", "version": "0"}}))["capabilities"]
            except Exception as exc:  # noqa: BLE001
                seen["raw"]["error"] = f"{type(exc).__name__}: {exc}"
    return seen


if __name__ == "__main__":
    print(json.dumps(anyio.run(main, json.loads(sys.argv[1]))))
