"""The host harness: run a host under test through one scenario and record everything (HARNESS.md).

Theory of operation
-------------------
For one scenario the harness
1. starts the mock LLM and the scenario's HTTP servers inside this process (uvicorn
   on loopback sockets), and writes the config the host reads: stdio scenario
   servers are commands the host starts itself, each logging to a file;
2. starts the host command in its own process group with a scrubbed environment
   plus `MCPX_SCENARIO`, `MCPX_CONFIG`, `OPENAI_BASE_URL`, `OPENAI_API_KEY`, `MCPX_MODEL`;
3. feeds the turns one at a time, each after the previous answer, and reads one
   stdout line per turn within the turn timeout;
4. closes stdin, gives the host a grace period to exit, then ends its group and
   every scenario server it started;
5. merges what the model and the servers recorded on the shared monotonic
   clock and assigns each event to the turn whose window contains it.

Nothing is judged here. Whatever goes wrong (the host cannot start, hangs,
exits, prints garbage) ends the run with `fatal` set to a reason a person
understands; the checks turn that into "not observed" failures.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from ..core.roles import HOST
from ..targets.base import clip
from ..targets.environment import scrubbed
from ..targets.peerkit import StderrTail, cannot_start, open_group, stop_group, strict_loads
from ..targets.spec import TargetSpec
from ..targets.stdio import LineSplitter
from .mock_llm import MockLLM, ModelRequest, loopback_socket
from .scenario_server import ScenarioServer, http_app

if TYPE_CHECKING:  # uvicorn is imported when a server starts, not with the module
    import uvicorn

MODEL = "mcpx-mock-1"
API_KEY = "mcpx-dummy-key"
EXIT_GRACE = 5.0  # HARNESS.md: exit within 5 s of stdin closing
MAX_LINE = 1024 * 1024
STDERR_TAIL = 8192


@dataclass
class Turn:
    index: int  # 1-based
    user: str
    started: float
    ended: float | None = None
    line: str | None = None  # what the host printed, verbatim (clipped)
    answer: dict | None = None

    def to_report(self) -> dict:
        return {"turn": self.index, "user": self.user, "printed": self.line}


@dataclass
class HostRun:
    """Everything one scenario run produced, on one clock."""

    scenario: str
    nonce: str
    command: str
    config: dict = field(default_factory=dict)
    turns: list[Turn] = field(default_factory=list)
    model: list[ModelRequest] = field(default_factory=list)
    events: list[dict] = field(default_factory=list)  # scenario-server requests, each with "turn"
    fatal: str | None = None  # why the run ended early
    unavailable: str | None = None  # the host could not be started at all
    exit_code: int | None = None
    exit_note: str | None = None  # why the exit code is the harness's (the host was stopped), in the evidence
    stderr_tail: str = ""
    duration: float = 0.0  # the whole scenario, harness included
    host_seconds: float = 0.0  # from starting the host to its exit: what the host itself took

    # -- views the judges use --------------------------------------------------------------
    def model_in(self, turn: int) -> list[ModelRequest]:
        return [r for r in self.model if r.turn == turn and r.valid]

    def calls(self, turn: int | None = None, method: str = "tools/call") -> list[dict]:
        """The requests of one method the scenario servers answered (of one turn, or all)."""
        return [e for e in self.events if e.get("method") == method and "response" in e
                and (turn is None or e["turn"] == turn)]

    def answered(self) -> int:
        return sum(1 for t in self.turns if t.answer is not None)

    def to_report(self) -> dict:
        return {"scenario": self.scenario, "command": self.command, "fatal": self.fatal,
                "exitCode": self.exit_code, **({"exitNote": self.exit_note} if self.exit_note else {}),
                "stderrTail": self.stderr_tail or None,
                "turns": [t.to_report() for t in self.turns],
                "modelRequests": [_brief_request(r) for r in self.model],
                "serverCalls": [{"t": round(e["t"], 6), "turn": e["turn"], "server": e["server"],
                                 "method": e["method"], "params": e.get("params")} for e in self.events
                                if "method" in e]}


def _brief_request(req: ModelRequest) -> dict:
    body = req.body if isinstance(req.body, dict) else {"raw": req.body}
    from .mock_llm import offered_names

    return {"t": round(req.t, 6), "turn": req.turn, "messages": body.get("messages"),
            "tools": offered_names(body) if isinstance(req.body, dict) else None, "stream": req.stream,
            "reply": req.reply, **({"problem": req.problem} if req.problem else {})}


# ---------------------------------------------------------------------------------------------
def substitute(value: Any, nonce: str) -> Any:
    if isinstance(value, str):
        return value.replace("{nonce}", nonce)
    if isinstance(value, list):
        return [substitute(v, nonce) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v, nonce) for k, v in value.items()}
    return value


class _QuietServer:
    """uvicorn.Server that leaves signal handling to the suite (Ctrl-C must reach pytest)."""

    @staticmethod
    def make(app) -> uvicorn.Server:
        import uvicorn

        class Server(uvicorn.Server):
            """Also stops at once: uvicorn notices `should_exit` on a 0.1 s tick and then sleeps 0.1 s more
            before waiting for connections in 0.1 s steps, most of the harness's cost per scenario."""

            _wake: asyncio.Event | None = None
            _exiting = False

            @property
            def should_exit(self) -> bool:
                return self._exiting

            @should_exit.setter
            def should_exit(self, value: bool) -> None:
                self._exiting = value
                if value and self._wake is not None:
                    self._wake.set()

            def install_signal_handlers(self) -> None:  # older uvicorn
                pass

            @contextlib.contextmanager
            def capture_signals(self):  # newer uvicorn
                yield

            async def main_loop(self) -> None:
                self._wake = asyncio.Event()
                while not await self.on_tick(0):  # tick 0: the Date header is refreshed on each call
                    with contextlib.suppress(asyncio.TimeoutError):
                        await asyncio.wait_for(self._wake.wait(), 1.0)

            async def shutdown(self, sockets=None) -> None:
                for server in self.servers:
                    server.close()
                for connection in list(self.server_state.connections):
                    connection.shutdown()
                loop = asyncio.get_running_loop()
                grace = self.config.timeout_graceful_shutdown
                assert grace is not None, "make() below sets timeout_graceful_shutdown"
                deadline = loop.time() + grace
                state = self.server_state
                while (state.connections or state.tasks) and loop.time() < deadline:
                    await asyncio.sleep(0.002)
                for task in list(state.tasks):
                    task.cancel()
                for server in self.servers:
                    await server.wait_closed()

        config = uvicorn.Config(app, log_level="critical", access_log=False, lifespan="off",
                                timeout_graceful_shutdown=1)
        return Server(config)


