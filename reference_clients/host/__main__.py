"""The reference host: MCP servers + an OpenAI-compatible model, one JSON line per turn.

    MCPX_CONFIG=cfg.json OPENAI_BASE_URL=http://127.0.0.1:8000/v1 OPENAI_API_KEY=... \\
        MCPX_MODEL=gpt-4o-mini python -m reference_clients.host

It implements the contract in conformance/host/HARNESS.md: stdin carries one
`{"role": "user", "content": "..."}` line per turn, stdout one
`{"role": "assistant", "content": "..."}` line per turn (with an `"error"`
string when the turn could not be answered) and nothing else, stderr the logs.
It exits when stdin closes. The same command works against a real
OpenAI-compatible endpoint (OPENAI_BASE_URL defaults to OpenAI's own).

Each turn: request-phase context middleware (priority ascending, default 50,
ties in list order, each fed the previous one's output), then every
`preprocessor: true` tool of every server (its output goes into this turn's
model requests as a system message, never into the history), then the model
with every other tool (a tool is left out for `execution.requirements` only
when all its strings are known and one is known false, compared exactly),
tool calls until the model answers in text, and response-phase middleware on
that answer. Middleware metadata stays in the application.

Configuration (MCPX_CONFIG, JSON):

    {
      "mcpServers": {
        "everything": {"command": "python", "args": ["-m", "reference_servers.everything"],
                       "env": {"MCPX_MEMORY_STORE": ":memory:"}}
      },
      "contextMiddleware": [
        {"server": "everything", "name": "pii_redaction", "phase": "request", "priority": 10,
         "arguments": {"redactions": {"$metadata": "pii_redaction.redactions"}}},
        {"server": "everything", "name": "pii_restoration", "phase": "response",
         "arguments": {"redactions": {"$metadata": "pii_redaction.redactions"}}}
      ],
      "knownRequirements": {"auth:role:memory_admin": false},
      "interceptors": [{"server": "everything", "name": "pii-redactor"}]
    }

A stdio server is started with the mcp SDK's minimal environment (HOME,
LOGNAME, PATH, SHELL, TERM, USER) plus its own `env`, never with the host's
environment, which holds the model's API key. A Streamable HTTP server is `{"url": "http://127.0.0.1:8765/mcp"}` (e.g.
`python -m reference_servers.everything --http 8765`). Tools keep their names
unless that could shadow another server's tool: a name two servers share, a
name inside a server's namespace (`memory__...` when a server is called
memory) and a name that is not a valid function name are offered as
`server__tool`; names that still clash are not offered at all. MCPX_MODEL defaults to gpt-4o-mini.

Beyond the harness contract: request-phase entries see everything the model is
sent besides the history, not only the user's message: each preprocessor
output and each tool result (its text, or the error the host reports) goes
through them too, one after another in the same order, before it reaches the
model. What fails there is withheld from the model (a preprocessor's output
is left out, a tool message says the result was withheld). An entry's
`"applyTo"`, a list drawn from "user", "preprocessor" and "tool" (default: all
three), narrows what it sees; e.g. an augmentation that adds retrieved
documents to the user's message has no business with tool results.

Also beyond the harness contract: anywhere in an entry's `arguments`, an object
`{"$metadata": "<middleware name>.<key>[.<key>...]"}` is replaced, at each
invocation, by that key of the latest metadata the named middleware returned
in this conversation. Until there is one, the reference is left out of the
arguments (null inside an array), so the middleware uses its default. Above,
pii_redaction keeps its handles stable across turns by getting its own
`redactions` map back, and pii_restoration gets the map it needs to undo
them, while the model only ever sees handles such as [EMAIL_1].

Environment, besides the above:
  MCPX_STREAM=0            plain requests instead of streaming (default: stream)
  MCPX_REQUEST_TIMEOUT     seconds for each MCP request (default 15)
  MCPX_CONNECT_TIMEOUT     seconds to wait for all servers at start-up (default 15)
  MCPX_LLM_TIMEOUT         seconds for each model request (default 60)
  MCPX_TURN_TIMEOUT        seconds for a whole turn (default 120)
  MCPX_LLM_RETRIES         retries of a failed model request (default 0)
  MCPX_SYSTEM_PROMPT       a system message put first in every model request
  MCPX_LOG_LEVEL           stderr log level (default INFO)
  MCPX_HOST_PREFORK        a fork server's socket: run as its child, imports done once for
                           many runs (reference_clients/host/prefork.py; the demo starts one)

Interceptors (SEP-2624): `interceptors` names the servers whose interceptors
wrap every tools/call (an entry may add `"name"` to take only that one). They
are listed once at start-up and run as reference_clients/host/interceptors.py
describes: mutate then validate before the call, validate then mutate on its
result, audit mode never applied or blocking, fail closed unless `failOpen`.
An entry naming one interceptor may carry `overrides` (priorityHint, mode,
failOpen, timeoutMs, hooks); `timeoutMs` bounds each invocation of it (and is
passed on in the invocation), and a timeout is a failure like any other.
A call they stop, or a result they withhold, reaches the model as an error
`tool` message.

A server that fails to start, a tool that fails and a model request that fails
are logged and the conversation goes on. A failed request-phase middleware
stops its turn before anything reaches the model (the line carries `"error"`);
a failed response-phase middleware prints the model's answer unprocessed,
with `"error"`.
"""

