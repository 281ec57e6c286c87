"""A run that never reached its target: one diagnosis instead of a failure per check.

Rules
-----
- A target that could not be started or reached, or that never answered the first message (`initialize`,
  or a host's first turn), has shown nothing any check could judge: the run says why once and exits 2.
  A target that answered and then misbehaved is judged: its failures are verdicts.
- A gateway that answered but never contacted the upstream the suite started for it (no message in the
  upstream's log on any connection) is not a gateway of that upstream: nothing it answered can be judged as
  forwarded, so that too is one diagnosis, not a verdict per check.
- The diagnosis names the cause, quotes what the target printed (junk on stdout, the end of stderr, both
  made printable and clipped), and gives the likely fix.
- Pure functions of the recordings: no I/O, so each case is tested without a target.
"""

from __future__ import annotations

import json
import re
from urllib.parse import urljoin

from ..targets.base import OLD_SSE, is_host_answer
from ..targets.peerkit import printable

JUNK_LINES = 3  # stdout lines quoted when a target wrote something that is not JSON-RPC
CLIP = 300


def _clip(text: str, limit: int = CLIP) -> str:
    """One printable line: a quoted HTML error page or a multi-line message must not break the block's shape."""
    text = " ".join(printable(text).split())
    return text if len(text) <= limit else text[:limit] + "..."


def _block(headline: str, *details: str) -> str:
    return "\n".join([headline, *(f"  {d}" for d in details if d)])


def _junk(recordings) -> list[str]:
    """The target's stdout lines that are not JSON-RPC: text, and JSON that is no JSON-RPC message."""
    lines: list[str] = []
    for rec in recordings:
        for event in getattr(rec, "wire", ()):
            if event.direction != "in":
                continue
            line = event.raw if event.message is None else (
                json.dumps(event.message, ensure_ascii=False) if _not_jsonrpc(event.message) else None)
            if line is not None and line not in lines:
                lines.append(line)
        if lines:
            break
    return lines[:JUNK_LINES]


def _not_jsonrpc(message) -> bool:
    return isinstance(message, dict) and "jsonrpc" not in message


def _checked_as(role: str) -> str:
    """How the other role is checked: said where a target looks like it (a host given to the server role)."""
    what = {"server": "an MCP server", "host": "a host"}[role]
    return f"{what} is checked with `mcp-ext-conformance {role} --command ...`"


def _stderr(rec) -> str:
    tail = getattr(rec, "stderr_tail", None)
    return f"its stderr ends: {_clip(tail)}" if tail else ""


def diagnose(role: str, recordings: dict, run) -> str | None:
    """Why the run reached no target (the block the user reads), or None when checks can judge it."""
    recs = list(recordings.values())
    if not recs:
        return None
    if role == "host":
        return _host(recs, run)
    unavailable = [r for r in recs if getattr(r, "unavailable", None)]
    if len(unavailable) == len(recs):
        return _unavailable(unavailable[0].unavailable, run)
    connected = [r for r in recs if hasattr(r, "init_failed")]
    if not connected or len(connected) != len(recs) or not all(r.init_failed for r in connected):
        return _never_contacted(recs, run) if role == "gateway" else None
    return _initialize_failed(connected, run)


def _never_contacted(recs, run) -> str | None:
    """The gateway answered on some connection, and no upstream the suite started received a message."""
    through = [r for r in recs if hasattr(r, "upstream")]  # the transparency recordings (not an adapter's replay)
    answered = [r for r in through if not r.unavailable and not r.init_failed]
    if not answered or any(r.upstream for r in through):
        return None
    variable = "MCPX_UPSTREAM_URL" if getattr(answered[0], "upstream_mode", "stdio") == "http" else \
        "MCPX_UPSTREAM_COMMAND"
    return _block(f"the target never contacted the upstream the suite started ({variable} / {{upstream}}); is it a "
                  "gateway, and does it read that variable?",
                  "it answered initialize and tools/list itself, and its upstream received nothing "
                  "(docs/fixture-contract.md#gateway-upstream-contract)")


def _unavailable(reason: str, run) -> str:
    fix = ""
    if reason.startswith("cannot start") and "not an executable file" in reason:
        fix = "make it executable (chmod +x) or start it through its interpreter (python server.py)"
    elif reason.startswith("cannot start"):
        fix = "is the program installed and on PATH? (the command runs without a shell: no pipes or ~)"
    elif reason.startswith("nothing answers at"):
        fix = "is the server running and listening at that URL?"
    elif reason.startswith("TLS certificate verification failed"):
        fix = ("a certificate from a private CA: give its CA certificates with --ca-bundle FILE (PEM); "
               "otherwise check that the URL's host name is the one in the certificate")
    elif reason.startswith("TLS handshake failed"):
        fix = "does the server speak https at that port? (a plain-HTTP server needs an http:// URL)"
    elif "docker" in reason.lower() or "image" in reason.lower():
        fix = "is the Docker daemon running and the image built or pulled? (a first pull can take minutes)"
    return _block(f"the target could not be started or reached: {_clip(reason)}", fix)


AUTH = re.compile(r"HTTP (401|403)\b")


