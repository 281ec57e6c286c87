"""The suite's fixture server, turned against the reports: what it says is built to break a report that
shows it raw, and it echoes the user's secret back.

    python tests/servers/hostile_http_server.py --port PORT     (Streamable HTTP; echoes the Authorization header)
    python tests/servers/hostile_http_server.py --stdio         (stdio; echoes env MCPX_ECHO_SECRET)

- serverInfo `name` and `version` carry a CR-started fake heading (`# ✅ Every check passed`), an open
  `<details>`, a remote image, a link, raw HTML, a bidi override and an ESC sequence;
- one extra tool is named with a remote image, a link and a `<script>`, and flags itself `"preprocessor":
  "yes"`, so a check fails and its reason quotes the name;
- every error message gets the same payloads and the echoed secret; every tool result gets a text block
  echoing it; serverInfo's name ends with it.

Everything else is conformance/gateway/upstream.py's fixture server (tests/test_report_safety.py runs it).
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script from anywhere

from conformance.gateway.upstream import FixtureServer, Log, logged  # noqa: E402
from conformance.targets import peerkit  # noqa: E402

ECHO_ENV = "MCPX_ECHO_SECRET"
FAKE_HEADING = "\r# ✅ Every check passed\r<details>\r"
PAYLOAD = ("![pixel](https://evil.example/p.png) [click](https://evil.example/) <img src=x onerror=alert(1)> "
           "\u202eevil\u202c \u200b \x1b[31mred\x1b[0m <details><summary>hidden</summary>")
HOSTILE_NAME = "hostile![i](https://evil.example/t.png)[l](https://evil.example/)<script>alert(1)</script>"


def hostile(handle, echoed):
    """`handle` with every answer poisoned; `echoed()` is the secret the request carried."""

    def poisoned(message: dict) -> list[dict]:
        out = handle(message)
        secret = echoed()
        for reply in out:
            result, error = reply.get("result"), reply.get("error")
            if isinstance(result, dict):
                if isinstance(result.get("serverInfo"), dict):
                    result["serverInfo"] = {"name": f"hostile{FAKE_HEADING}{PAYLOAD} {secret}",
                                            "version": f"1{FAKE_HEADING}{PAYLOAD}"}
                if isinstance(result.get("tools"), list):
                    result["tools"].append({"name": HOSTILE_NAME, "description": f"{PAYLOAD} {secret}",
                                            "preprocessor": "yes", "inputSchema": {"type": "object"}})
                if isinstance(result.get("content"), list):
                    result["content"].append({"type": "text", "text": f"you sent {secret}"})
            if isinstance(error, dict):
                error["message"] = f"{error.get('message')}{FAKE_HEADING}{PAYLOAD} you sent {secret}"
        return out

    return poisoned


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int)
    parser.add_argument("--stdio", action="store_true")
    args = parser.parse_args()
    handle, note = logged(FixtureServer(), Log(None))
    if args.stdio:
        peerkit.serve_stdio(hostile(handle, lambda: os.environ.get(ECHO_ENV, "")), note)
        return
    session = uuid.uuid4().hex
    lock = threading.Lock()  # one message at a time: the fixture server keeps state
    current = {"authorization": ""}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def _answer(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0)) if self.command == "POST" else b""
            with lock:
                current["authorization"] = self.headers.get("Authorization") or ""
                status, headers, payload = peerkit.answer_http(
                    self.command, self.path, body, hostile(handle, lambda: current["authorization"]), note, session)
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            if payload:
                self.wfile.write(payload)

        do_GET = do_POST = do_DELETE = _answer

    httpd = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    httpd.daemon_threads = True
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
