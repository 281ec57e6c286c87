"""The role declarations (conformance/core/roles.py) agree with the check modules, and every role's recording
offers what `runner.evaluate` reads (conformance/core/recording.py)."""

import types

import pytest

from conformance.core.model import REGISTRY, NotObserved
from conformance.core.profile import shape_problem
from conformance.core.recording import Recording
from conformance.core.roles import GATEWAY, HOST, ROLES, SERVER
from conformance.gateway import record as gateway_record
from conformance.gateway.recording import PipelineRecording, TransparencyRecording
from conformance.host import record as host_record
from conformance.host.recording import HostRecording
from conformance.server import record as server_record
from conformance.server.recording import ServerRecording


def test_declared_profiles_are_the_check_modules_profiles():
    assert SERVER.profiles == server_record.PROFILES
    assert HOST.profiles == host_record.PROFILES
    assert GATEWAY.profiles == (*gateway_record.PROFILES, "sequential-pipeline")


@pytest.mark.parametrize("role", sorted(ROLES))
def test_every_profile_module_has_the_one_shape(role):
    """conformance/core/profile.py: the role's `module_names` (PROFILE, PLAN, the server's HOW_TO_CLAIM) in the
    module named after the profile, and every check of the profile registered by it."""
    record = {"server": server_record, "host": host_record, "gateway": gateway_record}[role]
    assert tuple(record.MODULES) == ROLES[role].profiles
    for profile, module in record.MODULES.items():
        assert module.__name__ == f"{ROLES[role].package}.{profile.replace('-', '_')}"
        assert shape_problem(module, profile, ROLES[role].module_names) is None
        sites = {REGISTRY[cid].site for cid in ROLES[role].check_ids() if REGISTRY[cid].profile == profile}
        assert sites == {module.__name__}, sites


def test_a_profile_module_without_a_name_its_role_reads_is_refused():
    """A server profile module without HOW_TO_CLAIM is an error when the role's record step is imported, not
    when a run first reports an unclaimed profile."""
    module = types.ModuleType("conformance.server.augmentation")
    module.PROFILE, module.PLAN = "augmentation", object()
    assert "HOW_TO_CLAIM" in (shape_problem(module, "augmentation", SERVER.module_names) or "")
    assert shape_problem(module, "augmentation", HOST.module_names) is None
    module.HOW_TO_CLAIM = "advertise capabilities.augmentation"
    assert shape_problem(module, "augmentation", SERVER.module_names) is None
    module.PROFILE = "augmentations"
    assert "PROFILE = 'augmentation'" in (shape_problem(module, "augmentation", SERVER.module_names) or "")


@pytest.mark.parametrize("role", sorted(ROLES))
def test_a_role_has_checks_for_exactly_its_profiles(role):
    ids = ROLES[role].check_ids()
    assert ids and all(REGISTRY[cid].role == role for cid in ids)
    assert {REGISTRY[cid].profile for cid in ids} == set(ROLES[role].profiles)


def test_a_role_refuses_a_profile_it_has_no_checks_for():
    assert SERVER.profile_error(["nonsense"]) == (
        "'nonsense' is not a server-role profile; they are: " + ", ".join(SERVER.profiles))
    assert SERVER.profile_error(["sequential-pipeline"]) == (
        "'sequential-pipeline' is not a server-role profile: it is the gateway role's")
    assert GATEWAY.profile_error(["sequential-pipeline", "augmentation"]) is None


@pytest.mark.parametrize("role, given, said", [
    (SERVER, "interceptor", "did you mean 'interceptors'?"),
    (HOST, "Execution-Requirements", "did you mean 'execution-requirements'?"),
    (GATEWAY, "sequential_pipeline", "did you mean 'sequential-pipeline'?"),
    (SERVER, "sequential-pipelines", "did you mean 'sequential-pipeline'? it is the gateway role's"),
])
def test_a_profile_typo_is_told_the_name_it_is_close_to(role, given, said):
    assert said in role.profile_error([given])


@pytest.mark.parametrize("rec", [ServerRecording("augmentation", {}), HostRecording("augmentation", {}),
                                 TransparencyRecording("augmentation", {}), PipelineRecording()],
                         ids=["server", "host", "gateway-transparency", "gateway-pipeline"])
def test_every_recording_satisfies_the_protocol_and_cites_explicitly(rec):
    assert isinstance(rec, Recording)
    assert rec.cited == []
    with pytest.raises(NotObserved):
        rec.cite("never-happened")
    assert rec.cited == ["never-happened"]  # cited evidence is reported even when it is missing
