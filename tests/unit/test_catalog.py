"""The catalog and the check registry agree: every check names a row, every MUST/SHOULD row is covered."""

from conformance import catalog
from conformance.model import REGISTRY
from conformance.roles import load_all

load_all()


def test_catalog_and_registry_agree():
    assert catalog.problems() == []


def test_every_check_has_two_sentences_and_a_level():
    for check in REGISTRY.values():
        assert check.does and check.must, check.id
        assert catalog.level_of(check.id) in ("MUST", "SHOULD", "MAY", "BEHAVIOR")


def test_check_descriptions_are_unique():
    musts = [c.must for c in REGISTRY.values() if c.slug != "wire-messages-valid"]
    assert len(musts) == len(set(musts)) or _only_shared_by_siblings(musts)


def _only_shared_by_siblings(musts):
    # The same rule may be checked per profile (e.g. unadvertised-method-rejected): allow those pairs only.
    dupes = {m for m in musts if musts.count(m) > 1}
    slugs = {c.slug for c in REGISTRY.values() if c.must in dupes}
    return slugs <= {"unadvertised-method-rejected"}
