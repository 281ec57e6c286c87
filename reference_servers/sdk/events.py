"""A bounded in-memory event store for the reference server's Streamable HTTP: with one, the SDK opens each
SSE stream with a priming event (an event id and empty data) and a `retry` field, so a client whose stream
drops reconnects with `Last-Event-ID` and receives what it missed (the transport's resumability SHOULDs,
MCP 2025-11-25 basic/transports; the official suite's `server-sse-polling` scenario judges both).

Bounded by event count and by bytes, oldest first, so a long session or a large result cannot grow it without
limit; an event evicted before its client reconnects is simply not replayed (the client sees a gap, as after
any server restart).
"""

from __future__ import annotations

import itertools
from collections import OrderedDict

from mcp.server.streamable_http import EventMessage, EventStore

MAX_EVENTS = 256
MAX_BYTES = 8 * 1024 * 1024
RETRY_MS = 1000  # what the `retry` field asks a client to wait before reconnecting


def _size(message) -> int:
    return 0 if message is None else len(message.model_dump_json(by_alias=True, exclude_none=True))


class BoundedEventStore(EventStore):
    def __init__(self, max_events: int = MAX_EVENTS, max_bytes: int = MAX_BYTES) -> None:
        self.max_events, self.max_bytes = max_events, max_bytes
        self.events: OrderedDict[str, tuple[str, object, int]] = OrderedDict()  # id -> (stream, message, size)
        self.bytes = 0
        self._ids = itertools.count(1)

    async def store_event(self, stream_id, message):
        event_id = str(next(self._ids))
        size = _size(message)
        self.events[event_id] = (stream_id, message, size)
        self.bytes += size
        while self.events and (len(self.events) > self.max_events or self.bytes > self.max_bytes):
            _, (_, _, dropped) = self.events.popitem(last=False)
            self.bytes -= dropped
        return event_id

    async def replay_events_after(self, last_event_id, send_callback):
        if last_event_id not in self.events:
            return None
        stream_id = self.events[last_event_id][0]
        after = False
        for event_id, (sid, message, _) in list(self.events.items()):
            if after and sid == stream_id and message is not None:
                await send_callback(EventMessage(message, event_id))
            after = after or event_id == last_event_id
        return stream_id


def resumability(accepts) -> dict:
    """The keyword arguments giving an SDK's Streamable HTTP the store (and the `retry` interval, where the
    release takes one: older 1.x releases do not), given the names the SDK's constructor `accepts`."""
    options: dict = {"event_store": BoundedEventStore()}
    if "retry_interval" in accepts:
        options["retry_interval"] = RETRY_MS
    return options
