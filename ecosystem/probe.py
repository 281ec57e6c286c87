"""Field survival: does an SDK put the extension fields on the wire, and does its client show them?

    python ecosystem/probe.py server OUT.json -- CMD ARGS...   # what a server sends, raw
    python ecosystem/probe.py client OUT.json -- CMD ARGS...   # what a client program reports seeing
    python ecosystem/probe.py row python|fastmcp|typescript|typescript-v2 OUT_DIR  # one SDK release: both, every variant

`row` runs with the SDK under test installed beside this interpreter (python,
fastmcp) or in NODE_PATH (typescript) and writes OUT_DIR/<sdk>@<version>.json.

`server` speaks newline-delimited JSON-RPC to the server's stdio itself (no
SDK between the wire and the verdict) and records, per extension field,
capability and method, whether the server put it on the wire. `client` runs a
client program (ecosystem/<sdk>/naive_client.*) that connects to
ecosystem/wire_server.py, a server that certainly sends everything, and
prints what the SDK's typed API and its raw request path each returned; the
probe keeps that JSON. Both are recorded first and judged by `judge_*`, small
pure functions, so the table (ecosystem/matrix.py) reads plain booleans.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path

HERE = Path(__file__).resolve().parent
TIMEOUT = 30.0
# 2025-11-25: the first version with the SEP-2133 `capabilities.extensions` map (where the interceptors
# extension is advertised); an SDK that predates it answers with a version of its own.
INIT = {"protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "mcp-ext-conformance-probe", "version": "0.1.0"}}
METHODS = ("middleware/list", "augmentation/list")
INTERCEPTORS_EXTENSION = "io.modelcontextprotocol/interceptors"


class Stdio:
    """A started server and the JSON lines it writes, read on a thread so a silent server cannot hang us."""

    def __init__(self, argv: list[str]):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     start_new_session=True, text=True,
                                     env={**os.environ, "MCPX_MEMORY_STORE": ":memory:"})  # the reference server
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.next_id = 0

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def send(self, message: dict) -> None:
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict | None = None) -> dict:
        """The response (result or error) to one request, or {"failure": why}."""
        self.next_id += 1
        try:
            self.send({"id": self.next_id, "method": method, **({"params": params} if params is not None else {})})
        except OSError as exc:
            return {"failure": f"could not write: {exc}"}
        while True:
            try:
                line = self.lines.get(timeout=TIMEOUT)
            except queue.Empty:
                return {"failure": f"no answer within {TIMEOUT:g} s"}
            if line is None:
                return {"failure": "the server closed its output"}
            try:
                message = json.loads(line)
            except ValueError:
                continue  # log lines on stdout are the server's problem, not this probe's
            if isinstance(message, dict) and message.get("id") == self.next_id:
                return message

    def close(self) -> None:  # not conformance.targets.peerkit.Group: probe.py runs where only the SDK under test is installed
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


def record_server(argv: list[str]) -> dict:
    """Initialize, tools/list and each extension method, as received."""
    server = Stdio(argv)
    try:
        record = {"initialize": server.request("initialize", INIT)}
        server.send({"method": "notifications/initialized"})
        record["tools/list"] = server.request("tools/list", {})
        for method in METHODS:
            record[method] = server.request(method, {})
        return record
    finally:
        server.close()


def _tool(tools: list, key: str) -> dict | None:
    return next((t for t in tools if isinstance(t, dict) and key(t)), None)


def judge_tools(tools: list) -> dict:
    """Which of the tool fields a tools/list result carries."""
    tools = tools if isinstance(tools, list) else []
    flagged = _tool(tools, lambda t: t.get("preprocessor") is True)
    gated = _tool(tools, lambda t: isinstance(t.get("execution"), dict) and "requirements" in t["execution"])
    executions = [sorted(t["execution"]) for t in tools if isinstance(t, dict) and isinstance(t.get("execution"), dict)]
    return {"preprocessor": flagged is not None, "execution.requirements": gated is not None,
            "executionKeys": sorted({k for keys in executions for k in keys}),
            "_meta": any(isinstance(t, dict) and t.get("_meta") for t in tools)}


def judge_capabilities(capabilities) -> dict:
    """Where each extension capability is: "top-level", "experimental", "absent", or "not read"."""
    if capabilities is None:
        return {name: "not read" for name in ("contextMiddleware", "augmentation")}
    capabilities = capabilities if isinstance(capabilities, dict) else {}
    experimental = capabilities.get("experimental") if isinstance(capabilities.get("experimental"), dict) else {}
    return {name: "top-level" if name in capabilities else "experimental" if name in experimental else "absent"
            for name in ("contextMiddleware", "augmentation")}


def judge_extension(capabilities) -> str:
    """Where the interceptors extension is advertised: "extensions" (the SEP-2133 map), "experimental",
    "absent", or "not read"."""
    if capabilities is None:
        return "not read"
    capabilities = capabilities if isinstance(capabilities, dict) else {}
    for where in ("extensions", "experimental"):
        if isinstance(capabilities.get(where), dict) and INTERCEPTORS_EXTENSION in capabilities[where]:
            return where
    return "absent"


def judge_method(answer: dict) -> str:
    if "result" in answer:
        return "answered"
    if "error" in answer:
        return f"error {answer['error'].get('code')}"
    return answer.get("failure", "no answer")


def judge_server(record: dict) -> dict:
    init = record["initialize"]
    tools = record["tools/list"].get("result", {}).get("tools") if "result" in record["tools/list"] else None
    return {"reached": "result" in init,
            "failure": None if "result" in init else judge_method(init),
            "capabilities": judge_capabilities(init.get("result", {}).get("capabilities")),
            "extension": judge_extension(init.get("result", {}).get("capabilities")),
            "tools": judge_tools(tools),
            "methods": {m: judge_method(record[m]) for m in METHODS}}


def record_client(argv: list[str]) -> dict:
    """Run a client program against the wire server; it prints one JSON object of what it saw."""
    wire = [sys.executable, str(HERE / "wire_server.py")]
    try:
        proc = subprocess.run([*argv, json.dumps(wire)], capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return {"failure": "the client program did not finish within 120 s"}
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"failure": f"exit {proc.returncode}: {(proc.stderr or proc.stdout).strip()[-400:]}"}


def judge_client(record: dict) -> dict:
    """Per path (typed, raw): what the client's user saw of the tool fields and capabilities."""
    if "failure" in record:
        return {"failure": record["failure"]}
    out = {}
    for path in ("typed", "raw"):
        seen = record.get(path) or {}
        out[path] = {"tools": judge_tools(seen.get("tools")),
                     "capabilities": judge_capabilities(seen.get("capabilities")),
                     "extension": judge_extension(seen.get("capabilities")),
                     "error": seen.get("error")}
    out["methods"] = {m: (record.get("methods") or {}).get(m, "not tried") for m in METHODS}
    return out