from __future__ import annotations

import os
import sys

if __name__ == "__main__" and os.environ.get("MCPX_HOST_PREFORK") and sys.argv[1:2] != ["--prefork"]:
    # A fork server of the demo's (prefork.py) runs this host with its imports done; checked before the imports
    # below, which a starter does not need.
    from .prefork import hand_over

    hand_over(os.environ["MCPX_HOST_PREFORK"])

import asyncio  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import signal  # noqa: E402
import stat  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from typing import Any, TextIO  # noqa: E402

STARTED = time.monotonic()  # start-up is reported from here, imports of this module included
FORKED = False  # a child of the fork server (prefork.py): its imports were done before STARTED
log = logging.getLogger("reference_host")


def _env_float(name: str, default: float) -> float:
    try:
        return float(os.environ.get(name, default))
    except ValueError:
        log.warning("%s is not a number; using %s", name, default)
        return default


def load_config(path: str | None) -> dict:
    if not path:
        log.warning("MCPX_CONFIG is not set: no MCP servers")
        return {}
    try:
        with open(path, encoding="utf-8") as handle:
            config = json.load(handle)
    except (OSError, ValueError) as exc:
        log.error("cannot read MCPX_CONFIG %s: %s", path, exc)
        return {}
    if not isinstance(config, dict):
        log.error("MCPX_CONFIG %s is not a JSON object", path)
        return {}
    return config


def user_text(line: bytes) -> str:
    """The user message of one stdin line; ValueError when the line is not a user turn."""
    message = json.loads(line)
    if not isinstance(message, dict):
        raise ValueError("the line is not a JSON object")
    content = message.get("content")
    if isinstance(content, list):  # tolerate Chat Completions content parts
        content = "\n".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    if not isinstance(content, str):
        raise ValueError("the line has no string `content`")
    return content


def _pollable(fd: int) -> bool:
    """A pipe, a socket or a terminal: what epoll watches."""
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(fd)


class LineReader:
    """stdin lines for asyncio.

    A pipe or a terminal is read by the event loop itself, so nothing is left
    blocked in a read at shutdown (a thread stuck there makes the interpreter
    abort on exit). A regular file (`< turns.jsonl`) cannot be watched by the
    loop (nor can /dev/null), but reading it never blocks, so a daemon thread does it.
    """

    def __init__(self) -> None:
        self._stream: asyncio.StreamReader | None = None
        self._queue: asyncio.Queue[bytes] | None = None

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        stream = asyncio.StreamReader(limit=64 * 1024 * 1024, loop=loop)
        try:
            if not _pollable(sys.stdin.fileno()):  # /dev/null is a character device epoll refuses, too late to catch
                raise ValueError("stdin cannot be watched by the event loop")
            await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stream, loop=loop), sys.stdin)
            self._stream = stream
        except (ValueError, OSError):
            self._queue = asyncio.Queue()
            threading.Thread(target=self._pump, args=(loop, self._queue), name="stdin", daemon=True).start()

    @staticmethod
    def _pump(loop: asyncio.AbstractEventLoop, queue: asyncio.Queue) -> None:
        try:
            for line in sys.stdin.buffer:
                loop.call_soon_threadsafe(queue.put_nowait, line)
        except (OSError, ValueError) as exc:
            log.error("stdin: %s", exc)
        finally:
            try:
                loop.call_soon_threadsafe(queue.put_nowait, b"")
            except RuntimeError:  # the loop is already closed
                pass

    async def next(self) -> bytes:
        """The next line, b"" at the end."""
        if self._stream is not None:
            try:
                return await self._stream.readline()
            except ValueError as exc:  # a line beyond the limit: answer it with an error, go on
                log.error("stdin: %s", exc)
                return b"<line too long>\n"
        assert self._queue is not None
        return await self._queue.get()


def _warm_import(done: threading.Event) -> None:
    try:
        import openai  # noqa: F401 - imported for its side effect: it is cached for ChatModel
    except Exception as exc:  # noqa: BLE001 - ChatModel will report it
        log.debug("warming up openai failed: %s", exc)
    finally:
        done.set()


