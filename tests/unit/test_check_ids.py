"""Every check id is written out in full in the module that registered it, so a search for a failing id finds
its judge: factories take full ids and tables list them (docs/check-model.md, "Check ids")."""

import importlib
import inspect

import pytest

from conformance.core.model import REGISTRY
from conformance.core.roles import load_all

load_all()


@pytest.mark.parametrize("check_id", sorted(REGISTRY))
def test_the_id_is_written_in_full_where_it_is_registered(check_id):
    site = REGISTRY[check_id].site
    assert site.startswith("conformance."), f"{check_id} registered from {site!r}"
    module = importlib.import_module(site)
    source = inspect.getsource(module)
    assert f'"{check_id}"' in source or f"'{check_id}'" in source, \
        f"{check_id} is registered by {site}, whose source does not spell it out"
    # A profile module registers its own profile's ids (a copied factory call keeps no other profile's id).
    assert getattr(module, "PROFILE", REGISTRY[check_id].profile) == REGISTRY[check_id].profile, site
