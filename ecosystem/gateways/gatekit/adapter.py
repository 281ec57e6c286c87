"""Pipeline adapter for Gatekit 0.3.0 (gatekit-ai/gatekit, `pip install gatekit==0.3.0`).

    mcp-ext-conformance gateway --adapter ecosystem.gateways.gatekit.adapter:factory

What runs is Gatekit's own code: each fixture plugin becomes a small subclass of Gatekit's
`MiddlewarePlugin`, `SecurityPlugin` or `AuditingPlugin` (named through `DISPLAY_NAME`, which is what
Gatekit reports as the plugin id), registered as a handler and loaded from an ordinary
`{"middleware"|"security"|"auditing": {"_global": [{"handler", "config": {"priority"}}]}}` plugins config
by `PluginManager.load_plugins()` (so priority validation, ordering and criticality are Gatekit's). The
handlers go into the manager's handler cache, the dictionary its file-system discovery fills, because
fixture plugins are not files under gatekit/plugins/.

`process_response` replays what Gatekit's proxy does with an upstream response
(gatekit/proxy/server.py, steps 5 and 6): `PluginManager.process_response(...)` (an exception there
counts as an ERROR pipeline), the same reading of the pipeline outcome (BLOCKED and ERROR become an
error response, COMPLETED_BY_MIDDLEWARE and the rest deliver `final_content`), then
`PluginManager.log_response(request, response, pipeline)` with the response the proxy would send.
The outcome reports that response (before egress namespacing and Gatekit's `_gatekit` metadata, which
are not pipeline behaviour), the pipeline's stages, and as the reason the text Gatekit's file auditors
log (`_combine_pipeline_reasons`, "[plugin] reason | ...").
"""

from __future__ import annotations

import copy
from typing import Any

from gatekit.plugins.auditing.base import FileAuditingPlugin
from gatekit.plugins.interfaces import (
    AuditingPlugin,
    MiddlewarePlugin,
    PipelineOutcome,
    PluginResult,
    ProcessingPipeline,
    SecurityPlugin,
)
from gatekit.plugins.manager import PluginManager
from gatekit.protocol.errors import MCPErrorCodes, create_error_response
from gatekit.protocol.messages import MCPRequest, MCPResponse

SERVER = "fixture"  # the upstream name the proxy would pass; plugins are configured under _global
_BASES = {"middleware": MiddlewarePlugin, "security": SecurityPlugin, "auditing": AuditingPlugin}


def _to_dict(response: MCPResponse) -> dict:
    out: dict[str, Any] = {"jsonrpc": response.jsonrpc, "id": response.id}
    if response.error is not None:
        out["error"] = copy.deepcopy(response.error)
    else:
        out["result"] = copy.deepcopy(response.result)
    return out


def _change_texts(result: Any, change) -> None:
    for block in (result or {}).get("content") or [] if isinstance(result, dict) else []:
        if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
            block["text"] = change(block["text"])


def _change_for(spec: dict):
    if spec["behaviour"] == "append":
        marker = spec.get("marker", f"[{spec['name']}]")
        return lambda text: text + marker
    if spec["behaviour"] == "uppercase":
        return str.upper
    return None


