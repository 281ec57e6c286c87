"""The README's promises, and the pages it sends readers to: its two commands are what CI runs, it stays a
two-minute read, and the sessions the docs show work as shown (the CI workflow: tests/test_action.py)."""

import json
import os
import re
import subprocess
import sys

from tests.helpers import ROOT

README = (ROOT / "README.md").read_text()
REFERENCE = (ROOT / "docs" / "reference-implementations.md").read_text()
CI = (ROOT / ".ci" / "run").read_text()


def commands(section: str) -> list[str]:
    body = README.split(f"## {section}\n")[1].split("\n## ")[0]
    return re.findall(r"```sh\n(.*?)\n```", body, re.S)


def test_the_two_commands_are_what_ci_runs():
    # .ci/run runs them from a fresh clone; it splits the first into lines (and quiets pip), so compare steps.
    install_and_demo, tests = commands("Two commands")
    for step in install_and_demo.split(" && "):
        step = step.replace("pip install", "python -m pip install -q").replace("mcp-ext-conformance demo",
                                                                            "mcp-ext-conformance demo --report-dir")
        assert step in CI, step
    assert tests == ". .venv/bin/activate && python -m pytest -n auto --dist worksteal"
    assert "\npython -m pytest -n auto --dist worksteal\n" in CI


def test_the_readme_is_a_two_minute_read():
    # Everything beyond a first run, the three roles, CI, outcomes and troubleshooting belongs in docs/.
    assert len(README.encode("utf-8")) <= 12 * 1024


def test_reference_server_transcript_works_as_shown():
    block = REFERENCE.split("<!-- transcript:begin -->")[1].split("<!-- transcript:end -->")[0]
    command, shown = re.findall(r"```(?:sh|json)\n(.*?)```", block, re.S)
    command = command.replace("python -m", f"{sys.executable} -m")
    want = sorted((json.loads(line) for line in shown.splitlines() if line.strip()), key=lambda m: m["id"])

    def run(command: str):
        proc = subprocess.run(["bash", "-c", command], cwd=ROOT, capture_output=True, text=True, timeout=60,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
        # by id: JSON-RPC answers may come in any order (middleware runs in worker threads)
        return proc, sorted((json.loads(line) for line in proc.stdout.splitlines() if line.strip()),
                            key=lambda m: m["id"])

    proc, got = run(command)
    if len(got) < len(want) or "Connection closed" in proc.stdout:
        # The session's `sleep 3` keeps stdin open until the answers are out; on a loaded machine the server can
        # need longer, and then closes the session early. Once more, with time to spare.
        proc, got = run(command.replace("sleep 3", "sleep 15"))
    assert len(got) == len(want), proc.stdout + proc.stderr
    for g, w in zip(got, want):
        if w["id"] == 1:  # serverInfo and SDK-specific capability fields vary by release
            assert {"contextMiddleware", "augmentation", "tools"} <= set(g["result"]["capabilities"])
            continue
        assert g == w


def test_the_check_counts_the_pages_give_are_the_registry_s():
    from conformance.core import roles

    roles.load_all()
    live = {role.name: len(role.check_ids()) for role in (roles.SERVER, roles.HOST, roles.GATEWAY)}
    said = dict(re.findall(r"\*\*(server|host|gateway)\*\* \(.*?(\d+) checks\)", README, re.S))
    assert {name: int(n) for name, n in said.items()} == live
    pages = {"server": r"got back\. (\d+) checks\.", "host": r"\((\d+) checks\):", "gateway": r"apart \((\d+) checks\)"}
    for name, pattern in pages.items():
        found = re.search(pattern, (ROOT / "docs" / f"{name}.md").read_text())
        assert found and int(found.group(1)) == live[name], name
