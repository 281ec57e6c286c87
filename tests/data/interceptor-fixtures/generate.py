"""Generate the suite's own fixtures in the interceptors WG format (written for these tests, not copied).

    python tests/data/interceptor-fixtures/generate.py   # from the repository root
"""
import json
from pathlib import Path

import rfc8785

OUT = Path("tests/data/interceptor-fixtures")
VOL = ["durationMs", "totalDurationMs", "info"]
def c(v): return rfc8785.dumps(v).decode()
def hooks(events): return [{"events": events, "phase": "request"}, {"events": events, "phase": "response"}]
def fx(fid, req, desc, interceptors, steps):
    (OUT / (fid.split("/")[1] + ".json")).write_text(json.dumps({"id": fid, "kind": fid.split("/")[0], "requirement": req,
        "description": desc, "interceptors": interceptors, "steps": steps, "volatile": VOL}, indent=2) + "\n")
P = {"name": "send_report", "arguments": {"note": "quarterly figures"}}
U = {"name": "send_report", "arguments": {"note": "QUARTERLY FIGURES"}}
fx("protocol/suite-list-filter", "SEP-2624/list.filter", "A filter on prompts/get keeps the wildcard hook only.",
   [{"name": "t/gate", "type": "validation", "behavior": "allow-all", "events": ["resources/read"], "phases": "request"},
    {"name": "t/watch", "type": "validation", "behavior": "allow-all", "events": ["*"], "phases": "both", "mode": "audit", "failOpen": True}],
   [{"op": "list", "event": "prompts/get", "expect": {"result": (r := {"interceptors": [
       {"name": "t/watch", "type": "validation", "hooks": hooks(["*"]), "mode": "audit", "failOpen": True}]}), "canonical": c(r)}}])
fx("protocol/suite-invoke-deny", "SEP-2624/invoke.validation", "A denying validator answers valid false with its message.",
   [{"name": "t/deny", "type": "validation", "behavior": "deny-all", "events": ["resources/read"], "phases": "response"}],
   [{"op": "invoke", "params": {"name": "t/deny", "event": "resources/read", "phase": "response", "payload": {"uri": "file:///a"}},
     "expect": {"result": (r := {"interceptor": "t/deny", "type": "validation", "phase": "response", "valid": False, "severity": "error",
                                 "messages": [{"message": "denied by policy", "severity": "error"}]}), "canonical": c(r)}}])
fx("protocol/suite-invoke-mutation", "SEP-2624/invoke.mutation", "A mutator returns the whole changed payload.",
   [{"name": "t/upper", "type": "mutation", "behavior": "uppercase-note", "events": ["tools/call"], "phases": "both"}],
   [{"op": "invoke", "params": {"name": "t/upper", "event": "tools/call", "phase": "request", "payload": P},
     "expect": {"result": (r := {"interceptor": "t/upper", "type": "mutation", "phase": "request", "modified": True, "payload": U}), "canonical": c(r)}},
    {"op": "invoke", "params": {"name": "t/upper", "event": "tools/call", "phase": "response", "payload": U},
     "expect": {"result": (r := {"interceptor": "t/upper", "type": "mutation", "phase": "response", "modified": False, "payload": U}), "canonical": c(r)}}])
fx("protocol/suite-invoke-unknown", "SEP-2624/invoke.unknown", "An unknown name is invalid params.",
   [{"name": "t/gate", "type": "validation", "behavior": "allow-all", "events": ["tools/call"], "phases": "both"}],
   [{"op": "invoke", "params": {"name": "t/nobody", "event": "tools/call", "phase": "request", "payload": P}, "expect": {"errorCode": -32602}}])
fx("protocol/suite-fail-closed", "SEP-2624/chain.fail-closed", "A crashing mutator without failOpen blocks.",
   [{"name": "t/boom", "type": "mutation", "behavior": "crash", "events": ["tools/call"], "phases": "request"}],
   [{"op": "apply", "event": "tools/call", "phase": "request", "payload": P, "context": None, "expect": {"decision": "deny"}}])
fx("protocol/suite-fail-open", "SEP-2624/chain.fail-open", "A crashing validator with failOpen lets the message through.",
   [{"name": "t/boom", "type": "validation", "behavior": "crash", "events": ["tools/call"], "phases": "request", "failOpen": True}],
   [{"op": "apply", "event": "tools/call", "phase": "request", "payload": P, "context": None,
     "expect": {"decision": "allow", "finalPayload": P, "finalPayloadCanonical": c(P)}}])
fx("protocol/suite-audit-shadow", "SEP-2624/chain.audit", "An audit mutator's change is not applied; an audit denial does not block.",
   [{"name": "t/upper", "type": "mutation", "behavior": "uppercase-note", "events": ["tools/call"], "phases": "both", "mode": "audit"},
    {"name": "t/deny", "type": "validation", "behavior": "deny-all", "events": ["tools/call"], "phases": "both", "mode": "audit"}],
   [{"op": "apply", "event": "tools/call", "phase": "request", "payload": P, "context": None,
     "expect": {"decision": "allow", "finalPayload": P, "finalPayloadCanonical": c(P), "forbids": ["QUARTERLY"]}}])
fx("protocol/suite-trust-boundary-order", "SEP-2624/chain.order", "Sending mutates before validating; receiving validates first.",
   [{"name": "t/upper", "type": "mutation", "behavior": "uppercase-note", "events": ["tools/call"], "phases": "both"},
    {"name": "t/shout", "type": "validation", "behavior": "require-uppercase-note", "events": ["tools/call"], "phases": "both"}],
   [{"op": "apply", "event": "tools/call", "phase": "request", "payload": P, "context": None,
     "expect": {"decision": "allow", "finalPayload": U, "finalPayloadCanonical": c(U), "requires": ["QUARTERLY FIGURES"]}},
    {"op": "apply", "event": "tools/call", "phase": "response", "payload": P, "context": None, "expect": {"decision": "deny"}}])
fx("behavior/suite-session-deny", "SEC/suite.session-chain", "Session-correlated calls still run the chain: a denial blocks in every session.",
   [{"name": "t/deny", "type": "validation", "behavior": "deny-all", "events": ["tools/call"], "phases": "request"}],
   [{"op": "apply", "event": "tools/call", "phase": "request", "payload": P, "context": {"sessionId": "s-1"}, "expect": {"decision": "deny"}},
    {"op": "apply", "event": "tools/call", "phase": "request", "payload": P, "context": {"sessionId": "s-2"}, "expect": {"decision": "deny"}}])
