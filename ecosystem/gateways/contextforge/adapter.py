"""Pipeline adapter for IBM ContextForge 1.0.7 (`pip install mcp-contextforge-gateway==1.0.7.post20260921`),
whose plugins run on CPEX 0.1.3 (`cpex.framework`, installed with it).

    mcp-ext-conformance gateway --adapter ecosystem.gateways.contextforge.adapter:factory
    mcp-ext-conformance gateway --adapter ecosystem.gateways.contextforge.adapter:factory_all_sequential

What runs is CPEX's own code, built the way the gateway builds it: a `Config` of `PluginConfig`s (name,
`kind` naming a plugin class, `mode`, `priority` only when the fixture gives one, `hooks:
[tool_post_invoke]`, the behaviour in the plugin's own `config`), a `TenantPluginManager` with the
gateway's `HOOK_PAYLOAD_POLICIES`, `initialize()`. CPEX has no plugin kinds; it has modes, which say
what a plugin may do. The fixture kinds map to the modes made for them (`factory`): middleware is
TRANSFORM (chained, may modify, cannot block), security is SEQUENTIAL (chained, may modify and
block), auditing is AUDIT (observes; modifications discarded). `factory_all_sequential` runs
middleware as SEQUENTIAL too: one priority-ordered chain, the closest CPEX comes to one pipeline.

`process_response` replays the gateway's post-invoke step (mcpgateway/services/tool_service.py):
`invoke_hook("tool_post_invoke", ToolPostInvokePayload(name, result), violations_as_exceptions=True)`;
a `PluginViolationError` (a block) or `PluginError` (a failing plugin, `on_error: fail`, the default)
ends the call with an error whose message is `str(exc)`, which is the outcome's reason; otherwise the
modified payload's `result` is delivered. The result goes in as the upstream sent it, not through the
gateway's `ToolResult` model, whose defaults are transport, not pipeline, behaviour. `stages` are
recorded by the fixture plugins as they run (CPEX's own execution records are lost with a
`PluginError`).
"""

from __future__ import annotations

import copy
import itertools
from typing import Any

from cpex.framework import PluginError, PluginViolationError, TenantPluginManager
from cpex.framework.base import Plugin
from cpex.framework.hooks.tools import ToolPostInvokePayload, ToolPostInvokeResult
from cpex.framework.models import Config, GlobalContext, PluginConfig, PluginContext, PluginMode, PluginViolation
from mcpgateway.plugins.policy import HOOK_PAYLOAD_POLICIES

HOOK = "tool_post_invoke"
MODES = {"middleware": PluginMode.TRANSFORM, "security": PluginMode.SEQUENTIAL, "auditing": PluginMode.AUDIT}
ALL_SEQUENTIAL = {**MODES, "middleware": PluginMode.SEQUENTIAL}

# What the fixture plugins of each live pipeline record, by the token in their config: CPEX builds
# plugins from configuration alone, so this is how they reach the adapter.
_RECORDS: dict[str, dict[str, list]] = {}
_tokens = itertools.count()


def _change_texts(result: Any, change) -> None:
    for block in (result or {}).get("content") or [] if isinstance(result, dict) else []:
        if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
            block["text"] = change(block["text"])


def _plain(value: Any) -> Any:
    """A plain JSON copy of what a plugin was shown (CPEX hands out copy-on-write containers)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


class FixturePlugin(Plugin):
    """One fixture plugin; what it does comes from its `config` (behaviour, marker, reason)."""

    async def tool_post_invoke(self, payload: ToolPostInvokePayload, context: PluginContext) -> ToolPostInvokeResult:
        spec = self.config.config or {}
        behaviour, name = spec["behaviour"], self.name
        records = _RECORDS[spec["pipeline"]]
        auditing = self.config.mode == PluginMode.AUDIT
        if not auditing:
            records["stages"].append(name)
        if behaviour == "raise":
            raise RuntimeError(f"{name} raises on purpose")
        if behaviour == "block":
            return ToolPostInvokeResult(continue_processing=False, violation=PluginViolation(
                reason=spec.get("reason", "blocked"), description="fixture block", code="FIXTURE_BLOCK"))
        seen = {"jsonrpc": "2.0", "id": records["id"], "result": _plain(payload.result)}
        if auditing or behaviour == "audit":
            records["audit"].append({"plugin": name, "response": copy.deepcopy(seen)})
        change = {"append": lambda text: text + spec.get("marker", f"[{name}]"), "uppercase": str.upper}.get(behaviour)
        if change is None:
            return ToolPostInvokeResult()
        if auditing:  # an auditor that tries to modify what it was shown, in place and by returning it
            try:
                _change_texts(payload.result, change)
            except TypeError:  # a container CPEX refuses to change in place
                pass
        result = copy.deepcopy(seen["result"])
        _change_texts(result, change)
        return ToolPostInvokeResult(modified_payload=payload.model_copy(update={"result": result}))


class ContextForgePipeline:
    def __init__(self, manager: TenantPluginManager, token: str):
        self.manager, self.token = manager, token

    async def process_response(self, request: dict, response: dict) -> dict:
        # `id`: what the plugins put into the responses they record
        records = _RECORDS[self.token] = {"stages": [], "audit": [], "id": request["id"]}
        payload = ToolPostInvokePayload(name=request["params"]["name"], result=copy.deepcopy(response["result"]))
        context = GlobalContext(request_id=f"conformance-{self.token}-{request['id']}")
        try:
            result, _ = await self.manager.invoke_hook(HOOK, payload=payload, global_context=context,
                                                       violations_as_exceptions=True)
        except (PluginViolationError, PluginError) as exc:  # the gateway answers both with an error
            return {"allowed": False, "response": None, "reason": str(exc), "stages": records["stages"],
                    "audit": records["audit"]}
        final = result.modified_payload.result if result.modified_payload is not None else payload.result
        delivered = {"jsonrpc": response["jsonrpc"], "id": response["id"], "result": _plain(final)}
        return {"allowed": True, "response": delivered, "reason": None, "stages": records["stages"],
                "audit": records["audit"]}


async def _build(plugins: list[dict], modes: dict) -> ContextForgePipeline:
    token = str(next(_tokens))
    configs = []
    for spec in plugins:
        fields: dict[str, Any] = {
            "name": spec["name"], "kind": f"{__name__}.FixturePlugin", "hooks": [HOOK], "mode": modes[spec["kind"]],
            "config": {"behaviour": spec["behaviour"], "pipeline": token,
                       **{k: spec[k] for k in ("marker", "reason") if k in spec}}}
        if "priority" in spec:
            fields["priority"] = spec["priority"]
        try:
            configs.append(PluginConfig(**fields))
        except Exception as exc:  # noqa: BLE001 - CPEX's validation of a configuration
            raise ValueError(str(exc)) from None
    manager = TenantPluginManager(config=Config(plugins=configs), hook_policies=HOOK_PAYLOAD_POLICIES)
    try:
        await manager.initialize()
    except RuntimeError as exc:  # what CPEX raises for a plugin it cannot load
        raise ValueError(str(exc)) from None
    return ContextForgePipeline(manager, token)


async def factory(plugins: list[dict]) -> ContextForgePipeline:
    """Middleware as TRANSFORM, security as SEQUENTIAL, auditing as AUDIT."""
    return await _build(plugins, MODES)


async def factory_all_sequential(plugins: list[dict]) -> ContextForgePipeline:
    """Middleware and security both SEQUENTIAL (one chain by priority), auditing AUDIT."""
    return await _build(plugins, ALL_SEQUENTIAL)
