"""Streamable HTTP target: the suite is the client of a server at a URL.

Each JSON-RPC message is one POST (MCP 2025-03-26 and later). The server
answers a request with `application/json` (one message) or `text/event-stream`
(SSE events, each a message, ending with the response); a notification or a
response is accepted with 202. After `initialize`, the session id and the
negotiated protocol version travel as headers.

The transport is written on httpx and httpx-sse rather than the SDK's client,
because the suite must see every byte (the 2.x SDK client drops extension
fields and hides malformed messages). A POST runs in its own task; the
connection's request timeout bounds it, and closing the connection cancels
what is left and ends the session with DELETE. TCP connections are pooled and
kept alive: an event stream is read to its end after its response (see
DRAIN_WAIT), so its connection serves the next request.
"""

from __future__ import annotations

import contextlib
import re
import ssl
from collections.abc import AsyncIterator

import anyio
import httpx
from anyio.abc import TaskGroup

# The decoder is httpx-sse's own field parser; the line splitting around it is bounded (see _bounded_events).
from httpx_sse._decoders import SSEDecoder

from ..core.model import describe
from .base import FIRST_METHODS, OLD_SSE, Connection, TargetUnavailable, WireEvent, clip, json_bytes, now

OLD_SSE_WAIT = 2.0  # seconds the look for an old transport's `endpoint` event may take
# After the response, what is left of its event stream is read (and not judged) for this long and this much at
# most: a stream read to its end leaves its connection to the pool for the next request, one closed early
# takes the connection with it (and each request then opens a new one). A server keeping the stream open
# past its response costs its connection, as before.
DRAIN_WAIT = 1.0
DRAIN_BYTES = 65536


