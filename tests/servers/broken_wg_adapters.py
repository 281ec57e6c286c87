"""Deliberately broken adapters of the interceptors working group's fixture contract: one flaw each.

Each is the reference adapter (reference_servers.interceptor_chain:wg_adapter) with one chain rule broken,
so it fails exactly one of the two replay checks (conformance/server/wg_fixtures.py), and within it exactly
the suite's own fixtures (tests/data/interceptor-fixtures) that pin that rule:

    MUTANTS[name] = (fails, does), the contract of tests/README.md
    FIXTURES[name] = the fixture ids the check names as failing
    ADAPTERS[name] = the factory, also loadable as `tests.servers.broken_wg_adapters:NAME_IN_CAMEL_CASE`
"""

from __future__ import annotations

from reference_servers.interceptor_chain import WgSession, run_chain

PROTOCOL = "interceptors/server/wg-protocol-fixtures"
BEHAVIOR = "interceptors/server/wg-behavior-fixtures"


class AppliesAuditMutations(WgSession):
    """Drops every interceptor's `mode`: audit mutations are applied and audit denials block."""

    def __init__(self, interceptors):
        super().__init__([{k: v for k, v in i.items() if k != "mode"} for i in interceptors])


class FailOpenByDefault(WgSession):
    """A crashing interceptor without `failOpen` lets the message through."""

    def __init__(self, interceptors):
        super().__init__([{"failOpen": True, **i} for i in interceptors])


class SameOrderBothWays(WgSession):
    """Receiving mutates before validating, as sending does (the SEP: a receiver validates first)."""

    def chain(self, event, phase, payload, session_id):
        if phase != "response":
            return super().chain(event, phase, payload, session_id)
        mutators = [e for e in self.entries if e.interceptor.type == "mutation"]
        validators = [e for e in self.entries if e.interceptor.type == "validation"]
        mutated = run_chain(mutators, event, phase, payload)
        if mutated["decision"] == "deny":
            return {"decision": "deny", "finalPayload": payload}
        checked = run_chain(validators, event, phase, mutated["finalPayload"])
        allowed = checked["decision"] == "allow"
        return {"decision": checked["decision"], "finalPayload": mutated["finalPayload"] if allowed else payload}


class SkipsChainInASession(WgSession):
    """A call correlated to a session bypasses the chain (state kept per session, the chain forgotten)."""

    def chain(self, event, phase, payload, session_id):
        if session_id is not None:
            return {"decision": "allow", "finalPayload": payload}
        return super().chain(event, phase, payload, session_id)


MUTANTS = {
    "applies-audit-mutations": ({PROTOCOL}, AppliesAuditMutations.__doc__),
    "fail-open-by-default": ({PROTOCOL}, FailOpenByDefault.__doc__),
    "same-order-both-ways": ({PROTOCOL}, SameOrderBothWays.__doc__),
    "skips-chain-in-a-session": ({BEHAVIOR}, SkipsChainInASession.__doc__),
}
FIXTURES = {
    "applies-audit-mutations": {"protocol/suite-audit-shadow", "protocol/suite-list-filter"},
    "fail-open-by-default": {"protocol/suite-fail-closed"},
    "same-order-both-ways": {"protocol/suite-trust-boundary-order"},
    "skips-chain-in-a-session": {"behavior/suite-session-deny"},
}
ADAPTERS = {"applies-audit-mutations": AppliesAuditMutations, "fail-open-by-default": FailOpenByDefault,
            "same-order-both-ways": SameOrderBothWays, "skips-chain-in-a-session": SkipsChainInASession}
