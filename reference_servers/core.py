"""The reference server's behaviour, independent of any SDK release.

An `App` holds the tools (with their extension fields), the context middleware
and the augmentations a deployment offers, and the requirement strings it
satisfies. Everything the extensions define is decided here, once:

- `call_tool` enforces `execution.requirements` before the tool body runs: each
  declared string must be in `satisfied` by exact string equality (SEP-2487: no
  case folding, no normalisation); an unmet call fails as a tool error that
  names what is unmet, and the body never runs. A tool with a `guard` (the
  fixture contract's guarded tools, SEP-2624's server-side invocation) has its
  request run through the server's own interceptor chain before the body, on
  the arguments the chain passed, and its result before it is sent; a denied
  chain is the JSON-RPC error the guard raises, and the body never runs.
- `handle_extension` serves `middleware/list`, `middleware/invoke`,
  `augmentation/list` and `augmentation/augment`, validating parameters and
  arguments (JSON Schema 2020-12) and answering faults with JSON-RPC errors.
  Every one of them (interceptors too) runs in a worker thread, never on the
  event loop, so one heavy call cannot stall the other sessions, under the
  same limits (reference_servers/limits.py: text, input and output sizes,
  time, concurrency); a call over a limit gets a JSON-RPC error naming it,
  and a call whose time is up or whose caller has gone stops at its next
  checkpoint, holding its worker slot until it has.
- Per-session state (`Session`) lives until the adapter reports that the
  session ended (`end_session`).
- A list toggle (`add_list_toggle`, the fixture `conformance_list_toggle`)
  adds an augmentation to its session's `augmentation/list`, or removes it;
  the capability says `listChanged: true` and each change is followed by
  `notifications/augmentation/list_changed` to that session (through the
  `notify` the adapter passes, related to the request that made the change).

The SDK adapters (reference_servers/sdk/) only put this on the wire.
"""

from __future__ import annotations

import copy
import functools
import logging
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

import anyio
from jsonschema import Draft202012Validator

from .limits import CallControl, Cancelled, LimitExceeded, Limits, check_size, json_chars, string_chars

__all__ = ["App", "AugmentationDef", "JsonRpcError", "Limits", "MiddlewareDef", "Session", "ToolDef", "ToolFailure"]

log = logging.getLogger("reference_servers")

INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
LIST_CHANGED = "notifications/augmentation/list_changed"  # PR #142's schema
SERVER_ERROR = -32000  # JSON-RPC's range for implementation-defined server errors starts here
EXTENSION_METHODS = ("middleware/list", "middleware/invoke", "augmentation/list", "augmentation/augment",
                     "interceptors/list", "interceptor/invoke")  # the last two: reference_servers/interceptors.py


class JsonRpcError(Exception):  # like conformance.targets.peerkit.RpcError on purpose: the reference shares no code with its judge
    def __init__(self, code: int, message: str, data: Any = None):
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


class ToolFailure(Exception):
    """A tool body's failure, reported to the caller as a result with isError: true."""


@dataclass
class Session:
    """Per MCP session state (one stdio connection, one HTTP session)."""

    gated_runs: int = 0  # how many times the body of a gated tool has run
    toggled: set = field(default_factory=set)  # augmentations a list toggle has added to this session's list


@dataclass
class ToolDef:
    name: str
    description: str
    input_schema: dict
    handler: Callable[[dict, Session], Awaitable[list[dict]]]  # returns content blocks; raises ToolFailure
    extensions: dict = field(default_factory=dict)  # extra Tool fields, on the wire verbatim
    # A server that guards the tool with its own interceptors (SEP-2624's server-side invocation): guard(phase,
    # payload) runs the chain for "request" (the tools/call as received) or "response" (the result to send) and
    # returns the payload to go on with, or raises JsonRpcError when the chain denies it. Runs in a worker thread.
    guard: Callable[[str, Any], Any] | None = None

    @property
    def requirements(self) -> list[str]:
        execution = self.extensions.get("execution") or {}
        return list(execution.get("requirements") or ())

    def to_wire(self) -> dict:
        return {"name": self.name, "description": self.description, "inputSchema": self.input_schema,
                **copy.deepcopy(self.extensions)}


@dataclass(frozen=True)
class MiddlewareDef:
    """One middleware: what `middleware/list` shows and the function `middleware/invoke` runs.

    The one definition: reference_servers.middleware declares its middleware with it (as `MiddlewareSpec`).
    """

    name: str
    description: str
    input_schema: dict
    fn: Callable[[list[dict], dict], dict]  # (context, arguments) -> {"content": [...], "metadata"?: {...}}

    def to_wire(self) -> dict:
        return {"name": self.name, "description": self.description, "inputSchema": self.input_schema}


