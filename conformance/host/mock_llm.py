"""The mock LLM: an OpenAI-compatible Chat Completions endpoint on loopback, scripted and recording.

Theory of operation
-------------------
`MockLLM` serves `POST /v1/chat/completions` (plain JSON, or server-sent events
when the request says `"stream": true`) and `GET /v1/models`. Every request is
recorded exactly as received (the parsed body, and whether it parsed), with the
time on the monotonic clock the scenario servers use and the turn the harness
was in.

What it answers comes from the scenario's script: for each turn, a list of
steps, one per model request of that turn; when the steps run out it answers
`"ok: <the last user message it received>"`, which makes response-phase
middleware visible in what the host prints. A step is:

- `{"say": "echo"}` or `{"say": "TEXT"}`: answer with text;
- `{"call": NAME, "arguments": {...}}`: call the offered tool whose name ends
  with NAME (hosts may prefix names with their server's);
- `{"call": NAME, "arguments": {...}, "offered": false}`: ask for NAME verbatim,
  offered or not (the model trying to reach a tool it was not given).

`reply_for` is the pure part: from a step and a request body to the message.
"""

from __future__ import annotations

import json
import socket
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from ..core.judging import match_name
from ..targets.peerkit import strict_loads

TOOL_CALL_ID = "call_{n}"


def message_text(content: Any) -> str:
    """The text of a Chat Completions message content: a string, or an array of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def offered_names(body: dict) -> list[str]:
    names = []
    for tool in body.get("tools") or ():
        if isinstance(tool, dict):
            fn = tool.get("function")
            if not isinstance(fn, dict):
                fn = tool
            if isinstance(fn.get("name"), str):
                names.append(fn["name"])
    return names



def last_user_text(body: dict) -> str:
    for message in reversed(body.get("messages") or ()):
        if isinstance(message, dict) and message.get("role") == "user":
            return message_text(message.get("content"))
    return ""


def reply_for(step: dict | None, body: dict, call_number: int) -> dict:
    """The assistant message for one request: text, or one tool call."""
    if step and "call" in step:
        name = step["call"] if step.get("offered") is False else match_name(offered_names(body), step["call"])
        if name is not None:
            return {"role": "assistant", "content": None, "tool_calls": [{
                "id": TOOL_CALL_ID.format(n=call_number), "type": "function",
                "function": {"name": name, "arguments": json.dumps(step.get("arguments", {}))}}]}
        return {"role": "assistant", "content": f"(the tool {step['call']} was not offered)"}
    say = (step or {}).get("say", "echo")
    return {"role": "assistant", "content": f"ok: {last_user_text(body)}" if say == "echo" else say}


@dataclass
class ModelRequest:
    t: float
    turn: int
    body: Any  # the parsed JSON body, or the raw text when it did not parse
    valid: bool
    problem: str | None = None
    reply: dict | None = None

    @property
    def stream(self) -> bool:
        return isinstance(self.body, dict) and self.body.get("stream") is True


@dataclass
class MockLLM:
    """Shared state between the harness (which turn it is) and the HTTP app (what was asked)."""

    script: dict[int, list[dict]] = field(default_factory=dict)  # turn (1-based) -> steps
    turn: int = 0
    requests: list[ModelRequest] = field(default_factory=list)
    _per_turn: dict[int, int] = field(default_factory=dict)
    _calls: int = 0

    def answer(self, raw: bytes) -> tuple[ModelRequest, dict | None]:
        t = time.monotonic()
        try:
            body = strict_loads(raw)
        except ValueError:
            req = ModelRequest(t, self.turn, raw.decode("utf-8", "replace")[:2000], False, "body is not JSON")
            self.requests.append(req)
            return req, None
        problem = _request_problem(body)
        req = ModelRequest(t, self.turn, body, problem is None, problem)
        self.requests.append(req)
        if problem:
            return req, None
        index = self._per_turn.get(self.turn, 0)
        self._per_turn[self.turn] = index + 1
        steps = self.script.get(self.turn, [])
        self._calls += 1
        req.reply = reply_for(steps[index] if index < len(steps) else None, body, self._calls)
        return req, req.reply

    def app(self):
        from starlette.applications import Starlette
        from starlette.responses import JSONResponse, StreamingResponse
        from starlette.routing import Route

        async def completions(request):
            req, reply = self.answer(await request.body())
            if reply is None:
                return JSONResponse({"error": {"message": req.problem, "type": "invalid_request_error"}},
                                    status_code=400)
            model = req.body.get("model", "mock")
            if req.stream:
                return StreamingResponse(_sse(reply, model), media_type="text/event-stream")
            return JSONResponse(_completion(reply, model))

        async def models(request):
            return JSONResponse({"object": "list", "data": [{"id": "mcpx-mock", "object": "model",
                                                             "created": 0, "owned_by": "mcp-ext-conformance"}]})

        return Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"]),
                                 Route("/chat/completions", completions, methods=["POST"]),
                                 Route("/v1/models", models, methods=["GET"])])


def _request_problem(body: Any) -> str | None:
    if not isinstance(body, dict):
        return "the body is not a JSON object"
    if not isinstance(body.get("messages"), list) or not body["messages"]:
        return "messages is missing or empty"
    if not isinstance(body.get("model"), str):
        return "model is missing"
    tools = body.get("tools")
    if tools is not None and not isinstance(tools, list):
        return "tools is not an array"
    return None


def _finish(reply: dict) -> str:
    return "tool_calls" if reply.get("tool_calls") else "stop"


def _completion(reply: dict, model: str) -> dict:
    return {"id": f"chatcmpl-{uuid.uuid4().hex[:12]}", "object": "chat.completion", "created": int(time.time()),
            "model": model, "choices": [{"index": 0, "message": reply, "finish_reason": _finish(reply)}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


async def _sse(reply: dict, model: str):
    ident, created = f"chatcmpl-{uuid.uuid4().hex[:12]}", int(time.time())

    def chunk(delta: dict, finish: str | None = None) -> str:
        data = {"id": ident, "object": "chat.completion.chunk", "created": created, "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        return f"data: {json.dumps(data)}\n\n"

    yield chunk({"role": "assistant", "content": ""})
    text = reply.get("content") or ""
    for start in range(0, len(text), 16):  # several deltas, as real endpoints send
        yield chunk({"content": text[start:start + 16]})
    for index, call in enumerate(reply.get("tool_calls") or ()):
        yield chunk({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                                     "function": {"name": call["function"]["name"], "arguments": ""}}]})
        yield chunk({"tool_calls": [{"index": index, "function": {"arguments": call["function"]["arguments"]}}]})
    yield chunk({}, _finish(reply))
    yield "data: [DONE]\n\n"


def loopback_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    return sock
