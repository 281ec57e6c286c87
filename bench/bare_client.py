"""The floor the server-role benchmarks compare the suite with: the requests a suite run sent, replayed by a
bare JSON-RPC client over stdio. Imports nothing of the suite, so a process that runs only this pays for
nothing but the protocol (bench_server_cpu.py measures such a process's CPU)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

HANDSHAKE = ("initialize", "notifications/initialized")


def sent_requests(recordings) -> list[dict]:
    """Every message a suite run sent on its one connection, in order (the handshake once)."""
    seen, out = set(), []
    for rec in recordings.values():
        for event in rec.wire:
            key = json.dumps(event.message, sort_keys=True)
            if event.direction == "out" and key not in seen:
                seen.add(key)
                out.append(event.message)
    return out


def split_handshake(script: list[dict]) -> tuple[list[dict], list[dict]]:
    """The handshake (initialize and notifications/initialized) and the rest."""
    handshake = [m for m in script if m.get("method") in HANDSHAKE]
    return handshake, [m for m in script if m not in handshake]


def replay_stdio(script: list[dict], command: list[str], cwd: Path) -> None:
    """Start `command`, send the handshake and wait for its answer, then every other request at once and
    wait for every answer, then close its stdin and wait for it to exit."""
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            cwd=cwd, text=True, bufsize=1)
    assert proc.stdin is not None and proc.stdout is not None
    for messages in split_handshake(script):
        waiting = {m["id"] for m in messages if "id" in m and "method" in m}
        proc.stdin.write("".join(json.dumps(m) + "\n" for m in messages))
        proc.stdin.flush()
        while waiting:
            line = proc.stdout.readline()
            if not line:
                raise SystemExit(f"the server ended with {len(waiting)} requests unanswered")
            reply = json.loads(line)
            if "method" not in reply:
                waiting.discard(reply.get("id"))
    proc.stdin.close()
    proc.wait()
