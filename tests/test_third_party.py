"""A server nobody here wrote: the official TypeScript SDK's "everything" server, from the npm registry.

It implements none of the extensions, so the suite must claim nothing and pass
it (it answers unadvertised methods with -32601), and, when a profile is
claimed with --profile, fail that profile's fixture checks with a reason.
.ci/run installs it into .ci/third_party; elsewhere: npm install --prefix
.ci/third_party @modelcontextprotocol/server-everything
"""

import pytest

from conformance.targets import TargetSpec
from tests.helpers import ROOT, not_ok, server_verdicts

BIN = ROOT / ".ci" / "third_party" / "node_modules" / ".bin" / "mcp-server-everything"
pytestmark = pytest.mark.skipif(not BIN.exists(), reason=f"{BIN} is not installed (see the module docstring)")


def test_plain_third_party_server_claims_nothing_and_passes():
    verdicts = server_verdicts(TargetSpec("stdio", command=f"{BIN} stdio"))
    assert not_ok(verdicts) == {}
    ran = {cid: r.outcome for cid, r in verdicts.items() if r.outcome != "skip"}
    assert ran == {"context-middleware/server/unadvertised-method-rejected": "pass",
                   "augmentation/server/unadvertised-method-rejected": "pass",
                   "interceptors/server/unadvertised-method-rejected": "pass"}


def test_claimed_profile_fails_on_a_plain_third_party_server():
    verdicts = server_verdicts(TargetSpec("stdio", command=f"{BIN} stdio"), claimed={"execution-requirements"})
    failing = {cid for cid, r in verdicts.items() if r.outcome == "fail"}
    assert "execution-requirements/server/unmet-requirement-fails-call" in failing
    assert all(cid.startswith("execution-requirements/") for cid in not_ok(verdicts))
    assert all("fixture missing" in verdicts[c].reason or "not observed" in verdicts[c].reason for c in failing)