class HttpConnection(Connection):
    kind = "http"

    def __init__(self, url: str, *, header: dict[str, str] | None = None, ca_bundle: str | None = None, **kw):
        super().__init__(**kw)
        self.url = url
        self.header = dict(header or {})  # the --header values, sent with every request
        self.ca_bundle = ca_bundle
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self._client: httpx.AsyncClient | None = None
        self._tg: TaskGroup | None = None

    async def __aenter__(self) -> "HttpConnection":
        verify: ssl.SSLContext | bool = True
        if self.ca_bundle:
            verify = ssl.create_default_context(cafile=self.ca_bundle)
        self._client = httpx.AsyncClient(timeout=httpx.Timeout(None, connect=self.timeout),
                                         follow_redirects=False, trust_env=False, verify=verify)
        self._tg = tg = anyio.create_task_group()
        await tg.__aenter__()
        return self

    def _entered(self) -> tuple[httpx.AsyncClient, TaskGroup]:
        """The client and the task group; asked only after `__aenter__` made both."""
        assert self._client is not None and self._tg is not None, "the connection is used after __aenter__"
        return self._client, self._tg

    async def __aexit__(self, *exc) -> None:
        client, tg = self._entered()
        tg.cancel_scope.cancel()
        await tg.__aexit__(None, None, None)
        with anyio.CancelScope(shield=True):
            if self.session_id:
                with anyio.move_on_after(2):
                    try:
                        await client.delete(self.url, headers=self._headers())
                    except httpx.HTTPError:
                        pass
            await client.aclose()

    async def probe(self) -> None:
        """Raise TargetUnavailable when nothing listens at the URL."""
        try:
            with anyio.fail_after(self.timeout):
                # Headers are enough: a server may answer a GET with an event stream that never ends.
                async with self._entered()[0].stream("GET", self.url, headers={"Accept": "text/event-stream"}):
                    pass
        except httpx.ConnectError as exc:
            tls = _tls_failure(exc)
            if tls:
                raise TargetUnavailable(f"{tls[0]} at {self.url}: {tls[1]}") from None
            raise TargetUnavailable(f"nothing answers at {self.url} ({self._redacted(describe(exc))})") from None
        except (httpx.HTTPError, TimeoutError):
            pass  # it is there; how it answers a GET is not this probe's business

    # Params mirrored into the Mcp-Name header on the 2026-07-28 wire, by method.
    NAME_PARAMS = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}

    def _headers(self, message: dict | None = None) -> dict[str, str]:
        headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        headers.update(self.header)
        if self.mode != "handshake":
            # Stateless: the version, the method and (for some methods) the name travel as headers too.
            headers["MCP-Protocol-Version"] = self.mode
            if message and "method" in message:
                headers["Mcp-Method"] = message["method"]
                key = self.NAME_PARAMS.get(message["method"])
                value = (message.get("params") or {}).get(key) if key else None
                if isinstance(value, str):
                    headers["Mcp-Name"] = value
            return headers
        if self.session_id:
            headers["Mcp-Session-Id"] = self.session_id
        if self.protocol_version:
            headers["MCP-Protocol-Version"] = self.protocol_version
        return headers

    async def _transmit(self, message: dict) -> None:
        if "method" in message and "id" in message:
            # A request: POST in the background; its answer arrives through _on_incoming.
            self._entered()[1].start_soon(self._post, message)
        else:
            # A notification or a response: wait for the 202, so that what the suite sends
            # next cannot overtake it (notifications/initialized before the first request).
            await self._post(message)

    async def _post(self, message: dict) -> None:
        method = message.get("method", "response")
        body = json_bytes(message)
        try:
            async with self._entered()[0].stream("POST", self.url, content=body,
                                                 headers=self._headers(message)) as resp:
                if method == "initialize" and resp.headers.get("mcp-session-id"):
                    self.session_id = resp.headers["mcp-session-id"]
                await self._read_answer(message, resp)
        except httpx.HTTPError as exc:
            self._fail_request(message, f"HTTP transport error on {method} ({describe(exc)})")

    async def _read_answer(self, message: dict, resp: httpx.Response) -> None:
        method = message.get("method", "response")
        ctype = resp.headers.get("content-type", "").split(";")[0].strip().lower()
        if resp.status_code == 202 or ("id" not in message or "method" not in message):
            await resp.aclose()
            if resp.status_code >= 400:
                self.wire.append(WireEvent(now(), "note", problem=f"HTTP {resp.status_code} for a {method} notification"))
            return
        if ctype == "text/event-stream" and resp.status_code < 400:
            skipped = ""
            chunks = resp.aiter_bytes()
            async with contextlib.aclosing(_bounded_events(chunks, self.max_message_bytes)) as events:
                async for data, problem in events:
                    if problem:
                        self.wire.append(WireEvent(now(), "in", raw=data, problem=problem))
                        skipped = f" ({problem})"
                        continue
                    await self._on_incoming(data)
                    if self._dead:
                        return
                    if self._answered_id(message["id"]):
                        await _drain(chunks)
                        return
            if not self._answered_id(message["id"]):
                self._fail_request(message, f"the server ended the event stream of {method} without a response"
                                            f"{skipped}")
            return
        data = await _read_bounded(resp, self.max_message_bytes)
        if ctype == "application/json" and data:
            await self._on_incoming(data)
            if self._answered_id(message["id"]):
                return
        challenge = resp.headers.get("www-authenticate") if resp.status_code in (401, 403) else None
        location = resp.headers.get("location") if 300 <= resp.status_code < 400 else None
        pending = self._pending.get(message.get("id"))
        if pending is not None:
            pending.exchange.http_status = resp.status_code
        old_sse = None
        if method in FIRST_METHODS and resp.status_code in (404, 405):
            old_sse = await self._old_sse_endpoint()
        self._fail_request(message, f"HTTP {resp.status_code} ({ctype or 'no content type'}) for {method}: "
                                    f"{clip(data.decode('utf-8', 'replace'), 200) or 'empty body'}"
                                    + (f" (WWW-Authenticate: {clip(challenge, 300)})" if challenge else "")
                                    + (f" (Location: {clip(location, 300)})" if location is not None else "")
                                    + (f" ({OLD_SSE}: a GET opens an event stream whose first event is "
                                       f"`endpoint`, {clip(old_sse, 120)})" if old_sse is not None else ""))

    async def _old_sse_endpoint(self) -> str | None:
        """The data of the `endpoint` event a GET on the URL opens with, or None.

        A server on the HTTP+SSE transport of 2024-11-05 refuses the POST (405 or 404) and, on a GET, opens an
        event stream whose first event is `endpoint`, naming where to POST. Only the first event is read, for
        at most OLD_SSE_WAIT seconds: a Streamable HTTP server's GET stream may stay silent."""
        decoder, buffer = SSEDecoder(), b""
        with anyio.move_on_after(OLD_SSE_WAIT):
            try:
                async with self._entered()[0].stream("GET", self.url, headers={
                        "Accept": "text/event-stream", **self.header}) as resp:
                    if resp.status_code != 200 or not resp.headers.get("content-type", "").startswith(
                            "text/event-stream"):
                        return None
                    async for chunk in resp.aiter_bytes():
                        buffer += chunk
                        while b"\n" in buffer:
                            raw, buffer = buffer.split(b"\n", 1)
                            event = decoder.decode(raw.rstrip(b"\r").decode("utf-8", "replace"))
                            if event is not None:  # the first event ended
                                return event.data if event.event == "endpoint" else None
                        if len(buffer) > 4096:
                            return None
            except httpx.HTTPError:
                return None
        return None

    def _answered_id(self, rid) -> bool:
        pending = self._pending.get(rid)
        return pending is None or pending.exchange.response is not None

    def _redacted(self, text: str) -> str:
        """`text` without the --header values (credentials), should an error of the HTTP client quote one."""
        for value in self.header.values():
            if len(value) >= 4:  # a short value ("1", "yes") is no secret, and replacing it would garble text
                for form in {value, repr(value)[1:-1], repr(value.encode("utf-8", "replace"))[2:-1]}:
                    text = text.replace(form, "[header value]")
        return text

    def _fail_request(self, message: dict, reason: str) -> None:
        reason = self._redacted(reason)
        pending = self._pending.get(message.get("id"))
        if pending is not None and pending.exchange.response is None:
            pending.exchange.failure = reason
            pending.done.set()
        elif pending is None:
            self.wire.append(WireEvent(now(), "note", problem=reason))

    async def _on_incoming(self, text) -> None:
        await super()._on_incoming(text)
        # Remember the negotiated version for the header every later request must carry.
        last = self.wire[-1].message if self.wire else None
        if isinstance(last, dict) and isinstance(last.get("result"), dict):
            version = last["result"].get("protocolVersion")
            if isinstance(version, str) and self.protocol_version is None:
                self.protocol_version = version


