"""Reading one line of JSON-RPC (`parse_line`), for the gateway's line pumps and its parser process.

    python -m reference_servers.gateway.lineparser

runs the parser process (proxy.OffLoopParser): it reads frames from stdin (an 8-byte little-endian length, then
one line's bytes), parses each line as the gateway does on its event loop, and writes back a frame of its own:
b"M" and the message, or b"U" and the refusal's (code, reason, id), in marshal's format, which holds JSON's values
and loads in a fraction of the time parsing takes. It ends at the end of stdin: when the gateway closes the pipe
or is gone. This module imports only the standard library and httpguard, so that process starts in a few tens
of milliseconds.
"""

from __future__ import annotations

import json
import marshal
import os
import struct
import sys
from typing import Any

from ..httpguard import OFF_LOOP_BYTES, shape_problem

FRAME = struct.Struct("<Q")
# Where reference_servers is importable from: the PYTHONPATH of the gateway's child processes (this parser, the
# detection workers), which may run from a checkout.
IMPORT_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PARSE_ERROR, INVALID_REQUEST = -32700, -32600
MAX_DEPTH = 100  # levels of arrays and objects in one message; deeper ones are refused (-32600)
# json.loads without building a decoder for every message.
_DECODE = json.JSONDecoder().decode


class Unreadable(ValueError):
    """A message the gateway refuses to handle: the JSON-RPC error code to answer with, and its id when known."""

    def __init__(self, code: int, reason: str, rid: Any = None):
        super().__init__(reason)
        self.code, self.rid = code, rid


def depth_over(value: Any, limit: int) -> bool:
    """Whether `value` nests arrays and objects more than `limit` levels deep (no recursion: that is the point)."""
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        children = node.values() if isinstance(node, dict) else node
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def parse_line(line: bytes):  # not conformance.targets.peerkit on purpose: the reference shares no code with its judge
    """One JSON-RPC message, or the `Unreadable` that says why the line is not one. Depth is judged on the bytes,
    before parsing when the line is short, after it when it is long (a walk over the tree's containers costs
    less there than reading every byte); either way its links are `depth_checked`."""
    short = len(line) <= OFF_LOOP_BYTES
    # Depth d needs d opening brackets: two C counts clear almost every message before the byte scan.
    if short and line.count(b"[") + line.count(b"{") > MAX_DEPTH and shape_problem(line, MAX_DEPTH, None):
        return Unreadable(INVALID_REQUEST, f"nested deeper than {MAX_DEPTH} levels")
    try:
        # json.loads, without its encoding sniffing where the answer is known: a line opening with "{" and no
        # NUL after it is UTF-8 to json.detect_encoding too (no BOM, not UTF-16 or -32).
        message = _DECODE(line.decode("utf-8", "surrogatepass")) if line[:1] == b"{" and line[1:2] != b"\0" \
            else json.loads(line)
    except RecursionError:  # json's own limit (about a thousand levels): far past MAX_DEPTH
        return Unreadable(INVALID_REQUEST, f"nested deeper than {MAX_DEPTH} levels")
    except ValueError as exc:
        return Unreadable(PARSE_ERROR, f"not JSON: {exc}")
    if isinstance(message, list):
        return Unreadable(INVALID_REQUEST, "batches (JSON arrays) are not accepted: one message per line")
    if not short and depth_over(message, MAX_DEPTH):
        rid = message.get("id") if isinstance(message, dict) else None
        return Unreadable(INVALID_REQUEST, f"nested deeper than {MAX_DEPTH} levels",
                          rid if isinstance(rid, (str, int)) and not isinstance(rid, bool) else None)
    return message


def serve(stdin, stdout) -> None:
    while True:
        head = stdin.read(FRAME.size)
        if len(head) < FRAME.size:
            return
        (size,) = FRAME.unpack(head)
        line = stdin.read(size)
        if len(line) < size:
            return
        parsed = parse_line(line)
        if isinstance(parsed, Unreadable):
            body = b"U" + marshal.dumps((parsed.code, str(parsed), parsed.rid))
        else:
            try:
                body = b"M" + marshal.dumps(parsed)
            except ValueError:  # not a value marshal holds (none that JSON makes): the gateway parses it itself
                body = b"E"
        stdout.write(FRAME.pack(len(body)))
        stdout.write(body)
        stdout.flush()


if __name__ == "__main__":
    try:
        serve(sys.stdin.buffer, sys.stdout.buffer)
    except (BrokenPipeError, KeyboardInterrupt):
        pass
