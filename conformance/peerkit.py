"""The start of one kit for the suite's own processes and peers (standard library only).

Today: a free loopback port, waiting until a started server listens, and the stderr tail every
process failure quotes. Process-group start/stop and the raw JSON-RPC serve loops still live with
their users (targets/stdio.py, gateway/launch.py, host/harness.py, cli.py); issue 14 item 3 moves
them here. The reference side (reference_servers/, the SDK) and the fixture upstream stay
independent on purpose: they must not share code with what judges them.
"""

from __future__ import annotations

import re
import socket
import subprocess
import time


def free_port() -> int:
    """A loopback port nothing listens on right now (the OS picks it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, proc: subprocess.Popen, timeout: float = 30.0) -> bool:
    """True once something accepts on 127.0.0.1:port; False when `proc` exits first or time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.1)
    return False


# Terminal escape sequences (CSI, OSC, two-byte) and other control characters: what a hostile target could
# use to rewrite the user's terminal if its output reached it raw.
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]?")
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """`text` without terminal escape sequences; other control characters shown as \\xNN (newlines and tabs kept)."""
    text = _ESCAPES.sub("", text)
    return _CONTROLS.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def stderr_tail(data: bytes, lines: int = 3) -> str:
    """The last non-blank lines of a process's stderr, joined on one line and made printable, as reasons quote them."""
    text = data.decode("utf-8", "replace").strip()
    kept = [ln for ln in text.splitlines() if ln.strip()]
    return printable(" | ".join(kept[-lines:]))
