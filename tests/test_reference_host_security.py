"""The reference host's security properties, end to end with real processes (README "Security notes: reference host")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# A stdio "server" that writes the environment it was given to a file and exits: the host logs
# that it failed to start and carries on, which is all this test needs.
DUMP_ENV = "import json, os, sys; json.dump(dict(os.environ), open(sys.argv[1], 'w'))"


def run_host(config: dict, tmp_path: Path, env: dict, turns: str = "") -> subprocess.CompletedProcess:
    config_file = tmp_path / "config.json"
    config_file.write_text(json.dumps(config))
    return subprocess.run([sys.executable, "-m", "reference_clients.host"], input=turns, capture_output=True,
                          text=True, timeout=60, cwd=ROOT,
                          env={**env, "MCPX_CONFIG": str(config_file), "MCPX_CONNECT_TIMEOUT": "20"})


def test_stdio_servers_get_a_minimal_environment_plus_their_configured_env(tmp_path):
    dumps = [tmp_path / "env-a.json", tmp_path / "env-b.json"]
    config = {"mcpServers": {
        "a": {"command": sys.executable, "args": ["-c", DUMP_ENV, str(dumps[0])], "env": {"CONFIGURED_FOR_A": "yes"}},
        "b": {"command": sys.executable, "args": ["-c", DUMP_ENV, str(dumps[1])]},
    }}
    planted = {"OPENAI_API_KEY": "sk-planted-host-key", "MCPX_TEST_SECRET": "planted-secret",
               "AWS_SECRET_ACCESS_KEY": "planted-aws"}
    done = run_host(config, tmp_path, {**os.environ, **planted, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"})
    assert done.returncode == 0, done.stderr[-2000:]
    got = [json.loads(p.read_text()) for p in dumps]
    for env in got:
        assert not set(planted) & set(env), sorted(set(planted) & set(env))
        assert not any(value in planted.values() for value in env.values())
        assert "OPENAI_BASE_URL" not in env and "MCPX_CONFIG" not in env
        assert env.get("PATH")  # the minimal environment still lets a server find its programs
    assert got[0]["CONFIGURED_FOR_A"] == "yes" and "CONFIGURED_FOR_A" not in got[1]
