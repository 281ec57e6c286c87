"""The reference gateway's pipeline adapter (conformance/gateway/ADAPTER.md).

`factory(plugins)` maps each fixture plugin onto the engine's `vocabulary` plugin type through the same
`build_pipeline` the gateway uses for its config file, so the suite judges the code the proxy runs.

    mcp-ext-conformance gateway --adapter reference_servers.gateway.adapter:factory
"""

from __future__ import annotations

from .pipeline import Pipeline, build_pipeline

# Fixture keys the engine's vocabulary plugin takes as they are.
_PASSED = ("name", "behaviour", "kind", "priority", "marker", "reason")


class ReferenceAdapter:
    def __init__(self, pipeline: Pipeline):
        self.pipeline = pipeline

    async def process_response(self, request: dict, response: dict) -> dict:
        return (await self.pipeline.process_response(request, response)).to_dict()


def factory(plugins: list[dict]) -> ReferenceAdapter:
    configs = [{"plugin": "vocabulary", **{k: p[k] for k in _PASSED if k in p}} for p in plugins]
    return ReferenceAdapter(build_pipeline(configs))