ROWS = {
    # sdk: (package, naive server, best-effort server, client); "{py}" is this interpreter.
    "python": ("mcp", ["{py}", "ecosystem/python/naive_server.py"], ["{py}", "-m", "reference_servers.everything"],
               ["{py}", "ecosystem/python/naive_client.py"]),
    "fastmcp": ("fastmcp", ["{py}", "ecosystem/fastmcp/naive_server.py", "naive"],
                ["{py}", "ecosystem/fastmcp/naive_server.py", "subclass"], ["{py}", "ecosystem/fastmcp/naive_client.py"]),
    "typescript": ("@modelcontextprotocol/sdk", ["node", "ecosystem/typescript/naive_server.cjs", "naive"],
                   ["node", "ecosystem/typescript/naive_server.cjs", "lowlevel"],
                   ["node", "ecosystem/typescript/naive_client.cjs"]),
    "typescript-v2": ("@modelcontextprotocol/server", ["node", "ecosystem/typescript-v2/naive_server.cjs", "naive"],
                      ["node", "ecosystem/typescript-v2/naive_server.cjs", "lowlevel"],
                      ["node", "ecosystem/typescript-v2/naive_client.cjs"]),
}


def installed_version(package: str) -> str:
    if package.startswith("@"):
        for directory in filter(None, os.environ.get("NODE_PATH", "").split(os.pathsep)):
            manifest = Path(directory) / package / "package.json"
            if manifest.exists():
                return json.loads(manifest.read_text())["version"]
        raise SystemExit(f"probe: {package} is not in NODE_PATH")
    from importlib.metadata import version

    return version(package)


def run_row(sdk: str, out_dir: Path) -> dict:
    package, naive, best, client = ROWS[sdk]
    fill = lambda argv: [sys.executable if a == "{py}" else a for a in argv]  # noqa: E731
    os.chdir(HERE.parent)  # the commands are relative to the repository
    row = {"sdk": sdk, "package": package, "version": installed_version(package),
           "server": {"naive": judge_server(record_server(fill(naive))),
                      "best-effort": judge_server(record_server(fill(best)))},
           "client": judge_client(record_client(fill(client)))}
    if sdk == "fastmcp":
        row["mcp"] = installed_version("mcp")
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"{sdk}@{row['version']}.json").write_text(json.dumps(row, indent=2) + "\n", encoding="utf-8")
    return row


def main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[0] == "row" and argv[1] in ROWS:
        row = run_row(argv[1], Path(argv[2]).resolve())
        print(f"probe: {row['package']} {row['version']} -> {Path(argv[2]) / (argv[1] + '@' + row['version'])}.json")
        return 0
    if len(argv) < 4 or argv[0] not in ("server", "client") or argv[2] != "--":
        print(__doc__, file=sys.stderr)
        return 2
    kind, out, command = argv[0], Path(argv[1]), argv[3:]
    verdict = judge_server(record_server(command)) if kind == "server" else judge_client(record_client(command))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(verdict, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(verdict))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
