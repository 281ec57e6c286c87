"""The SDK matrix: which profiles a server built on each `mcp` release can carry.

    python -m ecosystem.matrix run OUT      # in an environment with one mcp release installed
    python -m ecosystem.matrix table OUT    # (re)write OUT/../sdk-matrix.md from every run found

`run` checks, with the installed release, the reference server over stdio and
over Streamable HTTP (on 2.x also in the 2026-07-28 connection mode), and the naive server (tests/servers/naive_sdk_server.py:
extension fields put straight on the SDK's Tool, no adapter) over stdio, each
with every server profile it offers claimed. Results go to OUT/<release>/<target>/.
`nox -s matrix` runs it once per release of the matrix, then writes the table.

    python -m ecosystem.matrix survival     # (re)write reports/ecosystem/sdk-survival.md and
                                                    # conformance/server/sdk-drops.json (what the suite ships)

The field-survival table: per SDK release (Python `mcp`, FastMCP, the
TypeScript SDK), whether a server built on it puts the extension fields,
capabilities and methods on the wire (naive use and best-effort use) and
whether a client built on it shows them (typed API and raw request), from the
rows ecosystem/probe.py wrote into reports/ecosystem/sdk-survival/; then what
an implementer on that release must do.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

from conformance.targets.peerkit import free_port, spawn

ROOT = Path(__file__).resolve().parents[1]
ALL = ["preprocessor-tools", "execution-requirements", "context-middleware", "augmentation"]
TARGETS = {
    "reference-stdio": ALL,
    "reference-http": ALL,
    "reference-stdio-2026": ALL,  # the 2026-07-28 connection mode (mcp 2.x only)
    "reference-http-2026": ALL,
    "naive-stdio": ["preprocessor-tools", "execution-requirements"],
}
MODERN = ["--connection-mode", "2026-07-28"]


def cli(out: Path, target: list[str], profiles: list[str]) -> int:
    argv = [sys.executable, "-m", "conformance", "server", *target, "--report-dir", str(out),
            "--env", "MCPX_MEMORY_STORE=:memory:", "--allow-nothing-tested"]  # a survey: claiming nothing is a finding
    for profile in profiles:
        argv += ["--profile", profile]
    return subprocess.call(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           env={**os.environ, "MCPX_MEMORY_STORE": ":memory:"})


def run(out_root: Path) -> None:
    release = version("mcp")
    base = out_root / release
    python = sys.executable
    modern = int(release.split(".")[0]) >= 2
    reference = ["--command", f"{python} -m reference_servers.everything"]
    cli(base / "reference-stdio", reference, ALL)
    if modern:
        cli(base / "reference-stdio-2026", reference + MODERN, ALL)
    port = free_port()
    with spawn([python, "-m", "reference_servers.everything", "--http", str(port)], cwd=ROOT,
               env={**os.environ, "MCPX_MEMORY_STORE": ":memory:"}) as server:
        if server.wait_listening(port):
            url = ["--url", f"http://127.0.0.1:{port}/mcp"]
            cli(base / "reference-http", url, ALL)
            if modern:
                cli(base / "reference-http-2026", url + MODERN, ALL)
    naive = ROOT / "tests" / "servers" / "naive_sdk_server.py"
    cli(base / "naive-stdio", ["--command", f"{python} {naive}"], TARGETS["naive-stdio"])


def cell(doc: dict | None, profile: str) -> str:
    if doc is None:
        return "—"
    checks = [c for c in doc["checks"] if c["profile"] == profile]
    failed = sorted(c["slug"] for c in checks if c["outcome"] in ("fail", "stale"))
    if failed:
        return f"❌ {len(failed)} failed ({', '.join(failed[:3])}{'…' if len(failed) > 3 else ''})"
    warned = sum(c["outcome"] == "warn" for c in checks)
    passed = sum(c["outcome"] in ("pass", "info") for c in checks)
    skipped = sum(c["outcome"] == "skip" for c in checks)
    return (f"✅ {passed} passed" + (f", {warned} warn" if warned else "")
            + (f", {skipped} n/a" if skipped else ""))


def table(out_root: Path) -> str:
    def key(release: str):
        return tuple(int(p) if p.isdigit() else p for p in release.split("."))

    releases = sorted((p.name for p in out_root.iterdir() if p.is_dir()), key=key) if out_root.exists() else []
    lines = ["# SDK matrix", "",
             "Server-role checks per `mcp` release, target and profile (each profile claimed with `--profile`).",
             "`naive` is tests/servers/naive_sdk_server.py: extension fields put straight on the SDK's `Tool`, "
             "no adapter. Regenerate with `nox -s matrix`.", ""]
    for target, profiles in TARGETS.items():
        lines += [f"## {target}", "", "| mcp | " + " | ".join(profiles) + " |",
                  "|---|" + "---|" * len(profiles)]
        for release in releases:
            path = out_root / release / target / "results.json"
            doc = json.loads(path.read_text()) if path.exists() else None
            lines.append(f"| {release} | " + " | ".join(cell(doc, p) for p in profiles) + " |")
        lines.append("")
    if survival_rows():
        lines += ["", survival_table().replace("# Field survival", "# SDK field survival", 1)]
    return "\n".join(lines)


SURVIVAL_DIR = ROOT / "reports" / "ecosystem" / "sdk-survival"
SDK_ORDER = {"python": 0, "fastmcp": 1, "typescript": 2, "typescript-v2": 3}
SDK_TITLE = {"python": "Python `mcp`", "fastmcp": "FastMCP", "typescript": "TypeScript SDK",
             "typescript-v2": "TypeScript SDK v2 (`@modelcontextprotocol/server`, `/client`)"}
# How each SDK's user gets past what the measurements show missing (checked by ecosystem/probe.py's runs).
SERVER_SEAM = {
    "python": "put them back on the result in a `Server.middleware` entry (reference_servers/sdk/_v2.py)",
    "fastmcp": "a `FunctionTool` subclass whose `to_mcp_tool` rebuilds the SDK's Tool with them works while mcp "
               "1.x is underneath; on mcp 2.x nothing in FastMCP keeps them: serve `tools/list` below it",
    "typescript": "use the low-level `Server` and return plain objects from a `tools/list` handler",
    "typescript-v2": "use the low-level `Server` and return plain objects from a `tools/list` handler",
}
METHOD_SEAM = {
    "python": "unknown methods are refused before any handler; serve them in a `Server.middleware` entry "
              "(reference_servers/sdk/_v2.py)",
    "python-1": "the session checks requests against a closed union and answers unknown methods -32602 before "
                "any handler; serve them under the session, on its message streams (reference_servers/sdk/_v1.py)",
    "fastmcp": "FastMCP has no custom-method API: serve them below it",
    "typescript": "`setRequestHandler` with a zod schema of the method's own",
    "typescript-v2": "`setRequestHandler(method, {params: schema}, handler)`",
}
RAW_CLIENT = {
    "python": "`session.send_request(FreeRequest, RawResult)` (a result model with `extra=\"allow\"`)",
    "fastmcp": "`client.session.send_request(FreeRequest, RawResult)` on the `mcp` session underneath",
    "typescript": "`client.request({method}, z.object({}).passthrough())`; capabilities from the transport's "
                  "initialize message",
    "typescript-v2": "`client.request({method}, z.looseObject({}))`; capabilities from the transport's initialize "
                     "message",
}
# Where the SEP-2133 `capabilities.extensions` map (which holds the interceptors extension) ends up.
EXTENSION_CELL = {"extensions": "✅ in `extensions`", "experimental": "⚠️ under `experimental`",
                  "absent": "❌ absent", "not read": "not read"}
EXTENSION_SEAM = {
    "python": "put it back on the initialize result in the same `Server.middleware` entry "
              "(examples/python-mcp2)",
    "python-1": "put it in the initialize result as the reference server's 1.x adapter does "
                "(reference_servers/sdk/_v1.py)",
    "fastmcp": "put it back on the initialize result below FastMCP (examples/fastmcp4)",
}


def _key(release: str):
    return tuple(int(p) if p.isdigit() else p for p in release.replace("-", ".").split("."))


def survival_rows(directory: Path = SURVIVAL_DIR) -> list[dict]:
    rows = [json.loads(p.read_text()) for p in sorted(directory.glob("*.json"))] if directory.exists() else []
    return sorted(rows, key=lambda r: (SDK_ORDER.get(r["sdk"], 9), _key(r["version"])))


def _yes(flag: bool) -> str:
    return "✅" if flag else "❌"


def _fields(tools: dict) -> str:
    execution = ",".join(tools["executionKeys"]) or "—"
    return (f"{_yes(tools['preprocessor'])} preprocessor · {_yes(tools['execution.requirements'])} requirements "
            f"· execution {{{execution}}} · {_yes(tools['_meta'])} _meta")


def _caps(caps: dict) -> str:
    where = set(caps.values())
    if where == {"top-level"}:
        return "✅ top-level"
    if where == {"experimental"}:
        return "⚠️ under `experimental`"
    if where == {"not read"}:
        return "not read"
    return "❌ " + ", ".join(f"{k} {v}" for k, v in caps.items())


def _methods(methods: dict) -> str:
    states = set(methods.values())
    return "✅ answered" if states == {"answered"} else "❌ " + "; ".join(sorted(states))


def _extension(where: str | None) -> str:
    return EXTENSION_CELL.get(where or "", "not measured")


def _release(row: dict) -> str:
    return f"{row['version']}" + (f" (mcp {row['mcp']})" if row.get("mcp") else "")


def must_do(row: dict) -> str:
    """What an implementer on this release must do, from what the row measured."""
    sdk, naive, best, client = row["sdk"], row["server"]["naive"], row["server"]["best-effort"], row["client"]
    steps = []
    if naive["tools"]["preprocessor"] and naive["tools"]["execution.requirements"]:
        steps.append("Server: fields put on the SDK's tool definition reach the wire.")
    elif best["tools"]["preprocessor"] and best["tools"]["execution.requirements"]:
        steps.append(f"Server: the tool definition drops the fields; {SERVER_SEAM[sdk]}.")
    else:
        steps.append(f"Server: neither use put both fields on the wire; {SERVER_SEAM[sdk]}.")
    if set(naive["capabilities"].values()) != {"top-level"}:
        fix = "put them top-level as the best-effort server does" \
            if set(best["capabilities"].values()) == {"top-level"} else "patch the initialize result below the SDK"
        steps.append(f"Capabilities: {_caps(naive['capabilities'])}; {fix}.")
    if naive.get("extension") not in ("extensions", None):
        major = f"{sdk}-{row['version'].split('.')[0]}"
        seam = EXTENSION_SEAM.get(major, EXTENSION_SEAM.get(sdk, "pass it in the capabilities the low-level "
                                                                  "`Server` is given"))
        steps.append(f"The `extensions` capability (interceptors): {_extension(naive['extension'])}; {seam}.")
    if set(naive["methods"].values()) != {"answered"}:
        major = f"{sdk}-{row['version'].split('.')[0]}"
        steps.append(f"Methods: {METHOD_SEAM.get(major, METHOD_SEAM[sdk])}.")
    if "failure" in client:
        steps.append(f"Client: not measured ({client['failure']}).")
    else:
        typed = client["typed"]["tools"]
        if typed["preprocessor"] and typed["execution.requirements"] \
                and set(client["typed"]["capabilities"].values()) == {"top-level"}:
            steps.append("Client: the typed API shows fields and capabilities.")
        else:
            meta = " `_meta` survives the typed API." if typed["_meta"] else ""
            steps.append(f"Client: the typed API drops them; read `tools/list` and `initialize` raw: "
                         f"{RAW_CLIENT[sdk]}.{meta}")
        if client["typed"].get("extension") not in ("extensions", None):
            steps.append(f"The `extensions` capability: {_extension(client['typed']['extension'])} in the typed API; "
                         "read the initialize result raw.")
        if set(client["methods"].values()) == {"answered"}:
            steps.append("Extension methods: the raw request path sends them.")
    return " ".join(steps)


def survival_table(directory: Path = SURVIVAL_DIR) -> str:
    rows = survival_rows(directory)
    lines = ["# Field survival per SDK release", "",
             "Measured by ecosystem/probe.py with the servers and clients in ecosystem/, written as each SDK's docs "
             "teach. A server is judged on its raw stdio output (no SDK between wire and verdict); a client talks to "
             "ecosystem/wire_server.py, which sends every field, and reports what its typed API and its raw request "
             "path returned. Regenerate with `nox -s matrix matrix_fastmcp matrix_typescript matrix_typescript_v2`. "
             "Every probe initializes with protocol version 2025-11-25, the first with the SEP-2133 "
             "`capabilities.extensions` map, where the interceptors extension is advertised.", "",
             "Naive server: Python — the SDK's `Tool` with the fields as keyword arguments, `experimental_capabilities`; "
             "FastMCP — `@mcp.tool(meta=…)`, `experimental_capabilities`; TypeScript — `McpServer.registerTool` with "
             "the fields in its config, capabilities in the constructor (the v2 packages alike). The interceptors extension goes in the SDK's `extensions` argument where it has one (Python `mcp` 2.x), else in the capabilities given (TypeScript) or under `experimental` (FastMCP, `mcp` 1.x). Best-effort server: Python — the reference "
             "server's SDK adapter (reference_servers/sdk/; it sends no `_meta`); FastMCP — a `FunctionTool` subclass whose `to_mcp_tool` "
             "adds the fields; TypeScript — the low-level `Server` with plain-object handlers and `setRequestHandler` "
             "for the extension methods.", "",
             "## Server: what reaches the wire", "",
             "| SDK | release | naive: tool fields | naive: capabilities | naive: `extensions` | naive: methods "
             "| best-effort: tool fields | best-effort: capabilities | best-effort: `extensions` | best-effort: methods |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        cells = []
        for use in ("naive", "best-effort"):
            server = row["server"][use]
            if not server["reached"]:
                cells += [f"❌ unreachable: {server['failure']}", "", "", ""]
                continue
            cells += [_fields(server["tools"]), _caps(server["capabilities"]), _extension(server.get("extension")),
                      _methods(server["methods"])]
        lines.append(f"| {SDK_TITLE[row['sdk']]} | {_release(row)} | " + " | ".join(cells) + " |")
    lines += ["", "## Client: what its user sees", "",
              "| SDK | release | typed: tool fields | typed: capabilities | typed: `extensions` | raw: tool fields "
              "| raw: capabilities | raw: `extensions` | raw: extension methods |", "|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        client = row["client"]
        if "failure" in client:
            lines.append(f"| {SDK_TITLE[row['sdk']]} | {_release(row)} | ❌ {client['failure']} | | | | | | |")
            continue
        lines.append(f"| {SDK_TITLE[row['sdk']]} | {_release(row)} | {_fields(client['typed']['tools'])} | "
                     f"{_caps(client['typed']['capabilities'])} | {_extension(client['typed'].get('extension'))} | "
                     f"{_fields(client['raw']['tools'])} | {_caps(client['raw']['capabilities'])} | "
                     f"{_extension(client['raw'].get('extension'))} | {_methods(client['methods'])} |")
    lines += ["", "## What an implementer must do", ""]
    lines += [f"- **{SDK_TITLE[row['sdk']]} {_release(row)}**: {must_do(row)}" for row in rows]
    return "\n".join(lines) + "\n"


# The example to copy per SDK (examples/), named in the reasons of a run on that SDK (conformance/server/sdk.py).
EXAMPLE = {"python": "examples/python-mcp2", "fastmcp": "examples/fastmcp4", "typescript": "examples/typescript-sdk1",
           "typescript-v2": "examples/typescript-v2"}
SDK_DROPS = ROOT / "conformance" / "server" / "sdk-drops.json"


def drops(row: dict) -> dict[str, str]:
    """What a server written the SDK's natural way loses on the wire, by field, with how (a short phrase)."""
    naive = row["server"]["naive"]
    if not naive["reached"]:
        return {}
    out = {}
    for field in ("preprocessor", "execution.requirements"):
        if not naive["tools"][field]:
            out[field] = "drops it from its Tool type"
    for capability, where in naive["capabilities"].items():
        if where != "top-level":
            out[f"capabilities.{capability}"] = ("puts it under capabilities.experimental" if where == "experimental"
                                                 else "leaves it out of the initialize result")
    if naive.get("extension") not in ("extensions", None):
        out["capabilities.extensions"] = ("has no place for the extensions map (it goes under experimental)"
                                          if naive["extension"] == "experimental"
                                          else "drops the extensions map from the initialize result")
    answers = set(naive["methods"].values())
    if answers != {"answered"}:
        out["methods"] = f"refuses methods it does not know before any handler ({', '.join(sorted(answers))})"
    return out


def sdk_drops(directory: Path = SURVIVAL_DIR) -> list[dict]:
    """The measured rows as the suite ships them, for reasons that name the SDK as the cause."""
    return [{"sdk": row["sdk"], "package": row["package"], "version": row["version"], "title": SDK_TITLE[row["sdk"]],
             "example": EXAMPLE[row["sdk"]], "drops": drops(row)} for row in survival_rows(directory)]


def write_survival(directory: Path = SURVIVAL_DIR) -> str:
    text = survival_table(directory)
    (directory.parent / "sdk-survival.md").write_text(text, encoding="utf-8")
    SDK_DROPS.write_text(json.dumps(sdk_drops(directory), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return text


def main(argv: list[str]) -> int:
    if argv == ["survival"]:
        print(write_survival())
        return 0
    if len(argv) != 2 or argv[0] not in ("run", "table"):
        print(__doc__, file=sys.stderr)
        return 2
    out_root = Path(argv[1])
    if argv[0] == "run":
        run(out_root)
    text = table(out_root)
    (out_root.parent / "sdk-matrix.md").write_text(text + "\n", encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
