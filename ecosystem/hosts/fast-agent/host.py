"""fast-agent, stock: a `FastAgent` app with one `@fast.agent` over the harness's servers, its MCP servers
and model given in a `fastagent.config.yaml`, as the docs teach.

The harness's servers become the config's `mcp.servers`; the model is the `generic` provider (any
OpenAI-compatible Chat Completions endpoint) pointed at the suite's mock. `contextMiddleware` and
`knownRequirements` have no place in the framework, so every listed tool is offered.
"""

import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path

from fast_agent import FastAgent

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from harness_io import answer, load_config, turns  # noqa: E402


def write_settings(config: dict, directory: str) -> str:
    """The framework reads servers and providers from a config file: the harness's JSON is valid YAML."""
    servers = {name: ({"url": spec["url"]} if "url" in spec else
                      {"command": spec["command"], "args": spec.get("args", []), "env": spec.get("env", {})})
               for name, spec in config["mcpServers"].items()}
    settings = {
        "default_model": f"generic.{os.environ['MCPX_MODEL']}",
        "generic": {"api_key": os.environ["OPENAI_API_KEY"], "base_url": os.environ["OPENAI_BASE_URL"]},
        "logger": {"type": "console", "level": "error", "progress_display": False, "show_chat": False,
                   "show_tools": False},
        "mcp": {"servers": servers},
        "session_history": False,  # on by default: it writes .fast-agent/sessions/ into the working directory
    }
    path = os.path.join(directory, "fastagent.config.yaml")
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(settings, fh)
    return path


async def main() -> None:
    config = load_config()
    with tempfile.TemporaryDirectory() as directory:
        fast = FastAgent("host", config_path=write_settings(config, directory), parse_cli_args=False, quiet=True)

        @fast.agent(name="host", instruction="You are a helpful assistant.", servers=list(config["mcpServers"]))
        async def host() -> None:
            pass

        async with fast.run() as app:
            async for message in turns():
                try:
                    answer(await app.host.send(message))
                except Exception as exc:  # noqa: BLE001 - one failed turn is reported, the conversation goes on
                    answer("", error=repr(exc))


if __name__ == "__main__":
    asyncio.run(main())