def _plugin_class(spec: dict, sink: list[dict]) -> type:
    """A Gatekit plugin class that does what the fixture's behaviour word says."""
    behaviour, kind, name = spec["behaviour"], spec["kind"], spec["name"]
    change = _change_for(spec)
    decides = kind == "security"  # Gatekit: only security plugins may set `allowed`

    async def process_response(self, request, response, server_name=None):
        if behaviour == "raise":
            raise RuntimeError(f"{name} raises on purpose")
        if behaviour == "block":
            return PluginResult(allowed=False, reason=spec.get("reason", "blocked"))
        if behaviour == "audit":
            sink.append({"plugin": name, "response": _to_dict(response)})
        if change is not None:
            result = copy.deepcopy(response.result)
            _change_texts(result, change)
            modified = MCPResponse(jsonrpc=response.jsonrpc, id=response.id, result=result, error=response.error,
                                   sender_context=response.sender_context)
            return PluginResult(allowed=True if decides else None, modified_content=modified,
                                reason=f"{behaviour} applied")
        return PluginResult(allowed=True if decides else None)

    async def log_response(self, request, response, pipeline, server_name=None):
        if behaviour == "raise":
            raise RuntimeError(f"{name} raises on purpose")
        sink.append({"plugin": name, "response": _to_dict(response)})
        if change is not None:  # an auditor that tries to modify what it is shown, in place
            _change_texts(response.result, change)

    attrs = {"DISPLAY_NAME": name, "__module__": __name__}
    attrs["log_response" if kind == "auditing" else "process_response"] = (
        log_response if kind == "auditing" else process_response)
    return type(f"Conformance_{kind}_{name.replace('-', '_')}", (_BASES[kind],), attrs)


class GatekitPipeline:
    def __init__(self, manager: PluginManager, sink: list[dict]):
        self.manager = manager
        self.sink = sink

    async def process_response(self, request: dict, response: dict) -> dict:
        self.sink.clear()
        req = MCPRequest(jsonrpc=request["jsonrpc"], method=request["method"], id=request["id"],
                         params=request.get("params"))
        resp = MCPResponse(jsonrpc=response["jsonrpc"], id=response["id"], result=response.get("result"),
                           error=response.get("error"))
        try:  # proxy step 5
            pipeline = await self.manager.process_response(req, resp, SERVER)
        except Exception:  # noqa: BLE001 - the proxy turns this into an ERROR pipeline too
            pipeline = ProcessingPipeline(original_content=resp, final_content=resp,
                                          pipeline_outcome=PipelineOutcome.ERROR, capture_content=False)
        outcome = pipeline.pipeline_outcome
        allowed = outcome not in (PipelineOutcome.BLOCKED, PipelineOutcome.ERROR)
        if outcome == PipelineOutcome.BLOCKED:
            delivered = create_error_response(request_id=req.id, code=MCPErrorCodes.SECURITY_VIOLATION,
                                              message="Response blocked by security handler")
        elif outcome == PipelineOutcome.ERROR:
            delivered = create_error_response(request_id=req.id, code=MCPErrorCodes.INTERNAL_ERROR,
                                              message="Response filtering failed")
        else:
            delivered = pipeline.final_content if isinstance(pipeline.final_content, MCPResponse) else resp
        try:  # proxy step 6: auditors get the response the proxy is about to send
            await self.manager.log_response(req, delivered, pipeline, SERVER)
        except Exception:  # noqa: BLE001 - the proxy logs and carries on
            pass
        reason = None if allowed else FileAuditingPlugin._combine_pipeline_reasons(None, pipeline)
        return {"allowed": allowed, "response": _to_dict(delivered) if allowed else None, "reason": reason,
                "stages": [stage.plugin_name for stage in pipeline.stages], "audit": list(self.sink)}


async def factory(plugins: list[dict]) -> GatekitPipeline:
    """Build a Gatekit PluginManager for the fixture plugins; Gatekit's ValueError is a configuration error."""
    sink: list[dict] = []
    config: dict[str, dict] = {kind: {"_global": []} for kind in _BASES}
    handlers: dict[str, dict[str, type]] = {kind: {} for kind in _BASES}
    for spec in plugins:
        handlers[spec["kind"]][spec["name"]] = _plugin_class(spec, sink)
        plugin_config: dict[str, Any] = {"enabled": True}
        if "priority" in spec:
            plugin_config["priority"] = spec["priority"]
        config[spec["kind"]]["_global"].append({"handler": spec["name"], "config": plugin_config})
    manager = PluginManager(config)
    manager._handler_cache.update(handlers)  # what _discover_handlers would have found on disk
    await manager.load_plugins()
    return GatekitPipeline(manager, sink)
