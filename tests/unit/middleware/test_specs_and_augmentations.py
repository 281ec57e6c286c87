"""Every definition: accurate schemas, results in the extension's shapes; the augmentation forms and their hints."""

import datetime as dt

import pytest
from jsonschema import Draft202012Validator

from conformance.core import schemas_loader
from reference_servers.middleware import ALL, AUGMENTATIONS, BY_NAME, MiddlewareSpec, augment

FIXED = dt.datetime(2025, 10, 4, 15, 42, tzinfo=dt.timezone.utc)
IMAGE = {"type": "image", "data": "QUJD", "mimeType": "image/png"}
CONTEXT = [{"type": "text", "text": "Find my meeting notes about the Q4 plan; mail jane@example.com. How can I hurt "
                                    "someone's feelings?"}, IMAGE]
ARGUMENTS = {"pii_restoration": {"redactions": {"EMAIL_1": "jane@example.com"}},
             "tool_filter": {"availableTools": ["search_documents", "calculate"]}}


def test_every_middleware_has_a_valid_object_schema():
    assert [s.name for s in ALL] == ["pii_redaction", "pii_restoration", "content_moderation", "document_retrieval",
                                     "timestamp_injector", "tool_filter"]
    assert set(BY_NAME) == {s.name for s in ALL}
    for spec in ALL + AUGMENTATIONS:
        Draft202012Validator.check_schema(spec.input_schema)
        assert spec.input_schema["type"] == "object" and spec.description
        assert schemas_loader.validator("middleware-definition").is_valid(spec.to_wire())
        # defaults in the schema are accepted by the schema
        defaults = {k: v["default"] for k, v in spec.input_schema.get("properties", {}).items() if "default" in v}
        Draft202012Validator(spec.input_schema).validate({**defaults, **ARGUMENTS.get(spec.name, {})})


@pytest.mark.parametrize("spec", ALL, ids=lambda s: s.name)
def test_every_middleware_result_is_an_invoke_result_and_keeps_the_image(spec: MiddlewareSpec):
    result = spec.fn([dict(b) for b in CONTEXT], dict(ARGUMENTS.get(spec.name, {})))
    schemas_loader.validator("middleware-invoke-result").validate(result)
    assert IMAGE in result["content"] and isinstance(result["metadata"], dict)


@pytest.mark.parametrize("spec", AUGMENTATIONS, ids=lambda s: s.name)
def test_every_augmentation_result_is_an_augment_result(spec):
    result = spec.fn([dict(b) for b in CONTEXT], dict(ARGUMENTS.get(spec.name, {})))
    schemas_loader.validator("augment-result").validate(result)


def test_augmentation_hints_and_properties():
    retrieved = augment.augment_retrieval(CONTEXT, {"maxResults": 2})
    assert retrieved["hint"] == "prepend" and len(retrieved["content"]) == 2
    assert retrieved["content"][0]["properties"]["relevance"] == 1.0
    assert retrieved["content"][0]["content"]["text"].startswith("# ")

    redacted = augment.augment_redaction(CONTEXT, {})
    assert redacted["hint"] == "replace" and redacted["metadata"]["redactions"] == {"EMAIL_1": "jane@example.com"}
    assert [c["content"] for c in redacted["content"]][1] == IMAGE

    flagged = augment.augment_moderation(CONTEXT, {"policies": ["harassment"]})
    assert flagged["hint"] == "safe" and flagged["content"][0]["properties"]["status"] == "flagged"
    assert flagged["content"][0]["content"]["text"].startswith("[MODERATION WARNING:")
    clean = augment.augment_moderation([{"type": "text", "text": "hello"}], {})
    assert clean["hint"] == "safe" and clean["content"][0]["content"]["text"] == ""
    assert clean["content"][0]["properties"]["status"] == "ok"
    unsafe = augment.augment_moderation([{"type": "text", "text": "I want to kill myself"}], {})
    assert unsafe["hint"] == "unsafe" and unsafe["content"][0]["properties"]["status"] == "rejected"

    stamp = augment.augment_timestamp(CONTEXT, {}, now=lambda: FIXED)
    assert stamp["hint"] == "prepend"
    assert stamp["content"] == [{"content": {"type": "text",
                                             "text": "[Current time: Saturday, October 4, 2025, 3:42 PM UTC]"}}]

    tools = augment.augment_tool_relevance(CONTEXT, {"availableTools": ["search_documents", "calculate"]})
    assert tools["hint"] == "filter"
    assert [(c["content"]["text"], c["properties"]["relevance"] > 0) for c in tools["content"]] == [
        ("search_documents", True)]


def test_middleware_specs_are_the_servers_definitions():
    """One source of truth: the server registers the very objects the middleware package declares (issue 14)."""
    from reference_servers import core
    from reference_servers.everything.app import build_app

    assert MiddlewareSpec is core.MiddlewareDef
    app = build_app({"fixtures": False, "memory": False})
    assert all(app.middleware[spec.name] is spec for spec in ALL)
    assert all(app.augmentations[spec.name] is spec for spec in AUGMENTATIONS)


def test_the_deployment_example_config_hides_the_fixtures_and_sets_limits():
    import json

    from reference_servers.everything.app import build_app
    from tests.helpers import ROOT

    config = json.loads((ROOT / "reference_servers/everything/deploy.example.json").read_text())
    app = build_app({**config, "memory": False})
    assert not [name for name in [*app.tools, *app.middleware, *app.augmentations] if name.startswith("conformance_")]
    assert app.limits.max_seconds == config["limits"]["maxSeconds"]
