"""The reference server's App: the conformance fixtures, then the real middleware and tools.

Configuration (JSON, see __main__.py): which profiles, which middleware, the
satisfied requirement strings, the memory store and the retrieval corpus.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Callable

from .. import fixtures, interceptors
from ..core import App, JsonRpcError, Limits, Session, ToolDef, ToolFailure
from ..limits import LimitExceeded, check_size, json_chars, string_chars
from ..middleware import AUGMENTATIONS, MIDDLEWARE, retrieval
from ..middleware.memory import MAX_BYTES, MAX_COUNT, MemoryStore, SessionStores

SERVER_PROFILES = ("preprocessor-tools", "execution-requirements", "context-middleware", "augmentation", "interceptors")
MEMORY_ADMIN = "auth:role:memory_admin"
STATELESS_SESSION = "process"  # the session key the 2.x adapter gives requests of the stateless mode


def default_memory_path() -> str:
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(state, "mcp-ext-reference", "memories.sqlite")


def build_app(config: dict) -> App:
    app = App(limits=Limits.from_config(config.get("limits")))
    profiles = set(config.get("profiles") or SERVER_PROFILES)
    unknown = profiles - set(SERVER_PROFILES)
    if unknown:
        raise ValueError(f"unknown profile(s) in config: {', '.join(sorted(unknown))}")
    if config.get("fixtures", True):
        fixtures.register(app, profiles)
    app.satisfied.update(config.get("satisfiedRequirements") or ())
    register_real(app, config, profiles)
    if "interceptors" in profiles:  # SEP-2624: fixtures and real interceptors live in reference_servers/interceptors.py
        app.interceptors = interceptors.build(fixtures=config.get("fixtures", True))
        if config.get("fixtures", True):
            fixtures.register_guarded(app)  # guarded by the interceptors above, so registered after them
    return app


def register_real(app: App, config: dict, profiles: set[str]) -> None:
    """The middleware, preprocessor and gated tools a team would deploy."""
    wanted = config.get("middleware")
    known = {spec.name for spec in MIDDLEWARE}
    if wanted is not None and set(wanted) - known:
        raise ValueError(f"unknown middleware in config: {', '.join(sorted(set(wanted) - known))}")
    chosen = known if wanted is None else set(wanted)
    if config.get("corpus"):
        retrieval.use_default_corpus(config["corpus"])
    for spec in MIDDLEWARE:
        if "context-middleware" in profiles and spec.name in chosen:
            app.add_middleware(spec)
    for spec in AUGMENTATIONS:
        if "augmentation" in profiles and spec.name in chosen:
            app.add_augmentation(spec)
    if config.get("memory", True) and profiles & {"preprocessor-tools", "execution-requirements"}:
        register_memory_tools(app, memory_stores(config, app), profiles)


def memory_stores(config: dict, app: App) -> Callable[[Session], MemoryStore]:
    """Whose memories a session sees. `memoryScope` "session" (the default): its own only, kept in memory
    for the session's life. "shared", only when configured (__main__ also picks it over stdio when a store
    is named explicitly): one store, the file, for every session and every process given the same path."""
    scope = config.get("memoryScope", "session")
    caps = {"max_count": config.get("memoryMaxCount", MAX_COUNT), "max_bytes": config.get("memoryMaxBytes", MAX_BYTES)}
    for key, value in caps.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{'memoryMaxCount' if key == 'max_count' else 'memoryMaxBytes'} must be a positive integer")
    if scope == "session":
        stores = SessionStores(**caps)

        def own(session: Session) -> MemoryStore:
            # The stateless 2026-07-28 mode has no session: every client shares the adapters' process key
            # (sdk/_v2.py session_key), so there is no one to keep memories for.
            if session is app.sessions.get(STATELESS_SESSION):
                raise ToolFailure("memories are kept per session, and this request belongs to none (stateless "
                                  "mode); connect with a session, or configure memoryScope \"shared\"")
            return stores.for_owner(session)

        return own
    if scope != "shared":
        raise ValueError(f"memoryScope must be 'session' or 'shared', got {scope!r}")
    path = config.get("memoryStore") or os.environ.get("MCPX_MEMORY_STORE") or default_memory_path()
    if path != ":memory:":
        Path(path).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    shared = MemoryStore(path, **caps)
    return lambda session: shared


def register_memory_tools(app: App, stores: Callable[[Session], MemoryStore], profiles: set[str]) -> None:
    def bounded(name: str, work: Callable[[dict, MemoryStore], list[dict]]):
        """A memory tool under the limits every other entry point has (reference_servers/limits.py): its
        arguments' text (maxTextChars) and size (maxInputChars) checked first, the work in a worker thread
        (maxSeconds, maxConcurrent), the result's size checked (maxOutputChars); over one, the same JSON-RPC
        error as there."""
        def limited(args: dict, store: MemoryStore) -> list[dict]:
            limits = app.limits
            try:
                check_size("maxTextChars", limits.max_text_chars, string_chars(args, limits.max_text_chars),
                           f"tools/call {name}: the arguments' text")
                check_size("maxInputChars", limits.max_input_chars, json_chars(args, limits.max_input_chars),
                           f"tools/call {name}: the arguments")
                try:
                    content = work(args, store)
                except ValueError as exc:  # a store's caps (MemoryFull) or a bad argument: the tool's error
                    raise ToolFailure(str(exc)) from None
                check_size("maxOutputChars", limits.max_output_chars, json_chars(content, limits.max_output_chars),
                           f"the result of {name}")
                return content
            except LimitExceeded as exc:
                raise JsonRpcError(exc.code, exc.message, exc.data) from None

        async def handler(args: dict, session: Session) -> list[dict]:
            return await app._run_bounded(f"tools/call {name}", functools.partial(limited, args, stores(session)), args)

        return handler

    def retrieve_memories(args: dict, store: MemoryStore) -> list[dict]:
        hits = store.search(args["query"], int(args.get("limit", 5)))
        if not hits:
            return [{"type": "text", "text": "No relevant memories."}]
        lines = "\n".join(f"- {h['text']} (remembered {h['createdAt']}, score {h['score']})" for h in hits)
        return [{"type": "text", "text": f"Relevant memories:\n{lines}"}]

    def remember(args: dict, store: MemoryStore) -> list[dict]:
        memory_id = store.remember(args["text"], args.get("tags"))
        return [{"type": "text", "text": f"Remembered (id {memory_id})."}]

    async def forget_memory(args: dict, session: Session) -> list[dict]:
        if not stores(session).forget(int(args["id"])):
            raise ToolFailure(f"no memory with id {args['id']}")
        return [{"type": "text", "text": f"Forgot memory {args['id']}."}]

    if "preprocessor-tools" in profiles:
        app.add_tool(ToolDef("RetrieveMemories", "Retrieves the user's memories relevant to the prompt. A "
                             "preprocessor: hosts run it before every prompt and never offer it to the model.",
                             {"type": "object", "properties": {
                                 "query": {"type": "string", "description": "The user input to match against memories"},
                                 "limit": {"type": "integer", "minimum": 1, "maximum": 20, "default": 5}},
                              "required": ["query"]}, bounded("RetrieveMemories", retrieve_memories), {"preprocessor": True}))
        app.add_tool(ToolDef("remember", "Store a memory about the user for later prompts.",
                             {"type": "object", "properties": {"text": {"type": "string"},
                                                               "tags": {"type": "array", "items": {"type": "string"}}},
                              "required": ["text"]}, bounded("remember", remember)))
    if "execution-requirements" in profiles:
        app.add_tool(ToolDef("forget_memory", f"Delete one memory by id. Requires {MEMORY_ADMIN}.",
                             {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]},
                             forget_memory, {"execution": {"requirements": [MEMORY_ADMIN]}}))
