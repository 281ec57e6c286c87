"""Targets end every exchange with a verdict and leave no process behind."""

import shlex
import sys
import time

import anyio
import pytest

from conformance.targets import TargetSpec
from tests.helpers import gone_within, proc_state

PY = shlex.quote(sys.executable)


def script(code: str) -> str:
    return f"{PY} -c {shlex.quote(code)}"


def run(spec, *requests):
    async def main():
        async with spec.connect() as conn:
            out = [await conn.request(m, {}) for m in requests]
            return out, conn
    return anyio.run(main)


def test_hanging_server_times_out_and_its_grandchildren_die(tmp_path):
    pidfile = tmp_path / "grandchild.pid"
    code = ("import subprocess,sys,time; p=subprocess.Popen(['sleep','300']); "
            f"open({str(pidfile)!r},'w').write(str(p.pid)); time.sleep(300)")
    started = time.monotonic()
    (ex,), _ = run(TargetSpec("stdio", command=script(code), timeout=1.0), "initialize")
    assert ex.failure == "no response to initialize within 1 s"
    assert time.monotonic() - started < 6
    grandchild = int(pidfile.read_text())
    assert gone_within(grandchild), proc_state(grandchild)


def test_crashing_server_reason_has_exit_code_and_stderr():
    (ex,), _ = run(TargetSpec("stdio", command=script("import sys; sys.stderr.write('kaboom\\n'); sys.exit(3)"),
                              timeout=5), "initialize")
    assert "exit code 3" in ex.failure and "kaboom" in ex.failure


def test_garbage_on_stdout_is_recorded_not_raised():
    code = ("import sys,json\nfor l in sys.stdin:\n m=json.loads(l); print('hello there'); "
            "print(json.dumps({'jsonrpc':'2.0','id':m['id'],'result':{}}), flush=True)")
    (ex,), conn = run(TargetSpec("stdio", command=script(code)), "ping")
    assert ex.result == {}
    assert any(e.problem == "not JSON" and e.raw == "hello there" for e in conn.wire)


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity"])
def test_a_number_json_does_not_have_is_not_json(token):
    """Python's parser takes NaN and Infinity; JSON (RFC 8259) has neither: such a line is recorded as not JSON
    (so the wire check fails, and no report keeps a non-JSON float), and its request stays unanswered."""
    code = ("import sys,json\nfor l in sys.stdin:\n m=json.loads(l); "
            f"print('{{\"jsonrpc\":\"2.0\",\"id\":'+str(m['id'])+',\"result\":{{\"n\":{token}}}}}', flush=True)")
    (ex,), conn = run(TargetSpec("stdio", command=script(code), timeout=1.0), "ping")
    assert ex.response is None
    assert any(e.problem == "not JSON" and token in (e.raw or "") for e in conn.wire)


def test_oversized_message_is_skipped_and_the_next_one_read():
    code = ("import sys,json\nfor l in sys.stdin:\n m=json.loads(l); print('x'*300000); "
            "print(json.dumps({'jsonrpc':'2.0','id':m['id'],'result':{}}), flush=True)")
    spec = TargetSpec("stdio", command=script(code), max_message_bytes=100000)
    (ex,), conn = run(spec, "ping")
    assert ex.result == {}
    assert any("over 100000 bytes" in (e.problem or "") for e in conn.wire)


def test_response_to_unknown_id_and_duplicates_are_problems():
    code = ("import sys,json\nfor l in sys.stdin:\n m=json.loads(l)\n"
            " for i in (999, m['id'], m['id']): print(json.dumps({'jsonrpc':'2.0','id':i,'result':{}}), flush=True)")
    (ex,), conn = run(TargetSpec("stdio", command=script(code)), "ping")
    anyio.run(anyio.sleep, 0.2)
    problems = [e.problem for e in conn.wire if e.problem]
    assert any("999" in p for p in problems)


def test_secrets_do_not_reach_the_target(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    code = ("import sys,json,os\nfor l in sys.stdin:\n m=json.loads(l); "
            "print(json.dumps({'jsonrpc':'2.0','id':m['id'],'result':{'env':sorted(os.environ)}}), flush=True)")
    (ex,), _ = run(TargetSpec("stdio", command=script(code), env={"GIVEN": "1"}), "ping")
    assert "OPENAI_API_KEY" not in ex.result["env"] and "GIVEN" in ex.result["env"]


def test_suite_variables_reach_the_target_only_when_given(monkeypatch):
    monkeypatch.setenv("MCPX_MEMORY_STORE", "/home/someone/secret-store")
    code = ("import sys,json,os\nfor l in sys.stdin:\n m=json.loads(l); "
            "print(json.dumps({'jsonrpc':'2.0','id':m['id'],'result':{'env':sorted(os.environ)}}), flush=True)")
    (ex,), _ = run(TargetSpec("stdio", command=script(code)), "ping")
    assert "MCPX_MEMORY_STORE" not in ex.result["env"]
    (ex,), _ = run(TargetSpec("stdio", command=script(code), env={"MCPX_MEMORY_STORE": ":memory:"}), "ping")
    assert "MCPX_MEMORY_STORE" in ex.result["env"]


def test_stderr_escape_sequences_do_not_reach_a_reason():
    code = r"import sys; sys.stderr.write('\x1b[2J\x1b]0;pwned\x07boom\x1b[31m red\r\n'); sys.exit(3)"
    (ex,), _ = run(TargetSpec("stdio", command=script(code), timeout=5), "initialize")
    assert "boom" in ex.failure and "red" in ex.failure
    assert not any(ch in ex.failure for ch in "\x1b\x07\r"), repr(ex.failure)
