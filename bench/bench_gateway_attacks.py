"""Benchmark: what attacks on the reference gateway's Streamable HTTP front cost the sessions around them.

    python bench/bench_gateway_attacks.py [pii] [sessions] [slow] [nested] [nested-server]
                                                                    (pii, sessions and slow when none is named)

Each mode starts `python -m reference_servers.gateway --http PORT` on loopback in front of the suite's
upstream fixture server (stdio, one process per session) and prints what it saw:

- pii: the gateway runs `pii_redaction`. Session B pings 500 times idle (median, max); then session A
  calls conformance_echo with `--size` characters (default 1 MB) of phone-shaped text with random digits
  (NANP groups: `415 555 0123`), and B pings one after another until A's answer arrives: B's median
  and max under attack, how many pings B completed meanwhile, and how long A's call took. Twice: the
  first attack also pays for starting what the gateway detects in.
- sessions: 200 `initialize` POSTs, never ended: the status codes, and the upstream processes left
  running and their resident memory.
- nested, nested-server: the gateway (one stdio upstream, no plugins), or the reference server
  (`python -m reference_servers.everything --http PORT`). Session B pings 200 times idle; then session A POSTs
  bodies that are expensive to parse, each once, while B pings one after another until A's answer arrives:
  a 4 MiB tools/call whose arguments are nested empty lists (`[[[[]]]],...`: two million lists), the same
  at 99 % of the fronts' limit of values (reference_servers/httpguard.py), and 4 MiB of one text; against
  the server also three `remember` calls of 3.9 MB each and a `RetrieveMemories` of them. For each: A's HTTP status and
  time, B's pings meanwhile (max), and the guarantee's bound, max(50 ms, 20 x B's idle median). With
  `--loop-blocks` (gateway), also the attack's longest event-loop steps in the gateway's own CPU time
  (bench/loop_blocks.py): what one step holds every session up for, whatever the machine's load.
- slow: 25 connections send request headers a byte a second and 25 send complete headers and then a
  body a byte a second: how many the gateway still holds open after 15 s and after 40 s.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

import anyio
import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from conformance.gateway.launch import background, upstream_command  # noqa: E402
from conformance.targets.peerkit import free_port  # noqa: E402

INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}
IDLE_PINGS = 500  # enough to meet the machine's own hiccups too, so idle and attack maxima compare
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def phone_text(size: int, seed: int = 1) -> str:
    """`size` characters of NANP-shaped numbers with random digits, space separated."""
    rng = random.Random(seed)
    parts, total = [], 0
    while total < size:
        part = f"{rng.randint(200, 999)} {rng.randint(200, 999)} {rng.randint(0, 9999):04d} "
        parts.append(part)
        total += len(part)
    return "".join(parts)[:size]


def answer_of(response: httpx.Response) -> dict:
    """The JSON-RPC message of a Streamable HTTP answer (JSON body or the first SSE `data:` line that holds one: a
    server may open the stream with an empty priming event, which carries only an event id)."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        for line in response.text.splitlines():
            if line.startswith("data:") and line[5:].strip():
                return json.loads(line[5:])
        raise ValueError("no data line in the event stream")
    return response.json()


class Session:
    def __init__(self, client: httpx.AsyncClient, url: str):
        self.client, self.url, self.headers, self.ids = client, url, dict(ACCEPT), 0

    async def open(self) -> "Session":
        opened = await self.client.post(self.url, json={"jsonrpc": "2.0", "id": 0, "method": "initialize",
                                                        "params": INIT}, headers=self.headers)
        opened.raise_for_status()
        self.headers.update({"mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"})
        await self.client.post(self.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                               headers=self.headers)
        return self

    async def request(self, method: str, params: dict | None = None) -> dict:
        self.ids += 1
        message = {"jsonrpc": "2.0", "id": self.ids, "method": method, **({"params": params} if params else {})}
        return answer_of(await self.client.post(self.url, json=message, headers=self.headers))

    async def ping_seconds(self) -> float:
        started = time.perf_counter()
        await self.request("ping")
        return time.perf_counter() - started


def gateway_argv(port: int, config: Path | None, *flags: str) -> list[str]:
    return [sys.executable, "-m", "reference_servers.gateway", "--http", str(port),
            *(["--config", str(config)] if config else []), *flags]


