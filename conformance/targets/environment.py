"""The environment a target is started with: an allowlist, plus what the user passes.

A third-party server under test should not see the API keys and tokens of the
person running the suite, so only variables a program needs to start (paths,
locale, temporary directories, the Python environment) are kept.
"""

from __future__ import annotations

import os

ALLOWED = (
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TERM",
    "TMPDIR", "TEMP", "TMP", "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONUNBUFFERED",
    "PYTHONDONTWRITEBYTECODE", "SYSTEMROOT", "SSL_CERT_FILE", "SSL_CERT_DIR",
)
# Not MCPX_: the suite's own settings (a memory store's path, a fixture's log) reach a target only through
# --env, so a server under test cannot read them (or be steered by them) unasked.
ALLOWED_PREFIXES = ("LC_", "COVERAGE_")


def scrubbed(extra: dict[str, str] | None = None, base: dict[str, str] | None = None) -> dict[str, str]:
    source = os.environ if base is None else base
    env = {k: v for k, v in source.items() if k in ALLOWED or k.startswith(ALLOWED_PREFIXES)}
    env.setdefault("PYTHONUNBUFFERED", "1")
    env.update(extra or {})
    return env