def _initialize_failed(recs, run) -> str | None:
    first = recs[0]
    exchange = first.exchanges.get("initialize")
    failure = (exchange.failure if exchange is not None else None) or ""
    if exchange is not None and exchange.response is not None:
        return None  # it answered (an error, say): a misbehaving target, judged by the checks
    first_message = "server/discover" if getattr(exchange, "method", "") == "server/discover" else "initialize"
    junk = _junk(recs)
    auth = AUTH.search(failure)
    if auth:
        challenge = re.search(r"WWW-Authenticate: (.*)\)$", failure)
        return _block(f"the server wants authorization: HTTP {auth.group(1)} on {first_message}",
                      f"it asks for: {_clip(challenge.group(1))}" if challenge else "",
                      "pass credentials with --header 'Authorization: Bearer ${TOKEN}' (the suite reads TOKEN "
                      "from its environment; values never reach the reports)")
    host_line = next((line for line in junk if _host_line(line)), None)
    if host_line is not None:
        return _block(f"the target never answered {first_message}: its stdout carries a JSON line that is not "
                      f"JSON-RPC but a host's answer to a turn: it may be a host, not an MCP server "
                      f"({_checked_as('host')})",
                      f"stdout: {_clip(host_line, 160)}", _stderr(first))
    if junk:
        return _block(f"the target never answered {first_message}: its stdout carries lines that are not "
                      "JSON-RPC (stdout must carry only JSON-RPC messages; log to stderr instead)",
                      *(f"stdout: {_clip(line, 160)}" for line in junk), _stderr(first))
    over_http = bool(_option(run, "url")) and not _option(run, "command")  # a server the suite did not start
    if "within" in failure and "no response" in failure:
        timeout = getattr(run, "timeout", None)
        return _block(f"the target never answered {first_message} within {timeout:g} s" if timeout else
                      f"the target never answered {first_message}", _stderr(first),
                      "the server took the request and sent nothing back; if it is only slow, try --timeout 60"
                      if over_http else "a first npx/uvx start or image pull can take longer: try --timeout 60")
    status = re.search(r"HTTP (\d{3})\b", failure)
    url = _option(run, "url") or "the URL"
    if status and OLD_SSE in failure:
        return _block(f"the server at {url} speaks {OLD_SSE} (GET opens an event stream, messages are POSTed "
                      "to the path its `endpoint` event names), which this suite does not support",
                      "it checks Streamable HTTP (2025-03-26 and later: every JSON-RPC message POSTed to one "
                      "endpoint, often /mcp): serve that transport too (Python mcp: streamable_http_app(); "
                      "TypeScript: StreamableHTTPServerTransport) and give its URL",
                      f"the server answered: {_clip(failure.split(' (' + OLD_SSE)[0], 200)}")
    location = re.search(r"\(Location: (.*?)\)(?: \(|$)", failure)
    if status and location:
        target = urljoin(url, location.group(1)) if url != "the URL" else location.group(1)
        return _block(f"the target never answered {first_message}: {url} answers HTTP {status.group(1)}, a "
                      f"redirect to {_clip(target, 200)}",
                      f"give the URL it names: --url {_clip(target, 200)} (the suite does not follow redirects: "
                      "it checks the endpoint it is given)")
    if status:
        return _block(f"the target never answered {first_message}: {_clip(failure)}",
                      f"is {url} the server's MCP endpoint? (Streamable HTTP: JSON-RPC "
                      "POSTed to one path, often /mcp)")
    if "closed stdout" in failure or "exit code" in failure:
        code = re.search(r"exit code (-?\d+)", failure)
        said = re.search(r"stderr ends: (.*?)\) during", failure)
        return _block(f"the target exited{' (code ' + code.group(1) + ')' if code else ''} before answering "
                      f"{first_message}", f"its stderr ends: {_clip(said.group(1))}" if said else _stderr(first),
                      "does the command start an MCP server on stdio? (run it by hand: it should wait for input)")
    return _block(f"the target never answered {first_message}: {_clip(failure)}", _stderr(first))


def _host_line(line: str) -> bool:
    try:
        return is_host_answer(json.loads(line))
    except ValueError:
        return False


def _option(run, name: str):
    """An option of the run, or None (the run of another role has no such option)."""
    try:
        return getattr(run, name, None)
    except Exception:  # noqa: BLE001 - a run object that cannot say is one without the option
        return None


def _host(recs, run) -> str | None:
    runs = [r for rec in recs for r in getattr(rec, "runs", {}).values()]
    if not runs or any(r.answered() for r in runs):
        return None
    unavailable = next((r.unavailable for r in runs if r.unavailable), None)
    if unavailable:
        return _unavailable(unavailable, run)
    first = next((r for r in runs if r.fatal and not r.fatal.startswith("not run")), runs[0])
    printed = next((t.line for t in first.turns if t.line), None)
    return _block(f"the command answered no turn of a scenario: it may not be a host ({_checked_as('server')})",
                  "a host reads one JSON turn per line on stdin and prints one JSON answer per line (docs/host.md)",
                  f"first scenario: {_clip(first.fatal or 'no answer')}",
                  f"it printed: {_clip(printed, 160)}" if printed else "",
                  f"its stderr ends: {_clip(first.stderr_tail)}" if first.stderr_tail else "")