@contextlib.asynccontextmanager
async def _serving(app, started: list | None = None):
    """Serve an ASGI app on a fresh loopback port for the duration; yields the port."""
    sock = loopback_socket()
    server = _QuietServer.make(app)
    if started is not None:
        started.append(server)
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: server.serve(sockets=[sock]))
        try:
            while not server.started:
                await anyio.sleep(0.005)
            yield sock.getsockname()[1]
        finally:
            server.should_exit = True
    sock.close()


async def run_scenario(spec: TargetSpec, scenario: dict, *, run_timeout: float = HOST.default_run_timeout,
                       marker: str | None = None) -> HostRun:
    """One scenario against the host `spec` names: its command started once per turn with its environment,
    each turn answered within its timeout."""
    command = spec.given("command", spec.command)
    nonce = uuid.uuid4().hex[:10]
    sc = substitute(scenario, nonce)
    run = HostRun(sc["id"], nonce, command)
    started = time.monotonic()
    llm = MockLLM(script={int(k): v for k, v in (sc.get("script") or {}).items()})
    memory_events: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="mcpx-host-") as tmp:
        tmpdir = Path(tmp)
        try:
            async with contextlib.AsyncExitStack() as stack:
                uvicorns: list = []
                llm_port = await stack.enter_async_context(_serving(llm.app(), uvicorns))
                servers: dict[str, dict] = {}
                for name, server in sc["servers"].items():
                    if server.get("transport") == "http":
                        srv = ScenarioServer(name, server, nonce, memory_events.append)
                        port = await stack.enter_async_context(_serving(http_app(srv), uvicorns))
                        servers[name] = {"url": f"http://127.0.0.1:{port}/mcp"}
                    else:
                        spec_file = tmpdir / f"server-{name}.json"
                        spec_file.write_text(json.dumps({"name": name, "nonce": nonce, "server": server}))
                        args = ["-m", "conformance.host.scenario_server", "--spec", str(spec_file),
                                "--log", str(tmpdir / f"server-{name}.log")]
                        if marker:
                            args += ["--marker", marker]
                        servers[name] = {"command": sys.executable, "args": args,
                                         "env": {"PYTHONPATH": _package_root()}}
                # Unwinding runs this first: every server starts shutting down at once, not one after another.
                def stop_serving() -> None:
                    for u in uvicorns:
                        u.should_exit = True

                stack.callback(stop_serving)
                run.config = {"mcpServers": servers, "contextMiddleware": sc.get("contextMiddleware", []),
                              "knownRequirements": sc.get("knownRequirements", {})}
                if sc.get("interceptors"):
                    run.config["interceptors"] = sc["interceptors"]
                config_file = tmpdir / "config.json"
                config_file.write_text(json.dumps(run.config, indent=2, ensure_ascii=False))
                host_env = {**spec.environment, "MCPX_SCENARIO": sc["id"], "MCPX_CONFIG": str(config_file),
                            "OPENAI_BASE_URL": f"http://127.0.0.1:{llm_port}/v1", "OPENAI_API_KEY": API_KEY,
                            "MCPX_MODEL": MODEL}
                with anyio.move_on_after(run_timeout) as scope:
                    await _converse(run, llm, command, sc["turns"], host_env, spec.timeout)
                if scope.cancelled_caught and not run.fatal:
                    run.fatal = f"the scenario did not finish within {run_timeout:g} s"
        finally:
            run.model = list(llm.requests)
            run.events, pids = _merge(memory_events, tmpdir, run)
            _reap_servers(pids)
    run.duration = time.monotonic() - started
    return run


