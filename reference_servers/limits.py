"""What one call of a middleware, augmentation or interceptor may read, write and take, and how it stops.

Every entry point that runs a function over a caller's data (`middleware/invoke`, `augmentation/augment`,
`interceptors/list`, `interceptor/invoke`) goes through the same `Limits` (configuration key `limits`):

| key              | default            | bounds                                                              | over it |
|------------------|--------------------|---------------------------------------------------------------------|---------|
| `maxTextChars`   | 4,194,304 (4 Mi)   | characters of the text the function reads: the context's text blocks, or every string of an interceptor's payload | -32602 |
| `maxInputChars`  | 8,388,608 (8 Mi)   | the size of everything the call passes in (context with every block, `arguments`, an interceptor's payload and config), counted as JSON text | -32602 |
| `maxOutputChars` | 8,388,608 (8 Mi)   | the size of the result, counted the same way; a function that would write more stops as soon as it knows (pii_restoration counts as it goes) | -32000 |
| `maxSeconds`     | 10                 | wall time of one call, from when it gets a worker slot                | -32000 |
| `maxConcurrent`  | 4                  | calls running at once, over all sessions; further calls wait for a slot | (waits) |
| `maxQueued`      | 32                 | calls waiting for a slot, over all sessions; a call past it is refused at once ("busy") | -32000 |
| `maxJsonValues`  | 20,000             | values and keys in one Streamable HTTP request body, counted on its bytes before it is parsed (reference_servers/httpguard.py) | HTTP 400, -32600 |

An error names the limit: `data: {"limit": "maxInputChars", "maxInputChars": 8388608, "size": ...}`.

Memory. A call's input is counted against `maxInputChars` before it may wait for a slot (an oversized one is
refused at once, never queued), so the inputs the calls hold, running and waiting, stay within
(maxConcurrent + maxQueued) x maxInputChars characters: 36 x 8 Mi = 288 Mi characters with the defaults (a
Python str takes 1, 2 or 4 bytes a character, by its widest one), plus what the transport holds of requests
not yet admitted: over Streamable HTTP at most 128 at once (uvicorn's limit_concurrency, httpguard.MAX_CONNECTIONS),
each under the SDK's body cap (4 MiB), with its parsed copy.

Sizes are counted before anything else runs (schema validation included), by `json_chars`, which stops
counting as soon as the count is past the limit, so an oversized call costs what the limit costs.

Stopping. A call runs in a worker thread under a `CallControl`. When its time is up, or its caller has gone
(the request was cancelled, the session ended), the control is cancelled and the function stops at its next
`checkpoint()`: the long loops (pii detection and restoration, the interceptors' walks over a payload, the
middleware's loops over blocks) call one every few microseconds of work, so a cancelled call stops within
milliseconds, well under a second. Until it has stopped the call keeps its slot among `maxConcurrent`, so
abandoned work can never pile up beyond the limit, and the caller's error answer is sent once it has stopped.
Cooperative checks rather than a process per call: a process per call would stop anything, but it costs a
fork or a pool and a copy of every context (megabytes) through a pipe, per call, where most calls take well
under a millisecond; the checks cost a flag test per loop iteration.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Callable

INVALID_PARAMS = -32602
SERVER_ERROR = -32000

_CONFIG_KEYS = {"maxTextChars": "max_text_chars", "maxInputChars": "max_input_chars",
                "maxOutputChars": "max_output_chars", "maxSeconds": "max_seconds", "maxConcurrent": "max_concurrent",
                "maxQueued": "max_queued", "maxJsonValues": "max_json_values"}


@dataclass(frozen=True)
class Limits:
    """What one call may use (configuration key `limits`; the module docstring has the table)."""

    max_text_chars: int = 4 * 1024 * 1024
    max_input_chars: int = 8 * 1024 * 1024
    max_output_chars: int = 8 * 1024 * 1024
    max_seconds: float = 10.0
    max_concurrent: int = 4
    max_queued: int = 32  # a conformance run in the stateless 2026-07-28 mode has ~25 calls out at once
    max_json_values: int = 20_000

    @classmethod
    def from_config(cls, config: dict | None) -> "Limits":
        config = dict(config or {})
        unknown = set(config) - set(_CONFIG_KEYS)
        if unknown:
            raise ValueError(f"unknown key(s) in limits: {', '.join(sorted(unknown))}")
        for key, value in config.items():
            kinds = (int, float) if key == "maxSeconds" else (int,)
            if isinstance(value, bool) or not isinstance(value, kinds) or value <= 0:
                raise ValueError(f"limits: {key} must be a positive {'number' if key == 'maxSeconds' else 'integer'}")
        return cls(**{_CONFIG_KEYS[k]: v for k, v in config.items()})

    def to_config(self) -> dict:
        return {key: getattr(self, attr) for key, attr in _CONFIG_KEYS.items()}


class LimitExceeded(Exception):
    """A call over one of the limits: `key` is the configuration key, `code` the JSON-RPC error code."""

    def __init__(self, key: str, limit: float, size: float | None, message: str):
        super().__init__(message)
        self.key, self.limit, self.size, self.message = key, limit, size, message
        self.code = INVALID_PARAMS if key in ("maxTextChars", "maxInputChars") else SERVER_ERROR

    @property
    def data(self) -> dict:
        data: dict = {"limit": self.key, self.key: self.limit}
        if self.size is not None:
            data["size"] = self.size
        return data


class Cancelled(BaseException):
    """Raised at a checkpoint of a call whose time is up or whose caller has gone. A BaseException, like
    KeyboardInterrupt: the handlers that turn a middleware's or an interceptor's failure into an error answer
    (`except Exception`) must let it through, since nobody waits for that answer any more."""


# -- sizes ----------------------------------------------------------------------------------------------------------
def json_chars(value: Any, stop_after: int | None = None) -> int:
    """About how many characters `value` takes as JSON text (strings and keys with their quotes, a number as
    written, separators), counted without recursion and without building the text; once the count is past
    `stop_after` it is returned as it is, so an oversized value costs what the limit costs."""
    total, stack = 0, [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            total += len(item) + 2
        elif isinstance(item, dict):
            total += 2 + 2 * len(item)
            for key, inner in item.items():
                total += len(key) + 2 if isinstance(key, str) else 8
                stack.append(inner)
        elif isinstance(item, (list, tuple)):
            total += 2 + len(item)
            stack.extend(item)
        elif isinstance(item, bool) or item is None:
            total += 5
        elif isinstance(item, (int, float)):
            total += 24 if isinstance(item, float) or abs(item) >= 10 ** 24 else len(str(item))
        else:
            total += 8
        if stop_after is not None and total > stop_after:
            return total
    return total


def string_chars(value: Any, stop_after: int | None = None) -> int:
    """The characters of every string value in `value` (keys excluded): what a detector reads of a payload."""
    total, stack = 0, [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            total += len(item)
            if stop_after is not None and total > stop_after:
                return total
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return total


def check_size(key: str, limit: int, size: int, what: str) -> None:
    if size > limit:
        raise LimitExceeded(key, limit, size, f"{what} hold{'s' if not what.endswith('s') else ''} {size} characters"
                            f" or more, over this server's limit of {limit} ({key})")


# -- stopping ---------------------------------------------------------------------------------------------------------
class CallControl:
    """One call's stop flag and output allowance, seen by the worker thread through `current()`."""

    def __init__(self, limits: Limits | None = None):
        self.limits = limits or Limits()
        self.cancelled = False
        self.reason = ""
        self.started = threading.Event()
        self.finished = threading.Event()

    def cancel(self, reason: str) -> None:
        self.reason = self.reason or reason
        self.cancelled = True

    def stop(self) -> None:
        raise Cancelled(self.reason or "cancelled")

    def run(self, fn: Callable, *args) -> Any:
        """fn(*args) in this thread under this control; `finished` is set however it ends."""
        outer = getattr(_calls, "current", None)
        _calls.current = self
        self.started.set()
        try:
            if self.cancelled:
                self.stop()
            return fn(*args)
        finally:
            _calls.current = outer
            self.finished.set()


_NEVER = CallControl()  # the control of code that runs outside any call (tests, benchmarks): never cancelled
_calls = threading.local()


def current() -> CallControl:
    """The running call's control (or one never cancelled): hold it in a local in a hot loop and test
    `.cancelled`, then call `.stop()`."""
    return getattr(_calls, "current", None) or _NEVER


def checkpoint() -> None:
    """Stop here (raise Cancelled) if the running call's time is up or its caller has gone."""
    control = getattr(_calls, "current", None)
    if control is not None and control.cancelled:
        control.stop()


def output_allowance() -> int | None:
    """How many characters the running call may write (None outside a call)."""
    control = getattr(_calls, "current", None)
    return None if control is None else control.limits.max_output_chars
