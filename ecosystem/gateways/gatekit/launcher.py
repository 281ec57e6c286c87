"""Start Gatekit's gateway in front of the upstream named by MCPX_UPSTREAM_COMMAND.

    python ecosystem/gateways/gatekit/launcher.py PATH/TO/gatekit-gateway [PLUGINS.yaml]

Gatekit takes its upstreams only from a config file, so this writes one (upstream `fixture`, stdio,
no plugins unless given) into a temporary directory and execs the gateway on it: the suite can then
start Gatekit like any gateway, with the upstream contract of docs/fixture-contract.md.
"""

from __future__ import annotations

import os
import shlex
import sys
import tempfile
from pathlib import Path

import yaml


def main() -> None:
    gateway = sys.argv[1]
    upstream = shlex.split(os.environ["MCPX_UPSTREAM_COMMAND"])
    config = {"proxy": {"transport": "stdio",
                        "upstreams": [{"name": "fixture", "command": upstream, "restart_on_failure": False}]},
              # Logs to stderr only at WARNING: Gatekit's stdout is the MCP channel.
              "logging": {"level": "WARNING", "handlers": ["stderr"]}}
    if len(sys.argv) > 2:
        config["plugins"] = yaml.safe_load(Path(sys.argv[2]).read_text())
    directory = tempfile.mkdtemp(prefix="mcpx-gatekit-")
    path = Path(directory) / "gatekit.yaml"
    path.write_text(yaml.safe_dump(config))
    os.execv(gateway, [gateway, "--config", str(path)])


if __name__ == "__main__":
    main()