def processes_with(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if marker in Path(f"/proc/{entry}/cmdline").read_bytes().decode(errors="replace"):
                    found.append(int(entry))
            except OSError:
                pass
    return found


def resident_mb(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


async def bench_pii(tmp: Path, size: int) -> None:
    config = tmp / "pii.json"
    config.write_text(json.dumps({"upstreams": {"up": {"command": upstream_command(tmp / "up.jsonl")}},
                                  "plugins": [{"plugin": "pii_redaction", "name": "pii"}]}))
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    async with background(gateway_argv(port, config, "--max-body", str(4 * size + 65536)), {}, url):
        async with httpx.AsyncClient(timeout=300) as client:
            other = await Session(client, url).open()
            idle = [await other.ping_seconds() for _ in range(IDLE_PINGS)]
            attacker = await Session(client, url).open()
            text = phone_text(size)
            rounds = []
            for _ in range(2):  # the first attack also starts the gateway's detection process
                done, attack = anyio.Event(), {}

                async def attack_once() -> None:
                    started = time.perf_counter()
                    answer = await attacker.request("tools/call", {"name": "conformance_echo",
                                                                   "arguments": {"text": text}})
                    attack["seconds"] = time.perf_counter() - started
                    attack["outcome"] = "error: " + answer["error"]["message"][:120] if "error" in answer else "result"
                    done.set()

                under, slow = [], []
                async with anyio.create_task_group() as tg:
                    begun = time.perf_counter()
                    tg.start_soon(attack_once)
                    await anyio.sleep(0.05)
                    while not done.is_set():
                        under.append(await other.ping_seconds())
                        if under[-1] > 0.1:
                            slow.append(f"{time.perf_counter() - begun:.2f} s: {ms(under[-1])}")
                rounds.append((attack, under, slow))
    print(f"pii: idle ping median {ms(statistics.median(idle))}, max {ms(max(idle))}")
    for number, (attack, under, slow) in enumerate(rounds, 1):
        print(f"pii: attack {number} ({size} chars of phone-shaped text) took {attack['seconds']:.2f} s "
              f"({attack['outcome']})")
        print(f"pii: under attack {number}: {len(under)} pings, median {ms(statistics.median(under))}, "
              f"max {ms(max(under))}")
        if slow:
            print(f"pii: pings over 100 ms (when they ended, after the attack began): {', '.join(slow)}")


try:  # just under the fronts' limit of values in one message (an older tree has none: its default)
    from reference_servers.httpguard import MAX_VALUES as _LIMIT
except ImportError:
    _LIMIT = 20_000
ACCEPTED_VALUES = _LIMIT * 99 // 100


def nested_body(size: int) -> bytes:
    """A tools/call of about `size` bytes whose arguments are nested empty lists, 4 levels deep."""
    head, tail, unit = '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"conformance_echo",' \
        '"arguments":{"text":"x","a":[', "]}}}", "[[[[]]]],"
    return (head + unit * max(1, (size - len(head) - len(tail)) // len(unit)))[:-1].encode() + tail.encode()


def text_body(size: int) -> bytes:
    text = ("lorem, ipsum: [dolor] {sit} amet " * (size // 34 + 1))[:size - 200]
    return json.dumps({"jsonrpc": "2.0", "id": 8, "method": "tools/call",
                       "params": {"name": "conformance_echo", "arguments": {"text": text}}}).encode()


def loop_blocks(path: Path, since: float, until: float, top: int = 3) -> str:
    """The longest event-loop steps bench/loop_blocks.py logged between two times, in CPU time."""
    steps = []
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            when, cpu, wall, what = line.split(" ", 3)
            if since <= float(when) <= until:
                steps.append((float(cpu), float(wall), what))
    steps.sort(reverse=True)
    shown = "; ".join(f"{cpu:.0f} ms ({wall:.0f} ms wall) {what}" for cpu, wall, what in steps[:top])
    return f"{len(steps)} loop steps over the threshold, longest in CPU time: {shown or 'none'}"


async def bench_nested(tmp: Path, target: str, blocks: Path | None = None) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    if target == "gateway":
        argv = gateway_argv(port, None)
        env = {"MCPX_UPSTREAM_COMMAND": upstream_command(tmp / "up.jsonl")}
        if blocks is not None:  # the same gateway, each event-loop step timed (the code found from the cwd)
            argv[1:3] = [str(ROOT / "bench" / "loop_blocks.py"), "reference_servers.gateway"]
            env["MCPX_LOOP_BLOCKS"] = str(blocks)
    else:
        argv, env = [sys.executable, "-m", "reference_servers.everything", "--http", str(port)], {}
    attacks = [("4 MiB of nested lists", nested_body(4 * 1024 * 1024 - 1024)),
               # each `[[[[]]]],` is five of the values the fronts count: four lists and a comma
               (f"{ACCEPTED_VALUES:,} values of nested lists", nested_body(ACCEPTED_VALUES // 5 * 9 + 200)),
               ("4 MiB of one text", text_body(4 * 1024 * 1024 - 1024))]
    if target == "server":  # the memory tools: three 3.9 MB memories, then a retrieval of them
        remember = json.dumps({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {
            "name": "remember", "arguments": {"text": "window seat please " * (3_900_000 // 19)}}}).encode()
        retrieve = json.dumps({"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": {
            "name": "RetrieveMemories", "arguments": {"query": "window seat", "limit": 20}}}).encode()
        attacks += [(f"remember {n} of 3.9 MB", remember) for n in (1, 2, 3)] + [("RetrieveMemories", retrieve)]
    async with background(argv, env, url):
        pings = tmp / f"pings-{target}.txt"
        # Session B pings from a process of its own: in this one, reading A's 4 MiB answer (httpx, then its JSON)
        # would hold B's pings up on this side, and that would be counted against the target.
        pinger = subprocess.Popen([sys.executable, __file__, "--pinger", url, str(pings)], stdin=subprocess.PIPE)
        try:
            while len(read_pings(pings)) < 200:
                if pinger.poll() is not None:
                    raise SystemExit(f"nested ({target}): the pinging session ended (exit {pinger.returncode})")
                await anyio.sleep(0.05)
            idle = [seconds for _, seconds in read_pings(pings)[:200]]
            bound = max(0.05, 20 * statistics.median(idle))
            print(f"nested ({target}): idle ping median {ms(statistics.median(idle))}, max {ms(max(idle))}; "
                  f"bound max(50 ms, 20 x median) = {ms(bound)} (session B pings from its own process)")
            async with httpx.AsyncClient(timeout=300) as client:
                attacker = await Session(client, url).open()
                for label, body in attacks:
                    since, started = time.time(), time.monotonic()
                    response = await client.post(url, content=body, headers=attacker.headers)
                    ended = time.monotonic()
                    status = f"{response.status_code}"
                    try:
                        answer = answer_of(response)
                        status += ", " + (f"error {answer['error']['code']}" if "error" in answer else
                                          f"isError, {len(response.content)} bytes" if answer["result"].get("isError")
                                          else f"result, {len(response.content)} bytes")
                    except (ValueError, KeyError, AttributeError):
                        pass
                    await anyio.sleep(0.1)  # the pings in flight when the answer came
                    under = [seconds for at, seconds in read_pings(pings) if at < ended and at + seconds > started]
                    worst = max(under) if under else 0.0
                    print(f"nested ({target}): {label} ({len(body)} bytes): HTTP {status} in {ended - started:.2f} s; "
                          f"{len(under)} pings meanwhile, max {ms(worst)} "
                          f"({'within' if worst <= bound else 'OVER'} the bound)")
                    if blocks is not None:
                        await anyio.sleep(0.1)  # the last steps of the answer
                        print(f"nested ({target}):   {loop_blocks(blocks, since, time.time())}")
        finally:
            pinger.stdin.close()
            pinger.wait(timeout=10)


def read_pings(path: Path) -> list[tuple[float, float]]:
    """(when it was sent, on the monotonic clock every process shares; its round trip), of every ping so far: the
    complete lines only (the pinger may be writing the last one)."""
    text = path.read_text() if path.exists() else ""
    return [(float(a), float(b)) for a, b in (line.split() for line in text[:text.rfind("\n") + 1].splitlines())]


async def ping_forever(url: str, out: Path) -> None:
    """--pinger: one session pinging `url` one ping after another until stdin closes, each ping a line of `out`."""
    stop = anyio.Event()

    async def watch_stdin() -> None:
        await anyio.to_thread.run_sync(sys.stdin.read)
        stop.set()

    async with httpx.AsyncClient(timeout=300) as client, anyio.create_task_group() as tg:
        session = await Session(client, url).open()
        tg.start_soon(watch_stdin)
        with out.open("w", buffering=1) as handle:
            while not stop.is_set():
                at = time.monotonic()
                seconds = await session.ping_seconds()
                handle.write(f"{at:.6f} {seconds:.6f}\n")
        tg.cancel_scope.cancel()


async def bench_sessions(tmp: Path, count: int = 200) -> None:
    marker = f"gw-{uuid.uuid4().hex}"
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    env = {"MCPX_UPSTREAM_COMMAND": upstream_command(tmp / "up.jsonl", "--tag", marker)}
    statuses: dict[int, int] = {}
    async with background(gateway_argv(port, None), env, url):
        async with httpx.AsyncClient(timeout=60) as client:
            for i in range(count):
                answer = await client.post(url, json={"jsonrpc": "2.0", "id": i, "method": "initialize",
                                                      "params": INIT}, headers=ACCEPT)
                statuses[answer.status_code] = statuses.get(answer.status_code, 0) + 1
            await anyio.sleep(1.0)
            pids = processes_with(marker)
            print(f"sessions: {count} initialize POSTs -> statuses {dict(sorted(statuses.items()))}; "
                  f"{len(pids)} upstream processes running, {resident_mb(pids):.0f} MB resident")


def peer_closed(sock: socket.socket) -> bool:
    sock.setblocking(False)
    try:
        data = sock.recv(65536)
    except BlockingIOError:
        return False
    except OSError:
        return True
    return data == b"" or data.startswith(b"HTTP/1.1 4") or data.startswith(b"HTTP/1.1 5")


async def bench_slow(tmp: Path, each: int = 25) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    env = {"MCPX_UPSTREAM_COMMAND": upstream_command(tmp / "up.jsonl")}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT}).encode()
    head = (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: application/json, text/event-stream\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode()
    async with background(gateway_argv(port, None), env, url):
        slow_head = [socket.create_connection(("127.0.0.1", port)) for _ in range(each)]
        slow_body = [socket.create_connection(("127.0.0.1", port)) for _ in range(each)]
        for sock in slow_body:
            sock.sendall(head)
        closed_head: set[int] = set()
        closed_body: set[int] = set()
        started = time.monotonic()
        checkpoints = {15: None, 40: None}
        tick = 0
        while time.monotonic() - started < max(checkpoints) + 0.5:
            for group, closed, data in ((slow_head, closed_head, head), (slow_body, closed_body, body)):
                for index, sock in enumerate(group):
                    if index in closed:
                        continue
                    if peer_closed(sock):
                        closed.add(index)
                        continue
                    try:
                        sock.send(data[tick % len(data):tick % len(data) + 1])
                    except OSError:
                        closed.add(index)
            tick += 1
            elapsed = time.monotonic() - started
            for mark in checkpoints:
                if checkpoints[mark] is None and elapsed >= mark:
                    checkpoints[mark] = (each - len(closed_head), each - len(closed_body))
            await anyio.sleep(1.0)
        for sock in slow_head + slow_body:
            sock.close()
    for mark, (heads, bodies) in checkpoints.items():
        print(f"slow: after {mark} s, open: {heads}/{each} slow-header connections, {bodies}/{each} slow-body connections")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("modes", nargs="*", metavar="MODE",
                        help="pii, sessions, slow, nested or nested-server (default: the first three)")
    parser.add_argument("--size", type=int, default=1_000_000, help="pii: characters of the attack text")
    parser.add_argument("--loop-blocks", action="store_true",
                        help="nested: run the gateway under bench/loop_blocks.py and print, for each attack, its "
                             "longest event-loop steps in CPU time (a figure the machine's load moves little); "
                             "the gateway's code is the current directory's, so running this from another "
                             "checkout measures that checkout")
    parser.add_argument("--pinger", nargs=2, metavar=("URL", "FILE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.pinger:
        return anyio.run(ping_forever, args.pinger[0], Path(args.pinger[1]))
    modes = args.modes or ["pii", "sessions", "slow"]
    unknown = sorted(set(modes) - {"pii", "sessions", "slow", "nested", "nested-server"})
    if unknown:
        parser.error(f"unknown mode(s): {', '.join(unknown)}")

    async def run() -> None:
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            for mode in modes:
                if mode == "pii":
                    await bench_pii(Path(tmp), args.size)
                elif mode in ("nested", "nested-server"):
                    blocks = Path(tmp) / "loop-blocks.txt" if args.loop_blocks else None
                    await bench_nested(Path(tmp), "gateway" if mode == "nested" else "server", blocks)
                elif mode == "sessions":
                    await bench_sessions(Path(tmp))
                else:
                    await bench_slow(Path(tmp))

    anyio.run(run)


if __name__ == "__main__":
    main()
