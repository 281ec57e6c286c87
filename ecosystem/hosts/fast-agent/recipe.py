"""fast-agent, conforming: the stock host plus the framework's own hooks and `context_recipe`.

- Hook 1, the agent's `tools` filter (`@fast.agent(tools={server: [patterns]})`): fnmatch patterns of the
  tool names each server may offer, read again on every `list_tools`, so the recipe sets it once it has
  taken a raw `tools/list` through each server's own session (fast-agent's typed mcp 2.x `Tool` has
  dropped `preprocessor` and `execution.requirements`). Names are escaped, so each pattern is one name.
- Hook 2, the aggregator's permission handler (`set_permission_handler`, the seam fast-agent's ACP
  permissions use): the `tools` filter only hides a tool; a call the model asks for by name still runs
  (the aggregator resolves bare names on every server), so the handler denies any tool the filter left
  out, and the model gets the denial as the tool's error result.
- Hook 3, `agent.set_instruction()`: the system prompt of the agent's next requests; each turn's
  preprocessor output goes there, so it is never part of the message history.
- Context middleware is application code around `send()`.
"""

import asyncio
import glob
import sys
import tempfile
from pathlib import Path

from fast_agent import FastAgent
from fast_agent.mcp.tool_permission_handler import ToolPermissionResult

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import context_recipe as ctx  # noqa: E402
from harness_io import answer, load_config, turns  # noqa: E402
from host import write_settings  # noqa: E402  (the stock host beside this file: the same settings)

BASE_INSTRUCTIONS = "You are a helpful assistant."


def server_session(agent, name: str):
    # No public accessor for a server's live ClientSession: the aggregator's connection manager holds it.
    return agent.aggregator._persistent_connection_manager.running_servers[name].client.session


class OfferedOnly:
    """A `ToolPermissionHandler`: only the tools the model was offered may run."""

    def __init__(self, offered: dict[str, set[str]]):
        self.offered = offered

    async def check_permission(self, tool_name, server_name, arguments=None, tool_use_id=None):
        if tool_name in self.offered.get(server_name, ()):
            return ToolPermissionResult.allow()
        return ToolPermissionResult(allowed=False, error_message=f"tool {tool_name} is not available")


async def main() -> None:
    config = load_config()
    known = config.get("knownRequirements", {})
    middleware = config.get("contextMiddleware", [])
    names = list(config["mcpServers"])
    with tempfile.TemporaryDirectory() as directory:
        fast = FastAgent("host", config_path=write_settings(config, directory), parse_cli_args=False, quiet=True)

        @fast.agent(name="host", instruction=BASE_INSTRUCTIONS, servers=names)
        async def host() -> None:
            pass

        async with fast.run() as app:
            agent = app.host
            sessions = {n: server_session(agent, n) for n in names}
            raw = {n: await ctx.raw_tools(sessions[n]) for n in names}
            offered = {n: {t["name"] for t in raw[n] if ctx.offered(t, known)} for n in names}
            agent.config.tools = {n: [glob.escape(name) for name in offered[n]] for n in names}
            agent.aggregator.set_permission_handler(OfferedOnly(offered))
            listed = [(n, sessions[n], raw[n]) for n in names]
            async for message in turns():
                try:
                    message = await ctx.run_middleware(middleware, "request", sessions, message)
                except ctx.MiddlewareFailed as exc:
                    answer("", error=str(exc))
                    continue
                preprocessed = await ctx.run_preprocessors(listed, message)
                agent.set_instruction(f"{BASE_INSTRUCTIONS}\n\nContext for this message:\n{preprocessed}"
                                      if preprocessed else BASE_INSTRUCTIONS)
                try:
                    final = await agent.send(message)
                    answer(await ctx.run_middleware(middleware, "response", sessions, final))
                except Exception as exc:  # noqa: BLE001 - one failed turn is reported, the conversation goes on
                    answer("", error=repr(exc))


if __name__ == "__main__":
    asyncio.run(main())
