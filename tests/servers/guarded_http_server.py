"""The suite's fixture server over Streamable HTTP as a deployed server is reached: behind a bearer token,
and over https with a certificate of a private CA when given one.

    python tests/servers/guarded_http_server.py --port PORT [--cert FILE --key FILE]

The token it wants is read from env `MCPX_GUARD_TOKEN` (never from the command line, like the suite's own
`--header 'Authorization: Bearer ${VAR}'`); a request without `Authorization: Bearer <token>` is answered
401 with `WWW-Authenticate: Bearer realm="conformance-test"`, as an OAuth-protected MCP server answers.
With `--cert`/`--key` the socket speaks TLS (the test makes a throwaway CA and a loopback certificate).
Everything past the door is conformance/gateway/upstream.py's fixture server, answered by the peer kit's
`answer_http` (JSON responses, one session).
"""

from __future__ import annotations

import argparse
import os
import ssl
import sys
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script from anywhere

from conformance.gateway.upstream import FixtureServer, Log, logged  # noqa: E402
from conformance.targets.peerkit import answer_http  # noqa: E402

TOKEN_ENV = "MCPX_GUARD_TOKEN"
CHALLENGE = 'Bearer realm="conformance-test"'


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--cert", help="PEM certificate chain: serve https")
    parser.add_argument("--key", help="PEM private key of --cert")
    args = parser.parse_args()
    token = os.environ.get(TOKEN_ENV)
    handle, note = logged(FixtureServer(), Log(None))
    session = uuid.uuid4().hex
    lock = threading.Lock()  # one message at a time: the fixture server keeps state

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def _send(self, status: int, headers: dict[str, str], payload: bytes) -> None:
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            if payload:
                self.wfile.write(payload)

        def _answer(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0)) if self.command == "POST" else b""
            if token and self.headers.get("Authorization") != f"Bearer {token}":
                self._send(401, {"WWW-Authenticate": CHALLENGE, "Content-Type": "application/json"},
                           b'{"error":"invalid_token"}')
                return
            with lock:
                self._send(*answer_http(self.command, self.path, body, handle, note, session))

        do_GET = do_POST = do_DELETE = _answer

    httpd = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    httpd.daemon_threads = True
    if args.cert:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(args.cert, args.key)
        httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
