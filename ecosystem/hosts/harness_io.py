"""Harness plumbing shared by every adapter (conformance/host/HARNESS.md): config, turns in, answers out."""

from __future__ import annotations

import asyncio
import json
import os
import sys


def load_config() -> dict:
    with open(os.environ["MCPX_CONFIG"], encoding="utf-8") as fh:
        return json.load(fh)


def answer(content: str, error: str | None = None) -> None:
    line = {"role": "assistant", "content": content}
    if error:
        line["error"] = error
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()


async def turns():
    """User messages from stdin, one JSON line each, without blocking the event loop."""
    loop = asyncio.get_running_loop()
    while True:
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if not line:
            return
        if line.strip():
            yield json.loads(line)["content"]
