"""One conversation: the turn loop of HARNESS.md §3 over the connected servers and the model."""

from __future__ import annotations

import logging
from typing import Any, Awaitable, Callable

from .interceptors import EXTENSION, INVOKE_METHOD, LIST_METHOD, Blocked, Entry, chosen, run_chain
from .logic import (
    MiddlewareFailure,
    ServerError,
    apply_augmentation,
    blocks_text,
    filter_hint_tools,
    is_preprocessor,
    middleware_result,
    offered_tools,
    ordered_middleware,
    parse_tool_arguments,
    preprocessor_arguments,
    preprocessor_message,
    resolve_metadata_refs,
    suggested_tool_set,
    text_context,
    tool_result_text,
)

log = logging.getLogger("reference_host")

MAX_TOOL_ROUNDS = 10


class Host:
    """Holds the history and the application-only middleware metadata across turns.

    `servers` is ordered as in `mcpServers`; each has `name`, `capabilities`, `tools`
    and `request(method, params)`. `complete(messages, tools)` asks the model.
    """

    def __init__(self, servers: list[Any], config: dict, complete: Callable[[list, list], Awaitable[dict]],
                 system_prompt: str | None = None) -> None:
        self.servers = {s.name: s for s in servers}
        self.order = [s.name for s in servers]
        # Tool lists as of start-up; a server that failed contributes none (its requests fail cleanly).
        self.server_tools = {s.name: [] if getattr(s, "failed", None) else list(s.tools) for s in servers}
        self.middleware = config.get("contextMiddleware") or []
        known = config.get("knownRequirements") or {}
        self.known = known if isinstance(known, dict) else {}
        self.complete = complete
        self.system_prompt = system_prompt
        self.history: list[dict] = []
        self.metadata: dict[str, Any] = {}  # middleware name -> latest metadata; never sent to the model
        wanted = config.get("interceptors")
        self.interceptor_config = wanted if isinstance(wanted, list) else []
        self.interceptors: list[Entry] | None = None  # None until discovered
        self.interceptors_broken: str | None = None
        self.turn_tools: set[str] | None = None  # this turn's `filter` hint: the tools kept (None: all)
        self.collecting_filter = False  # only the user message's middleware filters the turn's tools
        self.tools, self.routes, filtered, refused = offered_tools(
            [(name, self.server_tools[name]) for name in self.order], self.known)
        if filtered:
            log.info("left out for known-unsatisfiable execution requirements: %s", ", ".join(filtered))
        if refused:
            log.error("not offered, their names clash even with server prefixes: %s", ", ".join(refused))

    async def turn(self, user_text: str) -> dict:
        """One user turn -> the line to print."""
        self.turn_tools, self.collecting_filter = None, True
        try:
            message = blocks_text(await self.run_middleware("request", text_context(user_text), "user"))
        except MiddlewareFailure as exc:
            self.collecting_filter = False
            log.error("request-phase middleware failed; the message is not sent: %s", exc)
            return {"role": "assistant", "content": "", "error": f"request-phase middleware failed: {exc}"}

        self.collecting_filter = False
        context = preprocessor_message(await self.run_preprocessors(message))
        turn_messages: list[dict] = [{"role": "user", "content": message}]
        try:
            answer = await self.converse(context, turn_messages)
        except Exception as exc:  # noqa: BLE001 - the model failed; the conversation goes on without this turn
            log.error("model request failed: %s", exc)
            return {"role": "assistant", "content": "", "error": f"model request failed: {exc}"}
        # History keeps what the model saw and wrote, before response-phase middleware.
        self.history.extend(turn_messages)
        self.history.append({"role": "assistant", "content": answer})

        try:
            shown = blocks_text(await self.run_middleware("response", text_context(answer)))
        except MiddlewareFailure as exc:
            log.error("response-phase middleware failed; printing the model's answer as is: %s", exc)
            return {"role": "assistant", "content": answer, "error": f"response-phase middleware failed: {exc}"}
        return {"role": "assistant", "content": shown}

    # -- step 1 / 5 ------------------------------------------------------------------------------

    async def run_middleware(self, phase: str, context: list[dict], source: str | None = None) -> list[dict]:
        try:
            entries = ordered_middleware(self.middleware, phase, source)
        except ValueError as exc:
            raise MiddlewareFailure(str(exc)) from None
        for entry in entries:
            context = await self.invoke(entry, context)
        return context

    async def for_model(self, source: str, text: str) -> str:
        """Server-made text on its way to the model (`preprocessor` output, a `tool` result), after the
        request-phase middleware that applies to it, so that what redacts the user's message redacts this
        too; MiddlewareFailure when one fails (the caller withholds the text)."""
        return blocks_text(await self.run_middleware("request", text_context(text), source))

    async def invoke(self, entry: dict, context: list[dict]) -> list[dict]:
        name = entry.get("name")
        server = self.servers.get(entry.get("server"))
        label = f"{entry.get('server')}/{name}"
        if server is None or not isinstance(name, str):
            raise MiddlewareFailure(f"{label}: no such server configured")
        arguments = entry.get("arguments")
        arguments = resolve_metadata_refs(arguments if isinstance(arguments, dict) else {}, self.metadata)
        params = {"name": name, "arguments": arguments, "context": context}
        try:
            if "contextMiddleware" in server.capabilities:
                content, metadata = middleware_result(await server.request("middleware/invoke", params))
                kept = suggested_tool_set(metadata)
                if kept is not None and self.collecting_filter:
                    self.turn_tools = kept if self.turn_tools is None else self.turn_tools & kept
            elif "augmentation" in server.capabilities:
                result = await server.request("augmentation/augment", params)
                content, metadata = apply_augmentation(context, result)
                kept = filter_hint_tools(result)
                if kept is not None and self.collecting_filter:
                    self.turn_tools = kept if self.turn_tools is None else self.turn_tools & kept
            elif getattr(server, "failed", None):
                raise MiddlewareFailure(f"the server is not connected ({server.failed})")
            else:
                raise MiddlewareFailure("the server advertises neither contextMiddleware nor augmentation")
        except ServerError as exc:
            raise MiddlewareFailure(f"{label}: {exc}") from None
        except MiddlewareFailure as exc:
            raise MiddlewareFailure(f"{label}: {exc}") from None
        if metadata is not None:
            self.metadata[name] = metadata
        return content

    # -- interceptors (SEP-2624) around every tools/call ---------------------------------------------

    async def discover_interceptors(self) -> None:
        """`interceptors/list` on each configured server; what cannot be listed breaks the chain (fail closed)."""
        entries: list[Entry] = []
        problems = []
        for wanted in self.interceptor_config:
            server = self.servers.get(wanted.get("server")) if isinstance(wanted, dict) else None
            if server is None:
                problems.append(f"{wanted!r}: no such server configured")
                continue
            extensions = server.capabilities.get("extensions")
            if not isinstance(extensions, dict) or EXTENSION not in extensions:
                problems.append(f"{server.name} does not advertise {EXTENSION}")
                continue
            try:
                listed = (await server.request(LIST_METHOD, {})).get("interceptors")
            except ServerError as exc:
                problems.append(str(exc))
                continue
            picked = chosen(listed if isinstance(listed, list) else [], wanted)
            if not picked:
                problems.append(f"{server.name} lists no interceptor {wanted.get('name') or ''}".rstrip())
            overrides = wanted.get("overrides")
            if overrides is not None and wanted.get("name") is None:
                log.error("%s: overrides apply to one interceptor, named with \"name\"; entry refused", server.name)
                continue
            for definition in picked:
                try:
                    entries.append(Entry(server.name, definition, overrides))
                except ValueError as exc:  # the SEP: override hooks that widen the declared ones are rejected
                    log.error("interceptor %s/%s refused, its overrides cannot be applied: %s", server.name,
                              definition.get("name"), exc)
        self.interceptors = entries
        self.interceptors_broken = "; ".join(problems) or None
        if self.interceptor_config:
            log.info("interceptors: %s", ", ".join(f"{e.server}/{e.name}" for e in entries) or "none")
        if problems:
            log.error("interceptors unavailable, every tool call is blocked: %s", self.interceptors_broken)

    async def call_tool_server(self, server_name: str, params: dict) -> dict:
        """`tools/call` through the interceptor chain: request phase, the call, response phase.
        Blocked when the chain stops it, ServerError when the call fails."""
        if self.interceptors is None:
            await self.discover_interceptors()
        server = self.servers[server_name]
        if self.interceptors_broken:
            raise Blocked(f"the interceptors could not be discovered ({self.interceptors_broken})")
        if not self.interceptors:
            return await server.request("tools/call", params)
        payload = await run_chain(self.interceptors, "tools/call", "request",
                                  {"method": "tools/call", "params": params}, self.invoke_interceptor)
        sent = payload.get("params") if isinstance(payload, dict) else None
        if not isinstance(sent, dict):
            raise Blocked("the mutated request carries no params object")
        result = await server.request("tools/call", sent)
        result = await run_chain(self.interceptors, "tools/call", "response", result, self.invoke_interceptor)
        if not isinstance(result, dict):
            raise Blocked("the mutated result is not an object")
        return result

    async def invoke_interceptor(self, entry: Entry, params: dict) -> Any:
        """One interceptor/invoke; an override's timeoutMs is passed on and bounds the wait (ServerError when
        exceeded, then routed by failOpen and mode as any failure)."""
        if entry.timeout_ms is None:
            return await self.servers[entry.server].request(INVOKE_METHOD, params)
        return await self.servers[entry.server].request(INVOKE_METHOD, {**params, "timeoutMs": entry.timeout_ms},
                                                        timeout=entry.timeout_ms / 1000)

    # -- step 2 ----------------------------------------------------------------------------------

    async def run_preprocessors(self, message: str) -> list[tuple[str, str, str]]:
        """Every preprocessor tool, in server then list order, one after the other."""
        outputs = []
        for server_name in self.order:
            for tool in self.server_tools[server_name]:
                if not is_preprocessor(tool) or not isinstance(tool.get("name"), str):
                    continue
                arguments = preprocessor_arguments(tool.get("inputSchema"), message)
                try:
                    result = await self.call_tool_server(server_name, {"name": tool["name"], "arguments": arguments})
                except (ServerError, Blocked) as exc:
                    log.error("preprocessor %s/%s failed: %s", server_name, tool["name"], exc)
                    continue
                text = tool_result_text(result)
                if result.get("isError") is True:
                    # An error is not context about the user; the model is better off without it.
                    log.warning("preprocessor %s/%s returned an error: %s", server_name, tool["name"], text)
                    continue
                try:
                    text = await self.for_model("preprocessor", text)
                except MiddlewareFailure as exc:
                    log.error("preprocessor %s/%s output withheld from the model: %s", server_name, tool["name"], exc)
                    continue
                outputs.append((server_name, tool["name"], text))
        return outputs

    # -- steps 3 and 4 -----------------------------------------------------------------------------

    async def converse(self, context: dict | None, turn_messages: list[dict]) -> str:
        """Ask the model until it answers without tool calls; `turn_messages` grows with the calls."""
        prefix = [{"role": "system", "content": self.system_prompt}] if self.system_prompt else []
        for _ in range(MAX_TOOL_ROUNDS):
            # The preprocessor context sits just before this turn's user message, in every request of the turn.
            messages = prefix + self.history + ([context] if context else []) + turn_messages
            reply = await self.complete(messages, self.offered())
            calls = reply.get("tool_calls") or []
            if not calls:
                return reply.get("content") or ""
            turn_messages.append(reply)
            for call in calls:
                turn_messages.append({"role": "tool", "tool_call_id": call["id"],
                                      "content": await self.tool_message(call["function"])})
        raise RuntimeError(f"the model was still calling tools after {MAX_TOOL_ROUNDS} rounds")

    def offered(self) -> list[dict]:
        """This turn's tools: all of them, or those a `filter` hint kept (by the name the server gave)."""
        if self.turn_tools is None:
            return self.tools
        return [t for t in self.tools if self.routes[t["function"]["name"]][1] in self.turn_tools]

    async def tool_message(self, function: dict) -> str:
        """The tool message's text: the call's result (or error) after request-phase middleware."""
        text = await self.call_tool(function)
        try:
            return await self.for_model("tool", text)
        except MiddlewareFailure as exc:
            log.error("result of %s withheld from the model: %s", function.get("name"), exc)
            return "Error: the tool's result was withheld: the request-phase middleware failed on it."

    async def call_tool(self, function: dict) -> str:
        name = function.get("name")
        route = self.routes.get(name)
        if route is not None and self.turn_tools is not None and route[1] not in self.turn_tools:
            route = None  # left out by this turn's filter hint: not offered, so not called
        if route is None:
            log.warning("the model asked for %r, which was not offered; not calling it", name)
            return f"Error: the tool {name!r} is not available."
        try:
            arguments = parse_tool_arguments(function.get("arguments"))
        except ValueError as exc:
            return f"Error: the arguments for {name!r} are not a JSON object: {exc}"
        server_name, tool_name = route
        try:
            result = await self.call_tool_server(server_name, {"name": tool_name, "arguments": arguments})
        except ServerError as exc:
            log.error("tool %s/%s failed: %s", server_name, tool_name, exc)
            return f"Error: {exc}"
        except Blocked as exc:
            log.warning("tool call %s/%s stopped by the interceptors: %s", server_name, tool_name, exc)
            return f"Error: the interceptors stopped this tool call or withheld its result: {exc}"
        return tool_result_text(result)
