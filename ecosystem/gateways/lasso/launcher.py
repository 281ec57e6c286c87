"""Start Lasso's MCP gateway in front of the upstream named by MCPX_UPSTREAM_COMMAND.

    python ecosystem/gateways/lasso/launcher.py PATH/TO/mcp-gateway [GATEWAY OPTIONS...]

Lasso's gateway takes its upstreams only from an mcp.json file, so this writes one (upstream
`fixture`, stdio) into a temporary directory and execs the gateway on it with the options given
(`-p basic`, for instance): the suite can then start it like any gateway, with the upstream
contract of docs/fixture-contract.md.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import tempfile
from pathlib import Path


def main() -> None:
    gateway, options = sys.argv[1], sys.argv[2:]
    command, *args = shlex.split(os.environ["MCPX_UPSTREAM_COMMAND"])
    # The first entry of mcpServers is the gateway's own; its `servers` are the upstreams it fronts.
    config = {"mcpServers": {"mcp-gateway": {"servers": {"fixture": {"command": command, "args": args}}}}}
    path = Path(tempfile.mkdtemp(prefix="mcpx-lasso-")) / "mcp.json"
    path.write_text(json.dumps(config))
    os.execv(gateway, [gateway, "--mcp-json-path", str(path), *options])


if __name__ == "__main__":
    main()
