"""smolagents, stock: `MCPClient` (mcpadapt underneath) tools in a `ToolCallingAgent` on an
OpenAI-compatible model, memory kept across runs with `reset=False`, as the docs teach.

The harness's `contextMiddleware` and `knownRequirements` have no place in the framework; every
tool is offered.
"""

import json
import os
import sys
from pathlib import Path

from mcp import StdioServerParameters
from smolagents import LogLevel, MCPClient, OpenAIModel, ToolCallingAgent

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from harness_io import answer, load_config  # noqa: E402


def server_parameters(spec: dict):
    if "url" in spec:
        return {"url": spec["url"], "transport": "streamable-http"}
    return StdioServerParameters(command=spec["command"], args=spec.get("args", []),
                                 env={**os.environ, **spec.get("env", {})})


def main() -> None:
    config = load_config()
    model = OpenAIModel(model_id=os.environ["MCPX_MODEL"], api_base=os.environ["OPENAI_BASE_URL"],
                        api_key=os.environ["OPENAI_API_KEY"])
    with MCPClient([server_parameters(s) for s in config["mcpServers"].values()]) as tools:
        # Step logs go to stdout by default, where the harness reads answers.
        agent = ToolCallingAgent(tools=tools, model=model, verbosity_level=LogLevel.OFF)
        for line in sys.stdin:
            if not line.strip():
                continue
            try:
                answer(str(agent.run(json.loads(line)["content"], reset=False)))
            except Exception as exc:  # noqa: BLE001 - one failed turn is reported, the conversation goes on
                answer("", error=repr(exc))


if __name__ == "__main__":
    main()