def _package_root() -> str:
    """Where `conformance` is importable from, for the scenario servers the host starts."""
    return str(Path(__file__).resolve().parent.parent.parent)


async def _converse(run: HostRun, llm: MockLLM, command: str, turns: list[str], env: dict,
                    timeout: float) -> None:
    spawned = time.monotonic()
    proc = await _start_host(run, command, env)
    if proc is None:
        return
    stderr = StderrTail(STDERR_TAIL)
    send, receive = anyio.create_memory_object_stream[tuple[str, str | None]](256)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_read_lines, proc, send)
            tg.start_soon(stderr.drain, proc.stderr)
            for index, text in enumerate(turns, 1):
                llm.turn = index
                if not await _turn(run, proc, Turn(index, text, time.monotonic()), receive, timeout, stderr):
                    break
            llm.turn = len(turns) + 1  # anything the model gets after the last answer belongs to no turn
            await _finish(proc, run)
            run.host_seconds = time.monotonic() - spawned
            run.stderr_tail = stderr.text()
            tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await stop_group(proc, grace=0)  # the host has had its grace (or failed): end what is left of its group
            # Close its pipes and reap it now: a transport left for the garbage collector may outlive the loop.
            with anyio.move_on_after(1.0), contextlib.suppress(Exception):
                await proc.aclose()


async def _start_host(run: HostRun, command: str, env: dict):
    """The host's process, in a group of its own; None (and `run.unavailable` set) when it cannot start."""
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        run.unavailable = run.fatal = f"cannot parse the host command: {exc}"
        return None
    try:
        return await open_group(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=scrubbed(env))
    except (OSError, ValueError) as exc:
        run.unavailable = run.fatal = cannot_start(argv, exc)
        return None


async def _read_lines(proc, send) -> None:
    """The host's stdout, split into lines (each with the problem of a line too long, if any), into `send`."""
    splitter = LineSplitter(MAX_LINE)
    try:
        while True:
            try:
                chunk = await proc.stdout.receive(65536)
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                break
            for line, problem in splitter.feed(chunk):
                text = line.decode("utf-8", "replace") if isinstance(line, bytes) else line
                try:
                    send.send_nowait((text, problem))
                except anyio.WouldBlock:  # a flood of lines: keep memory bounded, the turn reading fails
                    pass
    finally:
        send.close()


