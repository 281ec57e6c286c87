"""The judge every role that plays the client shares: the wire of a connection (each role registers it under
its own check ids: server/common.py, gateway/common.py)."""

from __future__ import annotations

from ..core.model import NotObserved, Violation
from ..core.wire import transcript_problems
from .recording import Recording


def judge_wire(rec: Recording, peer: str = "server") -> str | None:
    received = [e for e in rec.wire if e.direction == "in"]
    if not received:
        raise NotObserved(f"no message was received from the {peer} ({rec.fatal or 'nothing came back'})")
    problems = transcript_problems(rec.wire)
    if problems:
        raise Violation(f"{len(problems)} invalid message(s); first: {problems[0]}",
                        expected="every message valid JSON-RPC 2.0 and valid base MCP", actual=problems[:10])
    return f"{len(received)} messages received{'' if peer == 'server' else ' from the ' + peer}, all valid"
