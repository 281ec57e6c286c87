"""`mcp-ext-conformance interceptors|middleware list|invoke`: one request by hand, judged on the spot.

Run as a user runs it (the CLI in a subprocess) against the reference server and against mutants of the
SDK-free interceptor server; the judges themselves are pure functions, tested on their own below.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.server import hand

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = f"{sys.executable} -m reference_servers.everything"
FAKE = f"{sys.executable} {ROOT / 'tests/servers/fake_interceptor_server.py'}"
MARKED = json.dumps({"method": "tools/call", "params": {"name": "x", "arguments": {"text": "conformance:invalid"}}})


@pytest.fixture
def reference(reference_server_env) -> tuple[str, ...]:
    """The reference server as these tests name it: a child of the worker's fork server (conftest.py)."""
    return ("--command", REFERENCE, *(f"--env={name}={value}" for name, value in reference_server_env.items()))


def tool(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "conformance", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def verdict(*args: str) -> tuple[int, dict]:
    done = tool(*args, "--json")
    assert done.stdout, done.stderr
    return done.returncode, json.loads(done.stdout)


def test_list_filtered_by_event_against_the_reference_server(reference):
    done = tool("interceptors", "list", "--event", "resources/read", *reference)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "<- conformance_response_only  validation  response: resources/read" in done.stdout
    assert "conformance_validator" not in done.stdout  # hooks tools/call only
    assert done.stdout.rstrip().endswith("ok: 5 interceptor(s) for resources/read")


def test_validator_invocation_is_judged_a_validation_result(reference):
    code, out = verdict("interceptors", "invoke", "conformance_validator", "--event", "tools/call", "--phase",
                        "request", "--payload", MARKED, *reference)
    assert code == 0 and out["ok"], out
    assert out["response"]["result"]["valid"] is False
    assert out["summary"] == "a ValidationResult: valid false, 1 message(s)"


def test_payload_and_config_from_files(tmp_path, reference):
    (tmp_path / "payload.json").write_text(MARKED)
    (tmp_path / "config.json").write_text('{"strict": true}')
    code, out = verdict("interceptors", "invoke", "conformance_validator", "--event", "tools/call", "--phase",
                        "request", "--payload", f"@{tmp_path / 'payload.json'}", "--config",
                        f"@{tmp_path / 'config.json'}", *reference)
    assert code == 0 and out["request"]["params"]["config"] == {"strict": True}


def test_timeout_ms_reaches_the_server(reference):
    code, out = verdict("interceptors", "invoke", "conformance_slow", "--event", "tools/call", "--phase", "request",
                        "--payload", "{}", "--timeout-ms", "200", *reference)
    assert code == 0 and out["response"]["error"]["code"] == -32000, out


def test_a_mutant_result_fails_with_the_problem_named():
    # The mutant's real validator answers `valid` as a string: the ValidationResult branch names it.
    code, out = verdict("interceptors", "invoke", "secret-scanner", "--event", "tools/call", "--phase", "request", "--payload",
                        "{}", "--command", f"{FAKE} --break real-bad-result")
    assert code == 1 and not out["ok"]
    assert any("ValidationResult" in p and "valid" in p for p in out["problems"]), out["problems"]


def test_a_mutant_that_ignores_hooks_fails():
    args = ("interceptors", "invoke", "conformance_response_only", "--event", "resources/read", "--phase", "request",
            "--payload", "{}")
    assert verdict(*args, "--command", FAKE)[0] == 0
    code, out = verdict(*args, "--command", f"{FAKE} --break hooks-ignored")
    assert code == 1 and "does not hook resources/read in the request phase" in out["problems"][0]


def test_middleware_list_and_invoke_against_the_reference_server(reference):
    done = tool("middleware", "list", *reference)
    assert done.returncode == 0 and "<- conformance_identity" in done.stdout, done.stdout + done.stderr
    code, out = verdict("middleware", "invoke", "conformance_uppercase", "--context",
                        '[{"type": "text", "text": "hi"}]', *reference)
    assert code == 0 and out["response"]["result"]["content"] == [{"type": "text", "text": "HI"}]


@pytest.mark.parametrize("args, says", [
    (("interceptors", "list"), "give one target, --command or --url"),
    (("middleware", "invoke", "x", "--context", "[{", "--command", "true"), "--context is not JSON"),
    (("interceptors", "invoke", "x", "--event", "e", "--phase", "request", "--payload", "@/nonexistent/p.json",
      "--command", "true"), "cannot read"),
    (("interceptors", "invoke", "x", "--event", "e", "--phase", "request", "--payload", "{}", "--timeout-ms", "-5",
      "--command", "true"), "give a positive whole number"),
    (("interceptors", "list", "--command", "no-such-program-here"), "could not be reached"),
])
def test_mistakes_are_one_line_and_exit_2(args, says):
    done = tool(*args)
    assert done.returncode == 2, done.stdout + done.stderr
    assert says in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


# -- the judges, pure -----------------------------------------------------------------------------------------
LISTED = {"name": "v", "type": "validation", "hooks": [{"events": ["tools/call"], "phase": "request"}]}
PARAMS = {"name": "v", "event": "tools/call", "phase": "request", "payload": {}}


def test_a_mutation_result_from_a_validator_is_a_problem():
    out = hand.judge_interceptor_invoke(LISTED, True, PARAMS, {"result": {"modified": False, "payload": {}}})
    assert "a validation interceptor answered a MutationResult" in out.problems


def test_an_unknown_name_answered_with_a_result_is_a_problem():
    out = hand.judge_interceptor_invoke(None, True, {**PARAMS, "name": "x"}, {"result": {"valid": True}})
    assert any("is not listed" in p for p in out.problems)


def test_a_namespace_wildcard_leaves_the_hook_open():
    item = {**LISTED, "hooks": [{"events": ["tools/*"], "phase": "request"}]}
    assert hand.hooks(item, "tools/call", "request") is None  # the implementation's to define: no problem
    assert hand.judge_interceptor_list({"interceptors": [item]}, "tools/call").problems == []


def test_a_timeout_without_the_examples_data_is_a_note_not_a_problem():
    out = hand.judge_interceptor_invoke(LISTED, True, {**PARAMS, "timeoutMs": 5},
                                        {"error": {"code": -32000, "message": "timeout"}})
    assert out.problems == [] and "data.interceptor" in out.notes[0]


def test_a_malformed_error_object_is_a_problem():
    out = hand.judge_middleware_invoke(None, False, {"name": "m"}, {"error": {"code": "x"}})
    assert len(out.problems) == 2
