"""The fixture contract's gated tools (docs/fixture-contract.md, execution-requirements), as the suite knows
them when it plays the client: what each declares, and which of them a call must fail. The server role
judges a server's own declarations against them, the gateway role what arrives through a gateway.
Contract version 2's gated tools are the server role's alone (server/execution_requirements.py)."""

from __future__ import annotations

SATISFIED = "conformance:satisfied"  # the one satisfied requirement string
GATED = {
    "conformance_gated_ok": ["conformance:satisfied"],
    "conformance_gated_unmet": ["conformance:unsatisfied"],
    "conformance_gated_mixed": ["conformance:satisfied", "conformance:unsatisfied"],
    "conformance_gated_case": ["Conformance:Satisfied"],
}
UNMET = ("conformance_gated_unmet", "conformance_gated_mixed", "conformance_gated_case")
