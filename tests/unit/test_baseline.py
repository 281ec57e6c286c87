"""Expected-failure files (conformance/report/baseline.py): the suite's own form and the official suite's,
stale entries in both, and a file written against other catalog revisions."""

import pytest
import yaml

from conformance.core import provenance
from conformance.core.roles import load_all
from conformance.report.baseline import BaselineError, load, translate

load_all()  # the check ids a baseline may name


def write(tmp_path, data) -> str:
    path = tmp_path / "baseline.yml"
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data))
    return str(path)


def test_the_official_form_maps_scenarios_and_checks_to_ours(tmp_path):
    baseline = load(write(tmp_path, """
server:
  - server-augmentation
  - server-interceptors:supported-events-cover-hooks
  - server-context-middleware:context-middleware/server/list-result-valid
client:
  - host-interceptors:audit-mutation-not-applied
gateway:
  - gateway-sequential-pipeline
"""))
    assert set(baseline.checks) == {"interceptors/server/supported-events-cover-hooks",
                                    "context-middleware/server/list-result-valid",
                                    "interceptors/host/audit-mutation-not-applied"}
    assert set(baseline.scenarios) == {("augmentation", "server"), ("sequential-pipeline", "gateway")}
    # A whole scenario is one profile in one role: the same profile's checks of another role are not listed.
    assert baseline.apply("fail", "augmentation/server/prepend-note-hint", False)[0] == "xfail"
    assert baseline.apply("fail", "augmentation/host/prepend-note-hint", False) == ("fail", None)
    assert baseline.apply("warn", "interceptors/server/supported-events-cover-hooks", True)[0] == "xfail"
    assert baseline.apply("pass", "interceptors/host/audit-mutation-not-applied", False)[0] == "stale"


def test_host_is_a_mode_of_its_own_too(tmp_path):
    baseline = load(write(tmp_path, {"host": ["host-interceptors"]}))
    assert baseline.scenarios == {("interceptors", "host"): "listed"}


def test_a_whole_scenario_goes_stale_when_none_of_its_checks_fails(tmp_path):
    baseline = load(write(tmp_path, {"server": ["server-augmentation", "server-interceptors"]}))
    outcomes = {"augmentation/server/prepend-note-hint": "pass", "augmentation/server/list-result-valid": "pass",
                "interceptors/server/list-result-valid": "xfail"}
    assert baseline.stale_profiles(outcomes) == ["server-augmentation"]


def test_a_file_shared_with_the_official_suite_is_accepted_and_what_it_names_of_its_own_is_ignored(tmp_path):
    # The official runner reads `server` and `client`, and ignores the scenarios it does not run; so does this
    # suite, in one note line, while an entry naming one of its own scenarios is held to its checks.
    shared = {"server": ["tools-call-error", "server-initialize:some-check", "server-interceptors:sep-2624-list-result-valid",
                         "server-augmentation:list-result-valid"],
              "client": ["initialize", "auth/basic-dcr"], "authorization": ["auth-server-metadata"]}
    baseline = load(write(tmp_path, shared))
    assert set(baseline.checks) == {"interceptors/server/list-result-valid", "augmentation/server/list-result-valid"}
    (note,) = baseline.ignored_note()
    assert note.startswith("note: ignored 5 expected-failures entries this suite does not run")
    assert "tools-call-error" in note and "and 1 more" in note
    assert load(write(tmp_path, {"server": ["server-interceptors"]})).ignored_note() == []


@pytest.mark.parametrize("entries, says", [
    (["server-augmentation:x"], "no check 'x'"),
    (["server-interceptors:sep-2487-list-result-valid"], "has no check"),  # another SEP's prefix
    (["server-interceptors:augmentation/server/prepend-note-hint"], "has no check"),
    (["server-interceptors:no-such-check"], "has no check 'no-such-check'"),
    ([{"server-interceptors": "list-result-valid"}], "Remove the space after the colon"),
    (["server-interceptors", "server-interceptors:list-result-valid"], "is redundant"),
])
def test_a_bad_official_entry_is_one_clear_error(tmp_path, entries, says):
    with pytest.raises(BaselineError) as caught:
        load(write(tmp_path, {"server": entries}))
    assert says in str(caught.value)


def test_a_mode_name_in_our_form_points_at_the_official_form(tmp_path):
    with pytest.raises(BaselineError) as caught:
        load(write(tmp_path, ["server"]))
    assert "server: [server-interceptors]" in str(caught.value)


def test_a_file_written_against_other_revisions_says_so(tmp_path):
    now = provenance.catalog_revisions()
    old = write(tmp_path, {"augmentation/server/prepend-note-hint": "issue 4",
                           "catalog": {"augmentation": "0123456789ab", "interceptors": "0123456789ab"}})
    baseline = load(old)
    (sentence,) = baseline.revision_drift(now)
    # Only a profile the file lists entries for: interceptors' revision does not bear on it.
    assert f"augmentation (0123456789ab, now {now['augmentation']})" in sentence and "interceptors" not in sentence
    assert baseline.checks == {"augmentation/server/prepend-note-hint": "issue 4"}  # entries still apply
    same = load(write(tmp_path, {"server": ["server-augmentation"], "catalog": {"augmentation": now["augmentation"]}}))
    assert same.revision_drift(now) == []
    with pytest.raises(BaselineError, match="maps profiles to the catalog revisions"):
        load(write(tmp_path, {"server": ["server-augmentation"], "catalog": {"no-such-profile": "x"}}))


def test_our_form_translates_to_the_official_one(tmp_path):
    ours = load(write(tmp_path, {"augmentation/server/prepend-note-hint": "issue 4",
                                 "interceptors/host/audit-mutation-not-applied": "issue 5",
                                 "sequential-pipeline": "issue 6"}))
    official = translate(ours)
    assert official == {"server": ["server-augmentation:prepend-note-hint"],
                        "client": ["host-interceptors:sep-2624-audit-mutation-not-applied"],
                        "gateway": ["gateway-sequential-pipeline"]}
    again = load(write(tmp_path, official))
    assert set(again.checks) == {"augmentation/server/prepend-note-hint",
                                 "interceptors/host/audit-mutation-not-applied"}
    assert set(again.scenarios) == {("sequential-pipeline", "gateway")}
