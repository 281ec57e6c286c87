"""Gateway role: what context-middleware and augmentation share (a capability, a list method, a call method).

A method refused cleanly leaves nothing to compare: the comparison checks then skip, naming the refusal
(capability-forwarded-or-refused judges the refusal itself).
"""

from __future__ import annotations

import json

from ..client.recording import Recording
from ..client.session import Session
from ..core.judging import find_named, short
from ..core.model import NotApplicable, NotObserved, Violation, check
from .common import (
    UPSTREAM_CAPABILITIES,
    dropped,
    extras,
    listed_name,
    optional_fields,
    received,
    upstream_received,
    upstream_requests,
)
from .recording import TransparencyRecording


class Methods:
    """What context-middleware and augmentation share: a capability, a list method, a call method."""

    def __init__(self, profile, capability, list_method, list_key, call_method, calls, extension: str | None = None):
        self.profile, self.capability = profile, capability
        self.list_method, self.list_key, self.call_method = list_method, list_key, call_method
        self.calls = calls  # label -> (fixture name, params without name)
        # An extension's capability lives under capabilities.extensions[<id>] (SEP-2624's interceptors),
        # not at the top level; `capability` is then only its name in reasons.
        self.extension = extension

    def _holder(self, caps) -> dict:
        caps = caps if isinstance(caps, dict) else {}
        if self.extension is None:
            return caps
        extensions = caps.get("extensions")
        return extensions if isinstance(extensions, dict) else {}

    def _key(self) -> str:
        return self.extension or self.capability

    def advertised(self, rec: TransparencyRecording) -> bool:
        return self._key() in self._holder(rec.capabilities)

    def advertised_value(self, rec: TransparencyRecording):
        return self._holder(rec.capabilities).get(self._key())

    def upstream_value(self):
        return self._holder(UPSTREAM_CAPABILITIES)[self._key()]

    def label(self, fixture: str) -> str:
        return f"{self.call_method} {fixture}"

    async def driver(self, session: Session, rec: Recording) -> None:
        kind = self.list_key
        rec.listing[kind] = await session.list_all(self.list_method, self.list_key, self.list_method)
        for fixture, params in self.calls.items():
            await session.send(self.label(fixture), self.call_method,
                               {"name": listed_name(rec.listing.get(kind), fixture), **json.loads(json.dumps(params))})

    def refused(self, rec: TransparencyRecording) -> str | None:
        """Why the comparison checks do not apply: the gateway refuses the profile (not advertised, errors)."""
        if self.advertised(rec):
            return None
        exchanges = [rec.cite(self.list_method)] + [rec.cite(self.label(f)) for f in self.calls]
        if all(ex.has_error for ex in exchanges):
            return (f"the gateway does not advertise {self.capability} and refuses its methods "
                    f"(capability-forwarded-or-refused judges how)")
        return None

    def judge_forwarded(self, rec: TransparencyRecording) -> str:
        methods = [(self.list_method, rec.cite(self.list_method))] + \
                  [(self.call_method, rec.cite(self.label(f))) for f in self.calls]
        if not self.advertised(rec):
            for method, ex in methods:
                if ex.failure:
                    raise Violation(f"{self.capability} is not advertised, and {method} was not refused: "
                                    f"{ex.failure}", expected="a JSON-RPC error, code -32601", actual=ex.failure)
                if ex.has_result:
                    raise Violation(f"the gateway answers {method} but does not advertise {self.capability}: "
                                    f"the upstream's capability was dropped",
                                    expected={self.capability: self.upstream_value()},
                                    actual=rec.capabilities)
                code = (ex.error or {}).get("code")
                if code != -32601:
                    raise Violation(f"{self.capability} is not advertised, and {method} was answered code {code} "
                                    f"instead of -32601 Method not found", expected=-32601, actual=ex.error)
            return f"refused cleanly: {self.capability} not advertised, its methods answered -32601"
        upstream = self.upstream_value()
        got = self.advertised_value(rec)
        changed = {k: got.get(k) if isinstance(got, dict) else got for k in upstream
                   if not isinstance(got, dict) or got.get(k) != upstream[k]}
        if not isinstance(got, dict) or changed:
            raise Violation(f"capabilities.{self.capability} arrives changed", expected=upstream, actual=got)
        for method, ex in methods:
            if ex.failure:
                raise Violation(f"{self.capability} is advertised, but {method}: {ex.failure}",
                                expected=f"{method} forwarded and answered", actual=ex.failure)
            if not ex.has_result:
                raise Violation(f"{self.capability} is advertised, but {method} was answered with an error",
                                expected="the upstream's result", actual=ex.error)
        missing = [f for f in self.calls if find_named(rec.listing.get(self.list_key), f) is None]
        if missing:
            raise Violation(f"{self.list_method} through the gateway does not list the upstream's {missing}",
                            expected=missing, actual=short(rec.cite(self.list_method).result))
        received(rec, self.list_method)
        for fixture in self.calls:
            received(rec, self.call_method, fixture)
        return f"{self.capability} advertised; {self.list_method} and {self.call_method} reached the upstream"

    def result_of(self, rec: TransparencyRecording, fixture: str) -> dict:
        reason = self.refused(rec)
        if reason:
            raise NotApplicable(reason)
        ex = rec.cite(self.label(fixture))
        if ex.failure:
            raise NotObserved(f"{self.call_method} of {fixture}: {ex.failure}")
        if not ex.has_result or not isinstance(ex.result, dict):
            raise NotObserved(f"{self.call_method} of {fixture} was answered with an error ({short(ex.error)})")
        return ex.result

    def judge_optional(self, rec: TransparencyRecording, result_fields) -> str:
        """Every optional and unknown field the upstream contract sends on the listed fixtures and on the call
        results (`result_fields(rec, fixture)`: what the upstream adds to that fixture's result) arrives unchanged."""
        reason = self.refused(rec)
        if reason:
            raise NotApplicable(reason)
        received(rec, self.list_method)
        problems = []
        for fixture in self.calls:
            item = find_named(rec.listing.get(self.list_key), fixture)
            if item is None:
                raise NotObserved(f"{self.list_method} through the gateway does not list {fixture}")
            problems += optional_fields(extras(rec), item, f"{self.list_method} {fixture}")
            result = self.result_of(rec, fixture)
            received(rec, self.call_method, fixture)
            problems += optional_fields(result_fields(rec, fixture), result, f"{self.call_method} {fixture}")
        if problems:
            dropped(problems)
        return f"every optional and unknown field of {self.list_method} items and {self.call_method} results came through"

    def judge_params(self, rec: TransparencyRecording) -> str:
        reason = self.refused(rec)
        if reason:
            raise NotApplicable(reason)
        for fixture, sent in self.calls.items():
            rec.cite(self.label(fixture))
            received(rec, self.call_method, fixture)
            arrived = upstream_requests(rec, self.call_method, fixture)
            if not arrived:
                raise NotObserved(f"the upstream never received {self.call_method} for {fixture}",
                                  expected=sent, actual=[m.get("method") for m in upstream_received(rec)
                                                         if isinstance(m, dict)])
            params = arrived[-1]["params"]
            differs = {k: params.get(k, "(missing)") for k in sent if params.get(k) != sent[k]}
            added = sorted(set(params) - set(sent) - {"name", "_meta"})
            if differs or added:
                raise Violation(f"{self.call_method} params for {fixture} arrived upstream changed",
                                expected=sent, actual={**differs, **{k: params[k] for k in added}})
        return f"{self.call_method} params arrived upstream exactly as sent"


    def register_optional(self, check_id: str, result_fields) -> None:
        """`<profile>/gateway/optional-fields-arrive-unchanged`, the id written in full by the profile's module."""
        assert check_id == f"{self.profile}/gateway/optional-fields-arrive-unchanged", check_id
        check(check_id,
              does=f"reads the fixtures through {self.list_method} and {self.call_method}, whose items and results the "
                   f"upstream sends with every optional field, _meta and an unknown key, each carrying the run's mark",
              must=f"every optional and unknown field of {self.list_method} items and {self.call_method} results "
                   f"arrives unchanged")(lambda rec: self.judge_optional(rec, result_fields))

    def register(self, forwarded_id: str, params_id: str) -> None:
        """The two checks every Methods profile has: `<profile>/gateway/capability-forwarded-or-refused` and
        `<profile>/gateway/<call>-params-arrive-unchanged` (`<call>`: the call method's last part), ids written
        in full by the profile's module."""
        assert forwarded_id == f"{self.profile}/gateway/capability-forwarded-or-refused", forwarded_id
        call = self.call_method.rsplit("/", 1)[-1]
        assert params_id == f"{self.profile}/gateway/{call}-params-arrive-unchanged", params_id
        check(forwarded_id,
              does=f"reads capabilities.{self.capability} through the gateway and sends {self.list_method} and "
                   f"{self.call_method} either way",
              must=f"the gateway forwards {self.capability} and its methods, or refuses them cleanly: not advertised "
                   f"and answered -32601; never advertised-but-dropped, never left hanging")(self.judge_forwarded)
        check(params_id,
              does=f"reads the upstream's log of received messages for the {self.call_method} requests the suite sent",
              must=f"{self.call_method} params (context blocks with annotations and _meta, arguments) reach the "
                   f"upstream exactly as the client sent them")(self.judge_params)
