"""A stdio target the command line starts early (targets/prestart.py) behaves as one its connection starts:
answered, timed out, crashed, unstartable, ended; taken once, by the connection that would have started it."""

import os
import shlex
import subprocess
import sys
import time

import anyio
import pytest

from conformance.targets import TargetSpec, TargetUnavailable, prestart
from conformance.targets.environment import scrubbed
from conformance.targets.stdio import started_with
from tests.helpers import gone_within, proc_state
from tests.test_targets import run, script

ECHO = ("import sys,json\nfor l in sys.stdin:\n m=json.loads(l); "
        "print(json.dumps({'jsonrpc':'2.0','id':m['id'],'result':{'pid':__import__('os').getpid()}}), flush=True)")


def started_early(spec: TargetSpec) -> TargetSpec:
    """`spec`'s process started now, as the command line does, for its connection to take."""
    prestart.start(*started_with(spec.command, spec.environment))
    return spec


def test_the_connection_takes_the_process_started_early_and_it_answers():
    spec = started_early(TargetSpec("stdio", command=script(ECHO)))
    (first, second), conn = run(spec, "ping", "ping")
    assert first.result == second.result and first.result["pid"] == conn.proc.pid
    assert isinstance(conn.proc, prestart.Adopted)
    assert not prestart._waiting  # taken once
    assert gone_within(first.result["pid"]), proc_state(first.result["pid"])


def test_a_second_connection_starts_its_own_process():
    spec = started_early(TargetSpec("stdio", command=script(ECHO)))
    (one,), conn_one = run(spec, "ping")
    (two,), conn_two = run(spec, "ping")
    assert one.result["pid"] != two.result["pid"]
    assert isinstance(conn_one.proc, prestart.Adopted) and not isinstance(conn_two.proc, prestart.Adopted)


def test_a_process_started_with_another_environment_is_not_taken():
    spec = TargetSpec("stdio", command=script(ECHO))
    prestart.start(shlex.split(spec.command), scrubbed({"OTHER": "1"}))
    try:
        (ex,), conn = run(spec, "ping")
        assert ex.result and not isinstance(conn.proc, prestart.Adopted)
    finally:
        left = prestart.take(shlex.split(spec.command), scrubbed({"OTHER": "1"}))
        assert left is not None
        left.kill()
        left.wait()
        for pipe in (left.stdin, left.stdout, left.stderr):
            pipe.close()


def test_a_process_started_early_that_hangs_times_out_and_its_grandchildren_die(tmp_path):
    pidfile = tmp_path / "grandchild.pid"
    code = ("import subprocess,sys,time; p=subprocess.Popen(['sleep','300']); "
            f"open({str(pidfile)!r},'w').write(str(p.pid)); time.sleep(300)")
    started = time.monotonic()
    (ex,), _ = run(started_early(TargetSpec("stdio", command=script(code), timeout=1.0)), "initialize")
    assert ex.failure == "no response to initialize within 1 s"
    assert time.monotonic() - started < 6
    grandchild = int(pidfile.read_text())
    assert gone_within(grandchild), proc_state(grandchild)


def test_a_process_started_early_that_crashes_is_reported_with_exit_code_and_stderr():
    spec = TargetSpec("stdio", command=script("import sys; sys.stderr.write('kaboom\\n'); sys.exit(3)"), timeout=5)
    (ex,), _ = run(started_early(spec), "initialize")
    assert "exit code 3" in ex.failure and "kaboom" in ex.failure


def test_a_program_that_could_not_start_early_is_reported_by_its_connection():
    spec = started_early(TargetSpec("stdio", command="no-such-program-mcpx --flag"))
    with pytest.raises(TargetUnavailable, match="no such program 'no-such-program-mcpx' on PATH"):
        run(spec, "initialize")
    assert not prestart._waiting


def test_a_large_message_reaches_a_process_started_early_whole():
    """Writes past the pipe's buffer wait for the reader (flow control), as on a connection's own process."""
    code = ("import sys,json\nfor l in sys.stdin:\n m=json.loads(l); "
            "print(json.dumps({'jsonrpc':'2.0','id':m['id'],'result':{'n':len(m['params']['text'])}}), flush=True)")
    spec = started_early(TargetSpec("stdio", command=script(code)))

    async def main():
        async with spec.connect() as conn:
            return await conn.request("echo", {"text": "x" * (4 * 1024 * 1024)})

    assert anyio.run(main).result == {"n": 4 * 1024 * 1024}


def test_a_process_no_connection_takes_is_ended_when_the_interpreter_leaves(tmp_path):
    code = ("import sys; from conformance.targets import prestart; "
            "prestart.start(['sleep', '300'], {'PATH': '/usr/bin:/bin'}); "
            "print(next(iter(prestart._waiting.values())).pid, flush=True)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30,
                         cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    pid = int(out.stdout)
    assert gone_within(pid), proc_state(pid)


@pytest.mark.parametrize("selection", [[], ["-k", "interceptors"]], ids=["every check", "-k"])
def test_a_server_role_run_starts_its_stdio_target_once(tmp_path, selection):
    """Started early for a run of every check, by its connection under -k: once either way, and the run passes."""
    log = tmp_path / "starts"
    wrapper = tmp_path / "server.sh"
    wrapper.write_text(f"#!/bin/sh\necho started >> {shlex.quote(str(log))}\n"
                       f"exec {shlex.quote(sys.executable)} -m conformance.gateway.upstream\n")
    wrapper.chmod(0o755)
    from tests.test_cli import cli

    out = cli("server", "--command", str(wrapper), "--report-dir", str(tmp_path / "report"), *selection)
    assert out.returncode == 0, out.stdout + out.stderr
    assert log.read_text().splitlines() == ["started"]
