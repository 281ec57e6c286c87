"""A client on the standalone `fastmcp` package: what its user sees of the extension fields.

    python ecosystem/fastmcp/naive_client.py '["python", "ecosystem/wire_server.py"]'

typed: `fastmcp.Client` as its docs teach (`initialize_result`, `list_tools()`).
raw: the `mcp` session underneath (`client.session.send_request` with a free
request and a result model that keeps every field; the initialize result on a
connection made with `auto_initialize=False`). Prints one JSON object.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from mcp import types
from pydantic import BaseModel, ConfigDict


class FreeRequest(types.Request[dict[str, Any] | None, str]):
    """Any method with any params."""


class RawResult(BaseModel):
    model_config = ConfigDict(extra="allow")


def dump(model) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def main(argv: list[str]) -> dict:
    seen: dict[str, Any] = {"typed": {}, "raw": {}, "methods": {}}
    async with Client(StdioTransport(command=argv[0], args=argv[1:])) as client:
        seen["typed"]["capabilities"] = dump(client.initialize_result.capabilities)
        seen["typed"]["tools"] = [dump(tool) for tool in await client.list_tools()]

        async def raw(method: str, params: dict | None = None) -> dict:
            return dump(await client.session.send_request(FreeRequest(method=method, params=params), RawResult))

        try:
            seen["raw"]["tools"] = (await raw("tools/list", {}))["tools"]
        except Exception as exc:  # noqa: BLE001 - recorded, judged by ecosystem/probe.py
            seen["raw"]["error"] = f"{type(exc).__name__}: {exc}"
        for method in ("middleware/list", "augmentation/list"):
            try:
                await raw(method, {})
                seen["methods"][method] = "answered"
            except Exception as exc:  # noqa: BLE001
                seen["methods"][method] = f"{type(exc).__name__}: {str(exc)[:120]}"
    # The raw initialize result: a second connection that does not initialize by itself.
    transport = StdioTransport(command=argv[0], args=argv[1:])
    async with Client(transport, auto_initialize=False) as client:
        try:
            result = await client.session.send_request(FreeRequest(method="initialize", params={
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "naive", "version": "0"}}), RawResult)
            seen["raw"]["capabilities"] = dump(result)["capabilities"]
        except Exception as exc:  # noqa: BLE001
            seen["raw"]["error"] = f"{type(exc).__name__}: {exc}"
    return seen


if __name__ == "__main__":
    print(json.dumps(anyio.run(main, json.loads(sys.argv[1]))))
