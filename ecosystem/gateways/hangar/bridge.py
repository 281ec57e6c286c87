"""mcp-hangar's SEP-2624 interceptor routes, put on an MCP connection so the server-role checks can judge them.

    python ecosystem/gateways/hangar/bridge.py --url http://127.0.0.1:PORT

mcp-hangar (2.34) serves its interceptors beside its MCP endpoint, not on it: `GET /interceptors/list` (a
plain JSON body) and `POST /interceptor/invoke` (a JSON-RPC envelope), both in the PR #2624 shape only when
the request carries `MCP-Interceptor-Ext: io.modelcontextprotocol/interceptors` (its capability
negotiation; `?ext=` does the same on GET). Over `/mcp` itself it advertises no interceptors capability and
answers both methods -32601.

This bridge is a binding, not an implementation: a stdio MCP server (the suite's SDK-free one, with its one
plain tool) that advertises the capability because the header negotiates it, and forwards the two methods
to those routes with the header, unchanged both ways:

- `interceptors/list {event?}` -> `GET /interceptors/list?event=...` (the route takes no parameters; the
  event is passed as a query parameter so that a filter, were there one, would see it) -> `result`;
- `interceptor/invoke {...}` -> `POST /interceptor/invoke` with `{jsonrpc, id, method, params}` -> the
  envelope's `result` or `error` as it came.

`supportedEvents` is derived from the listed hooks (hangar's negotiation carries none). An HTTP failure is
answered -32603 with the status and body, so the checks see it.
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # run as a script from anywhere

from conformance.gateway.upstream import FixtureServer, Log, serve_stdio  # noqa: E402
from conformance.targets.peerkit import RpcError  # noqa: E402

EXT = "io.modelcontextprotocol/interceptors"
HEADER = {"MCP-Interceptor-Ext": EXT}


class HangarBridge(FixtureServer):
    name = "hangar-interceptor-bridge"

    def __init__(self, base: str):
        super().__init__(plain=True)
        self.base = base.rstrip("/")
        self.calls = 0

    def http(self, method: str, path: str, body: dict | None = None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method,
                                         headers={**HEADER, **({"Content-Type": "application/json"} if data else {})})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as err:  # hangar answers JSON-RPC errors with 4xx statuses
            text = err.read()
            try:
                return json.loads(text)
            except ValueError:
                raise RpcError(-32603, f"mcp-hangar answered HTTP {err.code}", text.decode("utf-8", "replace")) from None
        except (OSError, ValueError) as exc:
            raise RpcError(-32603, f"mcp-hangar did not answer: {exc}") from None

    def listing(self, event=None) -> dict:
        query = "?" + urllib.parse.urlencode({"event": event}) if isinstance(event, str) else ""
        return self.http("GET", "/interceptors/list" + query)

    def capabilities(self) -> dict:
        caps = super().capabilities()
        listed = self.listing().get("interceptors") or []
        events = sorted({e for item in listed for hook in item.get("hooks") or () for e in hook.get("events") or ()})
        caps["extensions"] = {EXT: {"supportedEvents": events}}
        return caps

    def dispatch(self, method, params, out):
        if method == "interceptors/list":
            return self.listing(params.get("event"))
        if method == "interceptor/invoke":
            self.calls += 1
            answer = self.http("POST", "/interceptor/invoke",
                               {"jsonrpc": "2.0", "id": self.calls, "method": method, "params": params})
            if isinstance(answer, dict) and "result" in answer:
                return answer["result"]
            error = answer.get("error") if isinstance(answer, dict) else None
            if isinstance(error, dict):
                raise RpcError(error.get("code"), error.get("message"), error.get("data"))
            raise RpcError(-32603, "mcp-hangar answered neither a result nor an error", answer)
        return super().dispatch(method, params, out)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True, help="mcp-hangar's HTTP base, e.g. http://127.0.0.1:8000")
    args = parser.parse_args()
    serve_stdio(HangarBridge(args.url), Log(None))


if __name__ == "__main__":
    main()