async def _turn(run: HostRun, proc, turn: Turn, receive, timeout: float, stderr: StderrTail) -> bool:
    """Send one user turn and read its answer into `turn`; False (and `run.fatal` set) when the run ends here."""
    run.turns.append(turn)
    index = turn.index
    try:
        await proc.stdin.send((json.dumps({"role": "user", "content": turn.user}, ensure_ascii=False)
                               + "\n").encode())
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        run.fatal = await _gone(proc, stderr, f"before turn {index} could be sent")
        return False
    try:
        with anyio.fail_after(timeout):
            line, problem = await receive.receive()
    except TimeoutError:
        run.fatal = f"the host printed nothing for turn {index} within {timeout:g} s"
        return False
    except anyio.EndOfStream:
        run.fatal = await _gone(proc, stderr, f"before answering turn {index}")
        return False
    turn.ended = time.monotonic()
    turn.line = clip(line, 2000)
    if problem:
        run.fatal = f"turn {index}: the host printed {problem}"
        return False
    answer = _parse_answer(line)
    if isinstance(answer, str):
        run.fatal = f"turn {index}: {answer}"
        return False
    turn.answer = answer
    return True


async def _gone(proc, stderr: StderrTail, during: str) -> str:
    """Why the run ended: the host closed stdout `during` a turn, with its exit code and the end of its stderr."""
    code = None
    with anyio.move_on_after(1.0):
        code = await proc.wait()
    detail = f"exit code {code}" if code is not None else "still running"
    await anyio.sleep(0.05)
    tail = stderr.text()
    return f"the host closed stdout {during} ({detail}{'; stderr ends: ' + clip(tail, 300) if tail else ''})"


def _parse_answer(line: str) -> dict | str:
    """The turn's answer, or why the line is not one (HARNESS.md §2)."""
    try:
        value = strict_loads(line)
    except ValueError:
        return f"the host printed a line that is not JSON: {clip(line, 200)!r}"
    if not isinstance(value, dict) or value.get("role") != "assistant":
        return f"the host printed JSON that is not an assistant message: {clip(line, 200)!r}"
    if not isinstance(value.get("content", ""), (str, type(None))):
        return f"the answer's content is not a string: {clip(line, 200)!r}"
    return value


async def _finish(proc, run: HostRun) -> None:
    with contextlib.suppress(Exception):
        await proc.stdin.aclose()
    # A host that already failed gets no long goodbye: the verdict is known, only cleanup is left.
    with anyio.move_on_after(EXIT_GRACE if not run.fatal else 0.5):
        run.exit_code = await proc.wait()
        return
    run.exit_note = f"the host did not exit within {EXIT_GRACE:g} s of stdin closing; it was stopped"
    run.exit_code = await stop_group(proc, grace=1.0)


def _merge(memory_events: list[dict], tmpdir: Path, run: HostRun) -> tuple[list[dict], list[int]]:
    """Every scenario-server event on one timeline, each with its turn; and the stdio servers' pids."""
    events, pids = list(memory_events), []
    for log in sorted(tmpdir.glob("server-*.log")):
        for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
            with contextlib.suppress(ValueError, TypeError):
                entry = json.loads(line)
                if "started" in entry:
                    pids.append(int(entry["started"]))
                else:
                    events.append(entry)
    events.sort(key=lambda e: e["t"])
    for event in events:
        event["turn"] = turn_at(run.turns, event["t"])
    return events, pids


def turn_at(turns: list[Turn], t: float) -> int:
    """The turn whose window (stdin line written .. answer read) contains t; 0 before the first."""
    current = 0
    for turn in turns:
        if t >= turn.started:
            current = turn.index
    return current


def _reap_servers(pids: list[int]) -> None:
    """Scenario servers end when the host's pipes close; kill any that a broken host left behind."""
    for pid in pids:
        if _is_scenario_server(pid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


def _is_scenario_server(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return b"conformance.host.scenario_server" in fh.read()
    except OSError:
        return False


def run_scenario_sync(spec: TargetSpec, scenario: dict, **kw) -> HostRun:
    return anyio.run(lambda: run_scenario(spec, scenario, **kw))
