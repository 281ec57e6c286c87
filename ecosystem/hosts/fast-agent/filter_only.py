"""The fast-agent recipe without its permission handler, to show that the agent's `tools` filter hides a
tool from the model but does not stop the model calling it by name (pinned in tests/test_hosts_third_party.py).
"""

import asyncio

import recipe  # beside this file: on sys.path when run as a script
from fast_agent.mcp.tool_permission_handler import ToolPermissionResult


async def allow_everything(self, tool_name, server_name, arguments=None, tool_use_id=None):
    return ToolPermissionResult.allow()


recipe.OfferedOnly.check_permission = allow_everything

if __name__ == "__main__":
    asyncio.run(recipe.main())