async def run(out: TextIO) -> int:
    config = load_config(os.environ.get("MCPX_CONFIG"))
    specs = config.get("mcpServers") or {}
    if not isinstance(specs, dict):
        log.error("mcpServers is not an object; ignoring it")
        specs = {}

    from .servers import Server  # the mcp SDK: most of start-up's import time

    request_timeout = _env_float("MCPX_REQUEST_TIMEOUT", 15)
    servers = [Server(str(name), spec if isinstance(spec, dict) else {}, request_timeout)
               for name, spec in specs.items()]
    for server in servers:
        server.start()
    # openai is imported in a thread while the servers start, when this thread mostly waits.
    warmed = threading.Event()
    threading.Thread(target=_warm_import, args=(warmed,), name="warm-openai", daemon=True).start()
    reader = LineReader()
    await reader.start()

    chat = None
    try:
        pending = [asyncio.ensure_future(s.ready.wait()) for s in servers]
        if pending:
            done, waiting = await asyncio.wait(pending, timeout=_env_float("MCPX_CONNECT_TIMEOUT", 15))
            for future in waiting:
                future.cancel()
        for server in servers:
            if not server.ready.is_set() and not server.failed:
                server.failed = "not ready in time"
                log.error("server %s did not start in time; going on without it", server.name)
        live = [s for s in servers if not s.failed]
        await asyncio.to_thread(warmed.wait, 30)
        from .host import Host
        from .llm import ChatModel

        stream = os.environ.get("MCPX_STREAM", "1").strip().lower() not in ("0", "false", "no", "off")
        chat = ChatModel(os.environ.get("MCPX_MODEL") or "gpt-4o-mini", stream, _env_float("MCPX_LLM_TIMEOUT", 60))
        host = Host(servers, config, chat.complete, os.environ.get("MCPX_SYSTEM_PROMPT") or None)
        await host.discover_interceptors()
        log.info("ready in %.2fs%s: %d/%d server(s), %d tool(s) offered, streaming %s", time.monotonic() - STARTED,
                 " (forked by the fork server)" if FORKED else "", len(live), len(servers), len(host.tools),
                 "on" if stream else "off")
        turn_timeout = _env_float("MCPX_TURN_TIMEOUT", 120)

        while True:
            line = await reader.next()
            if not line:
                break
            if not line.strip():
                continue
            turn_started = time.monotonic()
            try:
                text = user_text(line)
            except ValueError as exc:
                reply: dict[str, Any] = {"role": "assistant", "content": "", "error": f"bad input line: {exc}"}
            else:
                try:
                    reply = await asyncio.wait_for(host.turn(text), turn_timeout)
                except asyncio.TimeoutError:
                    reply = {"role": "assistant", "content": "", "error": f"turn timed out after {turn_timeout:g}s"}
                except Exception as exc:  # noqa: BLE001 - one broken turn must not end the conversation
                    log.exception("turn failed")
                    reply = {"role": "assistant", "content": "", "error": f"{type(exc).__name__}: {exc}"}
            out.write(json.dumps(reply, ensure_ascii=False) + "\n")
            out.flush()
            log.info("turn answered in %.2fs", time.monotonic() - turn_started)
    finally:
        # Close every session (stdio servers get stdin closed, then terminated) within the suite's 5 s.
        await asyncio.gather(*(s.stop(3.0) for s in servers), return_exceptions=True)
        if chat is not None:
            try:
                await asyncio.wait_for(chat.close(), 1.0)
            except Exception:  # noqa: BLE001 - best effort at shutdown
                pass
    return 0


def main() -> int:
    level = getattr(logging, os.environ.get("MCPX_LOG_LEVEL", "INFO").upper(), None)
    logging.basicConfig(level=level if isinstance(level, int) else logging.INFO, stream=sys.stderr,
                        format="host %(levelname)s %(name)s: %(message)s")
    for noisy in ("httpx", "httpx2", "httpcore", "openai", "mcp"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    # stdout is the protocol channel: keep a private handle on it and point fd 1 at stderr, so
    # nothing else (a library's print, a child that inherits fd 1) can write a stray line.
    out = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    async def guarded() -> int:
        task = asyncio.current_task()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            try:
                loop.add_signal_handler(sig, task.cancel)
            except (NotImplementedError, RuntimeError, ValueError):
                pass
        try:
            return await run(out)
        except asyncio.CancelledError:
            log.info("stopped by signal")
            return 0

    try:
        return asyncio.run(guarded())
    except KeyboardInterrupt:
        return 130
    finally:
        out.close()


def forked_main() -> int:
    """main() in a child of the fork server: start-up is timed from the fork."""
    global STARTED, FORKED
    STARTED, FORKED = time.monotonic(), True
    return main()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--prefork"] and len(sys.argv) == 3:
        from .prefork import serve

        sys.exit(serve(sys.argv[2], forked_main))
    sys.exit(main())
