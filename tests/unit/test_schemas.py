"""The schemas accept the source documents' examples and reject what the sources rule out."""

import pytest
from jsonschema import Draft202012Validator

from conformance import schemas_loader

OBJ = {"type": "object"}

VALID = {
    "004 middleware/list example": ("middleware-list-result", {"middleware": [
        {"name": "pii_redaction", "description": "Remove PII", "inputSchema": {"type": "object", "properties": {
            "aggressiveness": {"type": "string", "enum": ["standard", "strict"], "default": "standard"}}}},
        {"name": "content_moderation", "inputSchema": {"type": "object", "properties": {
            "policies": {"type": "array", "items": {"type": "string"}}}}}]}),
    "004 invoke request": ("middleware-invoke-params", {"name": "pii_redaction", "arguments": {"aggressiveness": "strict"},
                                                        "context": [{"type": "text", "text": "My SSN is 123-45-6789"}]}),
    "004 example 1 result": ("middleware-invoke-result", {"content": [{"type": "text", "text": "[PERSON_1] ([EMAIL_1])"}],
                                                          "metadata": {"redactions": {"PERSON_1": "Jane Smith"}}}),
    "004 example 5 result (no metadata)": ("middleware-invoke-result", {"content": [{"type": "text", "text": "[Current time]"}]}),
    "004 example 6 result": ("middleware-invoke-result", {"content": [{"type": "text", "text": "Find notes"}], "metadata": {
        "relevantTools": [{"name": "search_documents", "score": 0.92}], "suggestedToolSet": ["search_documents"]}}),
    # The RFC's example uses "parameters"; the reference-level section uses inputSchema, which is what MCP tools carry.
    "000 RetrieveMemories (reference-level shape)": ("tool-preprocessor", {"name": "RetrieveMemories", "inputSchema": {
        "type": "object", "properties": {"query": {"type": "string"}}}, "preprocessor": True}),
    "002 launch_rocket": ("tool-execution", {"name": "launch_rocket", "inputSchema": OBJ, "execution": {"requirements": [
        "auth:oauth2", "auth:claim:role:mission_control", "capability:rocket.launch", "env:production"]}}),
    "002 requirements beside taskSupport": ("tool-execution", {"name": "t", "inputSchema": OBJ, "execution": {
        "taskSupport": "optional", "requirements": []}}),
    "001 RAG augment, schema shape": ("augment-result", {"content": [
        {"content": {"type": "text", "text": "The 2025 Model A…"}, "properties": {"relevance": 0.92}}], "hint": "prepend"}),
    "001 augment params, array context": ("augment-params", {"name": "retrieve", "arguments": {"maxResults": 3},
                                                             "context": [{"type": "text", "text": "key features?"}]}),
    "001 audio context": ("augment-params", {"name": "moderate", "context": [
        {"type": "audio", "data": "QUJD", "mimeType": "audio/wav"}]}),
    "augmentation list": ("augmentation-list-result", {"augmentations": [{"name": "retrieve", "inputSchema": OBJ}],
                                                       "nextCursor": "2"}),
    "capabilities": ("capabilities", {"tools": {}, "contextMiddleware": {}, "augmentation": {"listChanged": False}}),
    "every content type": ("middleware-invoke-result", {"content": [
        {"type": "text", "text": "t", "annotations": {"audience": ["user"], "priority": 0.5}},
        {"type": "image", "data": "AA==", "mimeType": "image/png"}, {"type": "audio", "data": "AA==", "mimeType": "audio/wav"},
        {"type": "resource_link", "uri": "file:///a", "name": "a"},
        {"type": "resource", "resource": {"uri": "file:///b", "blob": "AA=="}}]}),
}

INVALID = {
    "preprocessor as a string": ("tool-preprocessor", {"name": "t", "inputSchema": OBJ, "preprocessor": "true"}),
    "requirements as one string": ("tool-execution", {"name": "t", "inputSchema": OBJ, "execution": {"requirements": "a:b"}}),
    "requirement that is a number": ("tool-execution", {"name": "t", "inputSchema": OBJ, "execution": {"requirements": ["a:b", 1]}}),
    "unknown taskSupport": ("tool-execution", {"name": "t", "inputSchema": OBJ, "execution": {"taskSupport": "maybe"}}),
    "middleware inputSchema of type string": ("middleware-list-result", {"middleware": [{"name": "m", "inputSchema": {"type": "string"}}]}),
    "invoke result without content": ("middleware-invoke-result", {"metadata": {}}),
    "invoke metadata not an object": ("middleware-invoke-result", {"content": [], "metadata": "none"}),
    "augmentation without inputSchema": ("augmentation-list-result", {"augmentations": [{"name": "a"}]}),
    "content of unknown type": ("middleware-invoke-result", {"content": [{"type": "video", "data": "x"}]}),
    "image without mimeType": ("middleware-invoke-result", {"content": [{"type": "image", "data": "x"}]}),
    "embedded resource without text or blob": ("middleware-invoke-result", {"content": [{"type": "resource", "resource": {"uri": "u"}}]}),
    "augment result with bare blocks": ("augment-result", {"content": [{"type": "text", "text": "x"}]}),
    # PR #142's prose examples: one context object, and "contents" in the result
    "001 prose: single context object": ("augment-params", {"name": "retrieve", "context": {"type": "text", "text": "q"}}),
    "001 prose: contents instead of content": ("augment-result", {"contents": [{"content": {"type": "text", "text": "x"}}]}),
    "resource_link in augment context": ("augment-params", {"name": "a", "context": [{"type": "resource_link", "uri": "u", "name": "n"}]}),
    "contextMiddleware as true": ("capabilities", {"contextMiddleware": True}),
}


@pytest.mark.parametrize("name", sorted(schemas_loader.schemas()))
def test_schema_is_valid_2020_12(name):
    Draft202012Validator.check_schema(schemas_loader.schemas()[name])


@pytest.mark.parametrize("case", sorted(VALID))
def test_valid_examples(case):
    schema, instance = VALID[case]
    assert schemas_loader.errors(schema, instance) == []


@pytest.mark.parametrize("case", sorted(INVALID))
def test_invalid_examples(case):
    schema, instance = INVALID[case]
    assert schemas_loader.errors(schema, instance)
