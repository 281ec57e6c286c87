"""Shared helpers of the gateway-role tests: record a gateway in front of the upstream fixture server, judge it."""

from __future__ import annotations

from conformance.gateway import transparency
from conformance.gateway.launch import gateway_factory
from conformance.model import REGISTRY
from conformance.runner import evaluate
from tests.helpers import NOT_OK, PY, ROOT

TRANSPARENCY_CHECKS = sorted(c for c in REGISTRY if REGISTRY[c].role == "gateway"
                             and REGISTRY[c].profile in transparency.PROFILES)
BROKEN_PROXY = ROOT / "tests" / "gateway" / "broken_proxy.py"


def reference_gateway(*flags: str) -> str:
    return " ".join([PY, "-m", "reference_servers.gateway", *flags])


def broken_proxy(mode: str | None = None) -> str:
    return f"{PY} {BROKEN_PROXY}" + (f" --break {mode}" if mode else "")


def gateway_verdicts(command: str, *, url: str | None = None, upstream: str = "stdio", request_timeout: float = 5.0,
                     run_timeout: float = 30.0, claimed=frozenset(), env: dict | None = None) -> dict:
    """Every transparency check's Result, by id, from one recording per profile through the gateway."""
    factory = gateway_factory(command, url=url, request_timeout=request_timeout, env=env)
    recordings = transparency.record_gateway_sync(factory, transparency.PROFILES, claimed=set(claimed),
                                                  upstream=upstream, run_timeout=run_timeout)
    return {cid: evaluate(REGISTRY[cid], recordings[REGISTRY[cid].profile]) for cid in TRANSPARENCY_CHECKS}


def not_ok(verdicts: dict) -> dict:
    return {cid: f"{r.outcome}: {r.reason}" for cid, r in verdicts.items() if r.outcome in NOT_OK}
