"""The reference server's App: the conformance fixtures, then the real middleware and tools."""

from __future__ import annotations

from .. import fixtures
from ..core import App

SERVER_PROFILES = ("preprocessor-tools", "execution-requirements", "context-middleware", "augmentation")


def build_app(config: dict) -> App:
    app = App()
    profiles = set(config.get("profiles") or SERVER_PROFILES)
    unknown = profiles - set(SERVER_PROFILES)
    if unknown:
        raise ValueError(f"unknown profile(s) in config: {', '.join(sorted(unknown))}")
    if config.get("fixtures", True):
        fixtures.register(app, profiles)
    app.satisfied.update(config.get("satisfiedRequirements") or ())
    register_real(app, config, profiles)
    return app


def register_real(app: App, config: dict, profiles: set[str]) -> None:
    """The middleware, preprocessors and gated tools a team would deploy (reference_servers/middleware)."""
    return None