def _tls_failure(exc: BaseException | None) -> tuple[str, str] | None:
    """What went wrong in TLS behind a failed connection, (what failed, why), or None.

    A certificate the suite cannot verify is told apart from other handshake failures: the first has a fix
    (--ca-bundle), the second usually means the URL's scheme does not match what the server speaks."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, ssl.SSLCertVerificationError):
            return "TLS certificate verification failed", str(exc.verify_message or exc.reason or exc)
        if isinstance(exc, ssl.SSLError):
            return "TLS handshake failed", str(exc.reason or exc)
        exc = exc.__cause__ or exc.__context__
    return None


_LINE_END = re.compile(rb"\r\n|\r|\n")


async def _drain(chunks: AsyncIterator[bytes]) -> None:
    """Read what is left of a response body, within DRAIN_WAIT and DRAIN_BYTES, so its connection is kept.
    The request is answered already: a transport error now only costs the connection, as closing it would."""
    left = DRAIN_BYTES
    with anyio.move_on_after(DRAIN_WAIT):
        try:
            async for chunk in chunks:
                left -= len(chunk)
                if left < 0:
                    return
        except httpx.HTTPError:
            pass


async def _bounded_events(chunks: AsyncIterator[bytes], limit: int):
    """The data of each server-sent event, as (data, None), or (head, problem) for an event over `limit` bytes.

    httpx-sse reads a whole line, however long, before it parses it; here lines are split from the byte
    stream as they come and an event's data is dropped once it passes the cap (the rest of the event is
    skipped), so one giant event costs at most `limit` bytes. Fields are still parsed by httpx-sse's decoder.
    Lines end with CRLF, LF or a lone CR, as the event-stream format allows all three; a CR that ends one
    chunk and an LF that starts the next are one line end.
    """
    decoder = SSEDecoder()
    buffer = bytearray()
    event_bytes = 0
    skipping = False
    after_cr = False  # the last chunk ended with CR: an LF opening this one belongs to that line end
    async for chunk in chunks:
        if not chunk:
            continue
        start = 1 if after_cr and chunk[:1] == b"\n" else 0
        after_cr = False
        while True:
            end = _LINE_END.search(chunk, start)
            if end is None:
                if not skipping:
                    buffer += chunk[start:]
                    if event_bytes + len(buffer) > limit:
                        head = clip(bytes(buffer[:200]).decode("utf-8", "replace"), 200)
                        yield head, f"a server-sent event over {limit} bytes (skipped)"
                        buffer.clear()
                        decoder = SSEDecoder()
                        skipping = True
                break
            piece, start = chunk[start:end.start()], end.end()
            after_cr = end.group() == b"\r" and start == len(chunk)
            if skipping:
                if piece or buffer:  # still inside the giant event: wait for its blank line
                    buffer.clear()
                    continue
                skipping, event_bytes = False, 0
                continue
            buffer += piece
            line = bytes(buffer).decode("utf-8", "replace")
            buffer.clear()
            event_bytes = 0 if not line else event_bytes + len(line)
            if event_bytes > limit:
                yield clip(line[:200], 200), f"a server-sent event over {limit} bytes (skipped)"
                decoder, skipping = SSEDecoder(), True
                continue
            sse = decoder.decode(line)
            if sse is not None and sse.data:
                yield sse.data, None


async def _read_bounded(resp: httpx.Response, limit: int) -> bytes:
    chunks, size = [], 0
    async for chunk in resp.aiter_bytes():
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            break
    return b"".join(chunks)[:limit]