@dataclass(frozen=True)
class AugmentationDef(MiddlewareDef):
    """The same for `augmentation/list` and `augmentation/augment` (MCP PR #142).

    `fn` answers `{"content": [{"content": block, "properties": {...}}], "hint": str, "metadata"?: {...}}`.
    """


@dataclass
class App:
    name: str = "mcp-ext-reference"
    version: str = "0.1.0"
    tools: dict[str, ToolDef] = field(default_factory=dict)
    middleware: dict[str, MiddlewareDef] = field(default_factory=dict)
    augmentations: dict[str, AugmentationDef] = field(default_factory=dict)
    satisfied: set[str] = field(default_factory=set)
    interceptors: Any = None  # an interceptors.InterceptorRegistry, when the deployment offers interceptors
    # toggle augmentation name -> the augmentation each invocation adds to or removes from its session's list
    list_toggles: dict[str, AugmentationDef] = field(default_factory=dict)
    sessions: dict[Any, Session] = field(default_factory=dict)
    limits: Limits = field(default_factory=Limits)
    _limiter: Any = field(default=None, repr=False)

    # -- registration --------------------------------------------------------------------
    def add_tool(self, tool: ToolDef) -> None:
        self.tools[tool.name] = tool

    def add_middleware(self, item: MiddlewareDef) -> None:
        self.middleware[item.name] = item

    def add_augmentation(self, item: AugmentationDef) -> None:
        self.augmentations[item.name] = item

    def add_list_toggle(self, toggle: AugmentationDef, toggled: AugmentationDef) -> None:
        self.add_augmentation(toggle)
        self.list_toggles[toggle.name] = toggled

    def session(self, key: Any) -> Session:
        return self.sessions.setdefault(key, Session())

    def end_session(self, key: Any) -> None:
        """Free what a session held; adapters call this when the transport says the session is over."""
        self.sessions.pop(key, None)

    # -- what the adapters put on the wire -------------------------------------------------
    def capabilities(self) -> dict:
        """Extension capabilities to merge into the SDK's own."""
        caps: dict = {}
        if self.middleware:
            caps["contextMiddleware"] = {}
        if self.augmentations:
            caps["augmentation"] = {"listChanged": bool(self.list_toggles)}
        if self.interceptors:
            from .interceptors import EXTENSION_ID

            caps["extensions"] = {EXTENSION_ID: self.interceptors.capability()}
        return caps

    def tool_list(self) -> list[dict]:
        return [tool.to_wire() for tool in self.tools.values()]

    def patch_tool_list(self, result: dict) -> dict:
        """Put each tool's extension fields back on a tools/list result an SDK produced."""
        for tool in result.get("tools") or ():
            mine = self.tools.get(tool.get("name"))
            if mine is not None:
                tool.update(copy.deepcopy(mine.extensions))
        return result

    def patch_capabilities(self, result: dict) -> dict:
        caps = result.setdefault("capabilities", {})
        mine = self.capabilities()
        if isinstance(caps.get("extensions"), dict) and "extensions" in mine:  # keep the SDK's own extensions
            mine["extensions"] = {**caps["extensions"], **mine["extensions"]}
        caps.update(mine)
        return result

    # -- tools/call --------------------------------------------------------------------------
    def unmet(self, tool: ToolDef) -> list[str]:
        return [req for req in tool.requirements if req not in self.satisfied]

    async def call_tool(self, name: str, arguments: dict | None, session_key: Any) -> dict:
        tool = self.tools.get(name)
        if tool is None:
            raise JsonRpcError(INVALID_PARAMS, f"Unknown tool: {name}")
        unmet = self.unmet(tool)
        if unmet:  # enforced before the body, so an unmet call has no side effect
            return error_result(f"unmet execution requirements: {', '.join(unmet)}",
                                {"unmetRequirements": unmet})
        arguments = arguments or {}
        if tool.guard is not None:  # receiving: the chain sees the request as it crossed the trust boundary
            received = {"method": "tools/call", "params": {"name": name, "arguments": arguments}}
            passed = await self._run_bounded(f"tools/call {name}", functools.partial(tool.guard, "request", received))
            params = passed.get("params") if isinstance(passed, dict) else None
            # The tool the client named runs (a mutation cannot re-route a call), on the arguments the chain passed.
            arguments = params.get("arguments") if isinstance(params, dict) else None
            if not isinstance(arguments, dict):
                raise JsonRpcError(INTERNAL_ERROR, f"the interceptor chain of {name} left no arguments object")
        problems = schema_problems(tool.input_schema, arguments)
        if problems:
            return error_result(f"invalid arguments for {name}: {'; '.join(problems)}")
        try:
            content = await tool.handler(arguments, self.session(session_key))
        except ToolFailure as exc:
            return error_result(str(exc))
        result = {"content": content}
        if tool.guard is not None:  # sending: the chain sees the result before it crosses the boundary
            result = await self._run_bounded(f"tools/call {name}", functools.partial(tool.guard, "response", result))
        return result

    # -- extension methods -----------------------------------------------------------------
    def session_augmentations(self, session_key: Any) -> dict[str, AugmentationDef]:
        """The augmentations a session lists: the deployment's, then those its toggles added."""
        toggled = self.sessions[session_key].toggled if session_key in self.sessions else set()
        added = {a.name: a for a in self.list_toggles.values() if a.name in toggled}
        return {**self.augmentations, **added}

    async def handle_extension(self, method: str, params: Any, session_key: Any = None,
                               notify: Callable[[str, dict | None], Awaitable[None]] | None = None) -> dict:
        """Serve one of EXTENSION_METHODS; raises JsonRpcError for faults. `notify` sends a notification to the
        session that asked (related to its request), for a list toggle's list_changed."""
        if params is None:
            params = {}
        if not isinstance(params, dict):
            raise JsonRpcError(INVALID_PARAMS, "params must be an object")
        if method == "middleware/list":
            return {"middleware": [m.to_wire() for m in self.middleware.values()]}
        if method == "augmentation/list":
            return {"augmentations": [a.to_wire() for a in self.session_augmentations(session_key).values()]}
        if method in ("interceptors/list", "interceptor/invoke"):
            if not self.interceptors:
                raise JsonRpcError(-32601, f"Method not found: {method}")
            return await self._run_bounded(method, functools.partial(self._intercept, method, params), params)
        registry = self.session_augmentations(session_key) if method == "augmentation/augment" else None
        result = await self._run_bounded(method, functools.partial(self._invoke, method, params, registry), params)
        name = params.get("name")
        toggled = self.list_toggles.get(name) if method == "augmentation/augment" and isinstance(name, str) else None
        if toggled is not None:
            self.session(session_key).toggled ^= {toggled.name}
            if notify is not None:
                await notify(LIST_CHANGED, None)
        return result

    async def _run_bounded(self, label: str, work: Callable[[], dict], inputs: Any = None) -> dict:
        """work() in a worker thread under this server's limits (reference_servers/limits.py): `inputs` counted
        against maxInputChars before the call may wait; at most maxQueued calls waiting (past it: -32000 busy, at
        once); a slot among maxConcurrent, held until the thread has really stopped; maxSeconds from when the slot
        is had; the sizes work() checks itself. A call whose time is up, or whose caller has gone (cancelled
        request, ended session), is cancelled and waited for: it stops at its next checkpoint, within milliseconds."""
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(self.limits.max_concurrent)
        if inputs is not None:
            try:
                check_size("maxInputChars", self.limits.max_input_chars,
                           json_chars(inputs, self.limits.max_input_chars), f"{label}: the input")
            except LimitExceeded as exc:
                raise JsonRpcError(exc.code, exc.message, exc.data) from None
        if self._limiter.available_tokens < 1 and self._limiter.statistics().tasks_waiting >= self.limits.max_queued:
            raise JsonRpcError(SERVER_ERROR, f"{label}: the server is busy ({self.limits.max_concurrent} calls running "
                               f"and {self.limits.max_queued} waiting, its limits maxConcurrent and maxQueued); "
                               "try again later", {"limit": "maxQueued", "maxQueued": self.limits.max_queued})
        control = CallControl(self.limits)
        async with self._limiter:
            try:
                with anyio.fail_after(self.limits.max_seconds):
                    return await anyio.to_thread.run_sync(control.run, work, abandon_on_cancel=True)
            except TimeoutError:
                control.cancel("maxSeconds")
                await _stopped(control)
                raise JsonRpcError(SERVER_ERROR, f"{label} did not finish within this server's limit of "
                                   f"{self.limits.max_seconds:g} s; it was stopped",
                                   {"limit": "maxSeconds", "maxSeconds": self.limits.max_seconds}) from None
            finally:
                if not control.finished.is_set():  # the caller has gone (a timeout has waited already)
                    control.cancel("the caller has gone")
                    # Not started yet: CallControl.run sees the flag and returns at once, if it ever runs.
                    with anyio.CancelScope(shield=True):
                        await _stopped(control)

    def _invoke(self, method: str, params: dict, registry: dict | None = None) -> dict:
        """middleware/invoke and augmentation/augment, in the worker thread: sizes first, then the schema."""
        if registry is None:
            registry = self.middleware if method == "middleware/invoke" else self.augmentations
        kind = "middleware" if method == "middleware/invoke" else "augmentation"
        name = params.get("name")
        if not isinstance(name, str):
            raise JsonRpcError(INVALID_PARAMS, f"{method}: name must be a string")
        item = registry.get(name)
        if item is None:
            raise JsonRpcError(INVALID_PARAMS, f"Unknown {kind}: {name}")
        context = params.get("context")
        if not isinstance(context, list) or not all(isinstance(b, dict) and isinstance(b.get("type"), str)
                                                    for b in context):
            raise JsonRpcError(INVALID_PARAMS, f"{method}: context must be an array of content blocks")
        arguments = params.get("arguments", {})
        if not isinstance(arguments, dict):
            raise JsonRpcError(INVALID_PARAMS, f"{method}: arguments must be an object")
        limits = self.limits
        try:
            size = sum(len(b["text"]) for b in context if b.get("type") == "text" and isinstance(b.get("text"), str))
            check_size("maxTextChars", limits.max_text_chars, size, f"{method}: the context's text blocks")
            check_size("maxInputChars", limits.max_input_chars, json_chars(params, limits.max_input_chars),
                       f"{method}: the context and arguments")
            problems = schema_problems(item.input_schema, arguments)
            if problems:
                raise JsonRpcError(INVALID_PARAMS, f"invalid arguments for {kind} {name}: {'; '.join(problems)}",
                                   {"errors": problems})
            result = item.fn(copy.deepcopy(context), copy.deepcopy(arguments))
            check_size("maxOutputChars", limits.max_output_chars, json_chars(result, limits.max_output_chars),
                       f"the result of {kind} {name}")
            return result
        except LimitExceeded as exc:
            raise JsonRpcError(exc.code, exc.message, exc.data) from None
        except (JsonRpcError, Cancelled):
            raise
        except ValueError as exc:  # semantically wrong arguments, beyond what the schema says
            raise JsonRpcError(INVALID_PARAMS, f"{kind} {name}: {exc}") from None
        except Exception as exc:  # a bug in a middleware must not take the connection down
            log.exception("%s %s failed", kind, name)
            raise JsonRpcError(INTERNAL_ERROR, f"{kind} {name} failed: {type(exc).__name__}") from None

    def _intercept(self, method: str, params: dict) -> dict:
        """interceptors/list and interceptor/invoke, in the worker thread, under the same limits."""
        from .interceptors import InterceptorError

        limits = self.limits
        try:
            check_size("maxTextChars", limits.max_text_chars, string_chars(params.get("payload"), limits.max_text_chars),
                       f"{method}: the payload's strings")
            check_size("maxInputChars", limits.max_input_chars, json_chars(params, limits.max_input_chars),
                       f"{method}: the params")
            result = self.interceptors.handle(method, params)
            check_size("maxOutputChars", limits.max_output_chars, json_chars(result, limits.max_output_chars),
                       f"the result of {method}")
            return result
        except LimitExceeded as exc:
            raise JsonRpcError(exc.code, exc.message, exc.data) from None
        except InterceptorError as err:
            raise JsonRpcError(err.code, err.message, err.data) from None


async def _stopped(control: CallControl) -> None:
    """Until the cancelled call's thread has returned (it stops at its next checkpoint)."""
    while control.started.is_set() and not control.finished.is_set():
        await anyio.sleep(0.005)


def error_result(text: str, structured: dict | None = None) -> dict:
    out: dict = {"content": [{"type": "text", "text": text}], "isError": True}
    del structured  # kept out of the wire: structuredContent needs an outputSchema
    return out


_validators: dict[int, Draft202012Validator] = {}


def schema_problems(schema: dict, instance: Any) -> list[str]:
    validator = _validators.get(id(schema))
    if validator is None:
        validator = _validators[id(schema)] = Draft202012Validator(schema)
    out = []
    for error in validator.iter_errors(instance):
        where = "/".join(str(p) for p in error.absolute_path)
        out.append(f"{where + ': ' if where else ''}{error.message}")
    return out
