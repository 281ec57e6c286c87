"""The JSON Schemas in schemas/: well-formed, cross-referenced, and faithful to the source documents.

Valid cases are the source documents' own examples (Preprocessor Tools RFC, PR #142, SEP-2487,
Context Middleware SEP), with the adjustments noted beside each; invalid cases are what the sources rule out.
Everything goes through conformance.core.schemas_loader, the loader the checks use.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from conformance.core import schemas_loader

SCHEMA_DIR = Path(__file__).resolve().parents[2] / "schemas"
BASE = "https://mcp-ext-conformance.dev/schemas/"
EXPECTED_FILES = {
    "content", "tool-preprocessor", "tool-execution", "middleware-definition", "middleware-list-result",
    "middleware-invoke-params", "middleware-invoke-result", "augmentation-definition", "augmentation-list-result",
    "augment-params", "augment-result", "capabilities", "results", "pipeline-fixture",
    "interceptor-hook", "interceptor-definition", "interceptor-list-result", "interceptor-invoke-params",
    "interceptor-invoke-result", "interceptor-capability",
}

OBJ = {"type": "object"}


def text(value: str) -> dict:
    return {"type": "text", "text": value}


# --- Context Middleware SEP: the examples as written (params and results) -------------------------------------

MIDDLEWARE_LIST_EXAMPLE = {
    "middleware": [
        {
            "name": "pii_redaction",
            "description": "Remove PII from context before sending to LLM",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "aggressiveness": {"type": "string", "enum": ["standard", "strict"], "default": "standard"},
                },
            },
        },
        {
            "name": "content_moderation",
            "description": "Analyze context for policy violations",
            "inputSchema": {
                "type": "object",
                "properties": {"policies": {"type": "array", "items": {"type": "string"}}},
            },
        },
    ]
}

INVOKE_EXAMPLES = {
    "specification": (
        {"name": "pii_redaction", "arguments": {"aggressiveness": "strict"},
         "context": [text("My name is John Doe and my SSN is 123-45-6789")]},
        {"content": [text("My name is [PERSON_1] and my SSN is [SSN_1]")],
         "metadata": {"redactions": [{"handle": "PERSON_1", "type": "person"}, {"handle": "SSN_1", "type": "ssn"}]}},
    ),
    "example 1 PII redaction": (
        {"name": "pii_redaction", "arguments": {},
         "context": [text("Please review this contract for Jane Smith ([email protected], SSN: 987-65-4321)")]},
        {"content": [text("Please review this contract for [PERSON_1] ([EMAIL_1], SSN: [SSN_1])")],
         "metadata": {"redactions": {"PERSON_1": "Jane Smith", "EMAIL_1": "[email protected]",
                                     "SSN_1": "987-65-4321"}}},
    ),
    "example 2 PII restoration": (
        {"name": "pii_restoration",
         "arguments": {"redactions": {"PERSON_1": "Jane Smith", "EMAIL_1": "[email protected]"}},
         "context": [text("I've reviewed the contract for [PERSON_1]. Please send it to [EMAIL_1].")]},
        {"content": [text("I've reviewed the contract for Jane Smith. Please send it to [email protected].")]},
    ),
    "example 3 content moderation": (
        {"name": "content_moderation", "arguments": {"policies": ["violence", "harassment"]},
         "context": [text("How can I hurt someone's feelings?")]},
        {"content": [text("[MODERATION WARNING: This query may seek harmful advice]\n\n"
                          "How can I hurt someone's feelings?")],
         "metadata": {"flags": ["potential_harm_seeking"], "severity": "medium", "allow": True}},
    ),
    "example 4 RAG injection": (
        {"name": "document_retrieval", "arguments": {"maxResults": 3, "sources": ["internal_docs", "email"]},
         "context": [text("What was discussed in the Q4 planning meeting?")]},
        {"content": [text("[Retrieved Documents]\n\n# Q4 Planning Notes (Oct 1, 2025)\n- Focus on EMEA expansion\n"
                          "- Budget: $2M allocated\n\n# Email from Sarah (Oct 3)\nRe: Q4 priorities - confirming "
                          "team assignments\n\n---\n\nWhat was discussed in the Q4 planning meeting?")],
         "metadata": {"sources": [{"title": "Q4 Planning Notes", "relevance": 0.95},
                                  {"title": "Email from Sarah", "relevance": 0.87}]}},
    ),
    "example 5 timestamp injection": (
        {"name": "timestamp_injector", "arguments": {}, "context": [text("What's on my calendar today?")]},
        {"content": [text("[Current time: Saturday, October 4, 2025, 3:42 PM UTC]\n\nWhat's on my calendar today?")]},
    ),
    "example 6 tool filtering": (
        {"name": "tool_filter",
         "arguments": {"availableTools": ["search_email", "search_documents", "search_calendar", "calculate",
                                          "send_email"]},
         "context": [text("Find my meeting notes from last week about the marketing campaign")]},
        {"content": [text("Find my meeting notes from last week about the marketing campaign")],
         "metadata": {"relevantTools": [{"name": "search_documents", "score": 0.92},
                                        {"name": "search_email", "score": 0.78},
                                        {"name": "search_calendar", "score": 0.65}],
                      "suggestedToolSet": ["search_documents", "search_email", "search_calendar"]}},
    ),
}

# --- PR #142: the discussion's examples, adjusted to the PR's schema --------------------------------------
# The captured examples send `context` as a single block, call the result array `contents`, leave trailing
# commas in the tool-relevance example and put one result under `response`. The PR's schema
# diff has `context: Block[]` and `content: AugmentedContent[]`; these are the same
# examples in that shape. The literal forms appear among the invalid cases below.

AUGMENT_EXAMPLES = {
    "example 1 RAG": (
        {"name": "retrieve",
         "context": [text("What are the key features of our new electric vehicle model?")],
         "arguments": {"maxResults": 3, "minRelevance": 0.7}},
        {"content": [
            {"content": text("The 2025 Model A features a 400-mile range on a single charge and supports "
                             "ultra-fast charging..."), "properties": {"relevance": 0.92}},
            {"content": text("Safety features include advanced driver assistance with 360-degree sensor "
                             "coverage..."), "properties": {"relevance": 0.85}},
            {"content": text("The dual motor configuration delivers 0-60mph acceleration in 3.8 seconds..."),
             "properties": {"relevance": 0.78}},
        ], "hint": "prepend"},
    ),
    "example 2 moderation, clean": (
        {"name": "moderate",
         "context": [{"type": "audio", "data": "base64ABC...snip...", "mimeType": "audio/wav"}],
         "arguments": {"categories": ["hate", "violence", "explicit"],
                       "thresholds": {"hate": 0.7, "violence": 0.8, "explicit": 0.6}}},
        {"content": [{"content": text(""),
                      "properties": {"status": "ok",
                                     "scores": {"hate": 0.1, "violence": 0.05, "explicit": 0.15}}}]},
    ),
    "example 2 moderation, rejected": (
        {"name": "moderate",
         "context": [{"type": "audio", "data": "base64ABC...snip...", "mimeType": "audio/wav"}],
         "arguments": {"categories": ["hate", "violence", "explicit"]}},
        {"content": [{"content": text("I apologize, but I cannot process this audio as it appears to contain "
                                      "content that violates our content policies regarding explicit language."),
                      "properties": {"status": "rejected",
                                     "scores": {"hate": 0.2, "violence": 0.3, "explicit": 0.85}}}]},
    ),
    "example 3 tool relevance": (
        {"name": "toolRelevance",
         "context": [text("Can you help me figure out why the performance of my investment portfolio has "
                          "suddenly changed?")],
         "arguments": {"tools": [
             {"name": "search_news", "description": "Search recent news articles",
              "inputSchema": {"type": "object",
                              "properties": {"query": {"type": "string"}, "days": {"type": "number"}}}},
             {"name": "get_stock_data", "description": "Fetch stock market performance data",
              "inputSchema": {"type": "object",
                              "properties": {"symbol": {"type": "string"}, "period": {"type": "string"}}}},
             {"name": "weather_forecast", "description": "Get weather forecast for a location",
              "inputSchema": {"type": "object",
                              "properties": {"location": {"type": "string"}, "days": {"type": "number"}}}},
         ]}},
        {"content": [
            {"content": text("get_stock_data"), "properties": {"relevance": 0.95}},
            {"content": text("search_news"), "properties": {"relevance": 0.82}},
            {"content": text("weather_forecast"), "properties": {"relevance": 0.12}},
        ], "hint": "filter"},
    ),
}

EVERY_BLOCK = [
    {"type": "text", "text": "t", "annotations": {"audience": ["user", "assistant"], "priority": 0.5,
                                                  "lastModified": "2025-01-12T15:00:58Z"}, "_meta": {"k": 1}},
    {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
    {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav", "annotations": {"priority": 1}},
    {"type": "resource_link", "uri": "file:///notes.md", "name": "notes.md", "title": "Notes",
     "description": "Meeting notes", "mimeType": "text/markdown", "size": 1024},
    {"type": "resource", "resource": {"uri": "file:///a.txt", "mimeType": "text/plain", "text": "hello"}},
    {"type": "resource", "resource": {"uri": "file:///b.bin", "blob": "AAEC"}, "_meta": {}},
]


def results_document(**changes) -> dict:
    """A complete results.json, as the suite writes it; keyword arguments replace top-level members."""
    doc = {
        "format": "mcp-ext-conformance/results", "formatVersion": 1,
        "suite": {"name": "mcp-ext-conformance", "version": "0.1.0"},
        "role": "server", "target": {"kind": "stdio", "command": "python -m reference_servers.everything"},
        "sdk": {"mcp": "1.30.0"},
        "startedAt": "2026-04-01T10:00:00Z", "finishedAt": "2026-04-01T10:00:07.25+02:00",
        "durationSeconds": 7.25, "strict": False,
        "profiles": {
            "preprocessor-tools": {"claimed": False, "claimedBy": None, "reason": "the server shows nothing of this profile"},
            "execution-requirements": {"claimed": True, "claimedBy": "advertisement", "reason": "a tool carries execution.requirements"},
            "context-middleware": {"claimed": True, "claimedBy": "option", "reason": "claimed with --profile"},
            "augmentation": {"claimed": False, "claimedBy": None, "reason": "not recorded"},
            "sequential-pipeline": {"claimed": False, "claimedBy": None, "reason": "no server-role checks ran"},
        },
        "summary": {"total": 2, "pass": 1, "fail": 1, "warn": 0, "info": 0, "skip": 0, "xfail": 0, "stale": 0},
        "exitCode": 1,
        "checks": [
            {"id": "execution-requirements/server/unmet-requirement-fails-call", "profile": "execution-requirements",
             "role": "server", "slug": "unmet-requirement-fails-call", "level": "MUST", "outcome": "fail",
             "rows": ["ER-S-02"], "requirement": "If any requirement is not satisfied, the server fails the call",
             "description": "calls conformance_gated_unmet", "reason": "the call succeeded",
             "expected": {"isError": True}, "actual": {"isError": False}, "durationSeconds": 0.031,
             "exchanges": [{"label": "call conformance_gated_unmet",
                            "request": {"method": "tools/call", "params": {"name": "conformance_gated_unmet"}},
                            "response": {"content": []}, "failure": None, "elapsedSeconds": 0.002}]},
            {"id": "context-middleware/server/list-shape", "profile": "context-middleware", "role": "server",
             "slug": "list-shape", "level": "MUST", "outcome": "pass", "rows": ["CM-S-01"],
             "requirement": "middleware/list returns {middleware: MiddlewareDefinition[]}",
             "description": "sends middleware/list", "reason": None, "durationSeconds": 0.0,
             "expectedFailure": True},
        ],
    }
    doc.update(changes)
    return doc


def check_with(**changes) -> dict:
    return results_document(checks=[{**results_document()["checks"][0], **changes}])


def exchange_with(**changes) -> dict:
    exchange = {**results_document()["checks"][0]["exchanges"][0], **changes}
    return check_with(exchanges=[exchange])


def profiles_with(**claim) -> dict:
    return results_document(profiles={"augmentation": claim})


VALID = [
    # Context Middleware SEP
    ("middleware-list-result", MIDDLEWARE_LIST_EXAMPLE, "CM SEP middleware/list response"),
    ("middleware-list-result", {"middleware": [], "nextCursor": "abc", "_meta": {}}, "CM SEP empty list with cursor"),
    ("middleware-definition", {"name": "timestamp_injector"}, "CM SEP definition without inputSchema"),
    ("middleware-definition", {"name": "m", "inputSchema": OBJ}, "CM SEP inputSchema without properties"),
    *[("middleware-invoke-params", params, f"CM SEP invoke params {case}")
      for case, (params, _) in INVOKE_EXAMPLES.items()],
    *[("middleware-invoke-result", result, f"CM SEP invoke result {case}")
      for case, (_, result) in INVOKE_EXAMPLES.items()],
    ("middleware-invoke-params", {"name": "m", "context": EVERY_BLOCK}, "CM SEP context of every content type"),
    ("middleware-invoke-params", {"name": "m", "context": []}, "CM SEP empty context, no arguments"),
    ("middleware-invoke-result", {"content": EVERY_BLOCK, "metadata": {}, "_meta": {"x": 1}},
     "CM SEP result of every content type"),
    ("capabilities", {"contextMiddleware": {}}, "CM SEP capability declaration"),
    # Preprocessor Tools RFC. The RFC's guide-level RetrieveMemories example names the schema "parameters"; its
    # reference-level section (and MCP) name it "inputSchema". The reference-level shape is tested here;
    # the literal example is among the invalid cases.
    ("tool-preprocessor", {"name": "RetrieveMemories", "description": "Retrieves relevant user memories",
                           "inputSchema": {"type": "object", "properties": {"query": {
                               "type": "string", "description": "The user input to match against memories"}}},
                           "preprocessor": True}, "RFC RetrieveMemories, reference-level shape"),
    ("tool-preprocessor", {"name": "string", "description": "string",
                           "inputSchema": {"type": "object", "properties": {}}, "preprocessor": True},
     "RFC reference-level template"),
    ("tool-preprocessor", {"name": "conformance_echo", "inputSchema": OBJ, "preprocessor": False},
     "RFC preprocessor false"),
    ("tool-preprocessor", {"name": "conformance_echo", "inputSchema": OBJ}, "RFC no preprocessor field"),
    ("tool-preprocessor", {"name": "t", "inputSchema": OBJ, "preprocessor": True, "annotations": {},
                           "x-vendor": 1}, "RFC tool with other fields (open object)"),
    # SEP-2487. The SEP's launch_rocket example shows only the name and the new field; a Tool on the wire
    # also has inputSchema, added here.
    ("tool-execution", {"name": "launch_rocket", "inputSchema": OBJ, "execution": {"requirements": [
        "auth:oauth2", "auth:claim:role:mission_control", "capability:rocket.launch", "env:production",
        "state:weather.clear", "feature:launch_window.open"]}}, "SEP-2487 launch_rocket"),
    ("tool-execution", {"name": "t", "inputSchema": OBJ, "execution": {"requirements": []}},
     "SEP-2487 empty requirements"),
    ("tool-execution", {"name": "t", "inputSchema": OBJ, "execution": {"requirements": [
        "Conformance:Satisfied", "no-namespace", "", "dup", "dup"]}},
     "SEP-2487 opaque strings: no namespacing or uniqueness required"),
    ("tool-execution", {"name": "t", "inputSchema": OBJ, "execution": {"taskSupport": "optional",
                                                                       "requirements": ["conformance:satisfied"]}},
     "SEP-2487 requirements beside taskSupport"),
    ("tool-execution", {"name": "t", "inputSchema": OBJ, "execution": {}}, "SEP-2487 empty execution"),
    ("tool-execution", {"name": "t", "inputSchema": OBJ}, "SEP-2487 no execution"),
    # PR #142
    *[("augment-params", params, f"PR #142 augment params {case}") for case, (params, _) in AUGMENT_EXAMPLES.items()],
    *[("augment-result", result, f"PR #142 augment result {case}") for case, (_, result) in AUGMENT_EXAMPLES.items()],
    ("augment-params", {"name": "a", "context": [b for b in EVERY_BLOCK if b["type"] != "resource_link"]},
     "PR #142 context of the four allowed types"),
    ("augment-result", {"content": [{"content": block} for block in EVERY_BLOCK], "hint": "replace",
                        "metadata": {"n": 1}}, "PR #142 result wrapping every content type"),
    ("augment-result", {"content": []}, "PR #142 empty result"),
    ("augmentation-definition", {"name": "retrieve", "description": "RAG", "inputSchema": {
        "type": "object", "properties": {"maxResults": {"type": "integer"}}}}, "PR #142 augmentation definition"),
    ("augmentation-list-result", {"augmentations": [{"name": "conformance_identity", "inputSchema": OBJ},
                                                    {"name": "conformance_prepend_note", "inputSchema": OBJ}],
                                  "nextCursor": "2"}, "PR #142 augmentation list with cursor"),
    ("capabilities", {"augmentation": {"listChanged": True}}, "PR #142 capability with listChanged"),
    ("capabilities", {"augmentation": {}}, "PR #142 capability without listChanged"),
    ("capabilities", {"tools": {"listChanged": True}, "contextMiddleware": {}, "augmentation": {"listChanged": False},
                      "experimental": {}}, "capabilities beside the base ones"),
    ("capabilities", {}, "no extension capability"),
    # MCP content blocks on their own
    *[("content", block, f"content {block['type']}" + (f" ({'text' if 'text' in block['resource'] else 'blob'})"
                                                        if block["type"] == "resource" else ""))
      for block in EVERY_BLOCK],
    ("content", {"type": "text", "text": "x", "vendorField": True}, "content with unknown member (open)"),
    ("content", {"type": "resource", "resource": {"uri": "u", "text": "t", "blob": "AA=="}},
     "content resource with both text and blob (anyOf, as MCP)"),
    # results.json
    ("results", results_document(), "results: complete document"),
    ("results", results_document(checks=[], summary={k: 0 for k in results_document()["summary"]},
                                 exitCode=0, sdk={"mcp": None}), "results: no checks, no SDK"),
    ("results", results_document(exitCode=2, unavailable="connection refused",
                                 target={"kind": "http", "url": "http://127.0.0.1:8000/mcp"}),
     "results: unreachable http target"),
    ("results", results_document(target={"kind": "docker", "image": "example/server:1"}), "results: docker target"),
    ("results", results_document(role="gateway", target={"kind": "adapter", "adapter": "pkg.mod:factory"}),
     "results: gateway adapter target"),
]

INVALID = [
    # Preprocessor Tools RFC
    ("tool-preprocessor", {"name": "t", "inputSchema": OBJ, "preprocessor": "true"}, "/preprocessor",
     "RFC preprocessor as the string 'true'"),
    ("tool-preprocessor", {"name": "t", "inputSchema": OBJ, "preprocessor": 1}, "/preprocessor",
     "RFC preprocessor as 1"),
    ("tool-preprocessor", {"name": "t", "inputSchema": OBJ, "preprocessor": None}, "/preprocessor",
     "RFC preprocessor as null"),
    # The RFC's guide-level example as captured: "parameters" instead of "inputSchema" is not an MCP Tool.
    ("tool-preprocessor", {"name": "RetrieveMemories", "description": "Retrieves relevant user memories",
                           "parameters": {"type": "object", "properties": {"query": {"type": "string"}}},
                           "preprocessor": True}, "(root)", "RFC RetrieveMemories literally, parameters not inputSchema"),
    ("tool-preprocessor", {"name": "t", "inputSchema": {"type": "string"}}, "/inputSchema/type",
     "RFC tool inputSchema of type string"),
    ("tool-preprocessor", {"inputSchema": OBJ, "preprocessor": True}, "(root)", "RFC tool without name"),
    # SEP-2487
    ("tool-execution", {"name": "t", "inputSchema": OBJ, "execution": {"requirements": "auth:oauth2"}},
     "/execution/requirements", "SEP-2487 requirements as one string"),
    ("tool-execution", {"name": "t", "inputSchema": OBJ, "execution": {"requirements": ["auth:oauth2", 1]}},
     "/execution/requirements/1", "SEP-2487 requirement that is a number"),
    ("tool-execution", {"name": "t", "inputSchema": OBJ, "execution": {"requirements": [None]}},
     "/execution/requirements/0", "SEP-2487 requirement that is null"),
    ("tool-execution", {"name": "t", "inputSchema": OBJ, "execution": {"requirements": {"auth": "oauth2"}}},
     "/execution/requirements", "SEP-2487 requirements as an object"),
    ("tool-execution", {"name": "t", "inputSchema": OBJ, "execution": ["auth:oauth2"]}, "/execution",
     "SEP-2487 execution as an array"),
    ("tool-execution", {"name": "t", "inputSchema": OBJ, "execution": {"taskSupport": "maybe"}},
     "/execution/taskSupport", "SEP-2487 unknown taskSupport"),
    ("tool-execution", {"name": "launch_rocket", "execution": {"requirements": ["auth:oauth2"]}}, "(root)",
     "SEP-2487 launch_rocket literally, without inputSchema"),
    # Context Middleware SEP
    ("middleware-list-result", {"middleware": [{"name": "m", "inputSchema": {"type": "string"}}]},
     "/middleware/0/inputSchema/type", "CM SEP middleware inputSchema of type string"),
    ("middleware-list-result", {"middleware": [{"name": "m", "inputSchema": {"properties": {}}}]},
     "/middleware/0/inputSchema", "CM SEP middleware inputSchema without type"),
    ("middleware-list-result", {"middleware": [{"name": "m", "inputSchema": {"type": "object", "properties": []}}]},
     "/middleware/0/inputSchema/properties", "CM SEP inputSchema properties not an object"),
    ("middleware-list-result", {"middleware": [{"description": "no name"}]}, "/middleware/0",
     "CM SEP middleware without name"),
    ("middleware-list-result", {"middleware": [{"name": ""}]}, "/middleware/0/name", "CM SEP empty middleware name"),
    ("middleware-list-result", {"middleware": {"name": "m"}}, "/middleware", "CM SEP middleware not an array"),
    ("middleware-list-result", {"tools": []}, "(root)", "CM SEP list result without middleware"),
    ("middleware-invoke-params", {"name": "m", "arguments": {}}, "(root)", "CM SEP invoke params without context"),
    ("middleware-invoke-params", {"name": "m", "context": text("x")}, "/context",
     "CM SEP invoke context as a single block"),
    ("middleware-invoke-params", {"name": "m", "context": ["plain string"]}, "/context/0",
     "CM SEP invoke context of bare strings"),
    ("middleware-invoke-params", {"name": "m", "arguments": ["strict"], "context": []}, "/arguments",
     "CM SEP invoke arguments as an array"),
    ("middleware-invoke-params", {"context": []}, "(root)", "CM SEP invoke params without name"),
    ("middleware-invoke-result", {"metadata": {}}, "(root)", "CM SEP invoke result without content"),
    ("middleware-invoke-result", {"content": text("x")}, "/content", "CM SEP invoke result content not an array"),
    ("middleware-invoke-result", {"content": [], "metadata": "none"}, "/metadata",
     "CM SEP invoke result metadata not an object"),
    ("capabilities", {"contextMiddleware": True}, "/contextMiddleware", "CM SEP capability as true"),
    # PR #142
    ("augmentation-definition", {"name": "retrieve", "description": "RAG"}, "(root)",
     "PR #142 augmentation without inputSchema"),
    ("augmentation-list-result", {"augmentations": [{"name": "a"}]}, "/augmentations/0",
     "PR #142 listed augmentation without inputSchema"),
    ("augmentation-list-result", {"augmentations": [{"name": "a", "inputSchema": {"type": "array"}}]},
     "/augmentations/0/inputSchema/type", "PR #142 augmentation inputSchema of type array"),
    ("augmentation-list-result", {"augmentation": []}, "(root)", "PR #142 list result without augmentations"),
    ("augment-params", {"name": "retrieve", "context": text("What are the key features?")}, "/context",
     "PR #142 prose: single context object"),
    ("augment-params", {"name": "a", "context": [{"type": "resource_link", "uri": "u", "name": "n"}]},
     "/context/0/type", "PR #142 resource_link in augment context"),
    ("augment-params", {"name": "a"}, "(root)", "PR #142 augment params without context"),
    ("augment-params", {"name": "a", "context": [{"type": "image", "data": "AA=="}]}, "/context/0",
     "PR #142 augment context image without mimeType"),
    ("augment-result", {"content": [text("x")]}, "/content/0", "PR #142 bare content blocks instead of AugmentedContent"),
    ("augment-result", {"contents": [{"content": text("x"), "properties": {"relevance": 0.9}}], "hint": "prepend"},
     "(root)", "PR #142 prose: contents instead of content"),
    ("augment-result", {"content": [{"content": text("x"), "properties": {"relevance": "high"}}]},
     "/content/0/properties/relevance", "PR #142 relevance not a number"),
    ("augment-result", {"content": [{"content": text("x"), "properties": []}]}, "/content/0/properties",
     "PR #142 properties not an object"),
    ("augment-result", {"content": [{"content": {"type": "text"}}]}, "/content/0/content",
     "PR #142 augmented content block missing text"),
    ("augment-result", {"content": [], "hint": ["prepend"]}, "/hint", "PR #142 hint not a string"),
    ("augment-result", {"content": [], "metadata": 3}, "/metadata", "PR #142 metadata not an object"),
    ("capabilities", {"augmentation": {"listChanged": "yes"}}, "/augmentation/listChanged",
     "PR #142 listChanged not a boolean"),
    ("capabilities", {"augmentation": True}, "/augmentation", "PR #142 capability as true"),
    # MCP content blocks
    ("content", {"type": "video", "data": "AA==", "mimeType": "video/mp4"}, "/type", "content of unknown type"),
    ("content", {"text": "no type"}, "(root)", "content without type"),
    ("content", {"type": "text"}, "(root)", "content text missing text"),
    ("content", {"type": "text", "text": 42}, "/text", "content text that is a number"),
    ("content", {"type": "image", "data": "AA=="}, "(root)", "content image missing mimeType"),
    ("content", {"type": "audio", "mimeType": "audio/wav"}, "(root)", "content audio missing data"),
    ("content", {"type": "resource_link", "uri": "file:///a"}, "(root)", "content resource_link missing name"),
    ("content", {"type": "resource_link", "uri": "file:///a", "name": "a", "size": "12"}, "/size",
     "content resource_link size not an integer"),
    ("content", {"type": "resource", "resource": {"uri": "file:///a"}}, "/resource",
     "content resource without text or blob"),
    ("content", {"type": "resource", "resource": {"text": "t"}}, "/resource", "content resource without uri"),
    ("content", {"type": "resource"}, "(root)", "content resource missing resource"),
    ("content", {"type": "text", "text": "t", "annotations": {"priority": 1.5}}, "/annotations/priority",
     "content annotation priority above 1"),
    ("content", {"type": "text", "text": "t", "annotations": {"audience": ["system"]}}, "/annotations/audience/0",
     "content annotation audience not user or assistant"),
    ("content", {"type": "text", "text": "t", "_meta": []}, "/_meta", "content _meta not an object"),
    ("content", "just text", "(root)", "content that is a string"),
    # results.json
    ("results", results_document(format="junit"), "/format", "results: wrong format"),
    ("results", results_document(formatVersion=2), "/formatVersion", "results: unknown formatVersion"),
    ("results", results_document(formatVersion="1"), "/formatVersion", "results: formatVersion as a string"),
    ("results", results_document(role="client"), "/role", "results: unknown role"),
    ("results", results_document(target={"kind": "stdio"}), "/target", "results: stdio target without command"),
    ("results", results_document(target={"kind": "ssh", "command": "x"}), "/target/kind",
     "results: unknown target kind"),
    ("results", results_document(sdk={}), "/sdk", "results: sdk without mcp"),
    ("results", results_document(startedAt="yesterday"), "/startedAt", "results: startedAt not a date-time"),
    ("results", results_document(finishedAt="2026-04-01 10:00"), "/finishedAt",
     "results: finishedAt without seconds or zone"),
    ("results", results_document(durationSeconds=-1), "/durationSeconds", "results: negative duration"),
    ("results", results_document(strict="no"), "/strict", "results: strict not a boolean"),
    ("results", results_document(exitCode=3), "/exitCode", "results: exit code 3"),
    ("results", results_document(profiles={"tools": {"claimed": False, "claimedBy": None, "reason": ""}}),
     "/profiles", "results: unknown profile id"),
    ("results", profiles_with(claimed=True, claimedBy=None, reason="r"), "/profiles/augmentation/claimedBy",
     "results: claimed without claimedBy"),
    ("results", profiles_with(claimed=False, claimedBy="option", reason="r"), "/profiles/augmentation/claimedBy",
     "results: not claimed yet claimedBy"),
    ("results", profiles_with(claimed=True, claimedBy="guess", reason="r"), "/profiles/augmentation/claimedBy",
     "results: unknown claimedBy"),
    ("results", profiles_with(claimed=True, claimedBy="option"), "/profiles/augmentation",
     "results: claim without reason"),
    ("results", results_document(summary={**results_document()["summary"], "fail": -1}), "/summary/fail",
     "results: negative count"),
    ("results", results_document(summary={**results_document()["summary"], "pass": 1.5}), "/summary/pass",
     "results: fractional count"),
    ("results", results_document(summary={"total": 0}), "/summary", "results: summary missing outcomes"),
    ("results", results_document(summary={**results_document()["summary"], "error": 0}), "/summary",
     "results: summary with unknown outcome"),
    ("results", check_with(id="execution-requirements/client/x"), "/checks/0/id", "results: check id with bad role"),
    ("results", check_with(id="Execution_Requirements/server/x"), "/checks/0/id",
     "results: check id not lowercase-dashed"),
    ("results", check_with(id="execution-requirements/server"), "/checks/0/id", "results: check id without slug"),
    ("results", check_with(profile="tools"), "/checks/0/profile", "results: check of unknown profile"),
    ("results", check_with(level="SHALL"), "/checks/0/level", "results: unknown level"),
    ("results", check_with(outcome="error"), "/checks/0/outcome", "results: unknown outcome"),
    ("results", check_with(rows="ER-S-02"), "/checks/0/rows", "results: rows as a string"),
    ("results", check_with(reason=3), "/checks/0/reason", "results: reason a number"),
    ("results", check_with(durationSeconds="0.1"), "/checks/0/durationSeconds", "results: duration as a string"),
    ("results", exchange_with(failure=False), "/checks/0/exchanges/0/failure", "results: exchange failure a boolean"),
    ("results", exchange_with(elapsedSeconds="fast"), "/checks/0/exchanges/0/elapsedSeconds",
     "results: exchange elapsed not a number"),
    ("results", results_document(checks=[{"id": "augmentation/server/x"}]), "/checks/0",
     "results: check missing members"),
]


def _ids(cases):
    ids = [case[-1] for case in cases]
    assert len(ids) == len(set(ids)), "duplicate case ids"
    return ids


# --- the files -----------------------------------------------------------------------------------------------

def test_every_listed_schema_exists_and_nothing_else():
    on_disk = {p.stem for p in SCHEMA_DIR.glob("*.json")}
    assert on_disk == EXPECTED_FILES
    # the loader serves exactly the files of this checkout (never a stale installed copy with other files)
    assert set(schemas_loader.schemas()) == on_disk
    for name in on_disk:
        assert schemas_loader.schemas()[name] == json.loads((SCHEMA_DIR / f"{name}.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("layout", ["installed", "checkout"])
def test_loader_finds_the_schemas_in_either_layout(tmp_path, layout):
    """Installed: conformance/schemas/ (package data, read through importlib.resources). Checkout: schemas/
    beside conformance/, which is not an importable package, so the loader falls back to the path."""
    package = tmp_path / "conformance"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "core").mkdir()
    (package / "core" / "__init__.py").write_text("")
    shutil.copy(Path(schemas_loader.__file__), package / "core" / "schemas_loader.py")
    target = package / "schemas" if layout == "installed" else tmp_path / "schemas"
    target.mkdir()
    for name in ("content", "middleware-invoke-result"):
        shutil.copy(SCHEMA_DIR / f"{name}.json", target)
    probe = ("from conformance.core import schemas_loader as s; "
             "print(sorted(s.schemas())); print(s.errors('middleware-invoke-result', {'content': [{'type': 'text'}]}))")
    proc = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["['content', 'middleware-invoke-result']",
                                        "[\"at /content/0: 'text' is a required property\"]"]


@pytest.mark.parametrize("name", sorted(EXPECTED_FILES))
def test_schema_is_valid_2020_12_and_self_describing(name):
    schema = schemas_loader.schemas()[name]
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"] == f"{BASE}{name}.json"
    assert schema["title"].strip()
    # the description cites its source by name (as the catalogs' `sources` do) or a page of this repository
    assert re.search(r"Preprocessor Tools RFC|PR #142|SEP-2487|Context Middleware SEP|SEP-2624|Gatekit ADR-009"
                     r"|docs/check-model\.md|MCP protocol revision",
                     schema["description"]), schema["description"]


def _refs(node):
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref":
                yield value
            else:
                yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


@pytest.mark.parametrize("name", sorted(EXPECTED_FILES))
def test_every_ref_resolves_through_the_registry(name):
    schema = schemas_loader.schemas()[name]
    resolver = schemas_loader.registry().resolver(base_uri=schema["$id"])
    refs = list(_refs(schema))
    for ref in refs:
        assert not ref.startswith("http"), f"{name}: cross-file $ref should be relative: {ref}"
        resolved = resolver.lookup(ref)
        assert isinstance(resolved.contents, dict), ref


def test_cross_file_refs_are_actually_followed():
    # content.json is only reachable through the registry from here
    assert schemas_loader.errors("middleware-invoke-result", {"content": [{"type": "text"}]}) == [
        "at /content/0: 'text' is a required property"]


def test_validator_is_cached_and_checks_formats():
    v = schemas_loader.validator("results")
    assert v is schemas_loader.validator("results")
    assert v.format_checker is not None
    with pytest.raises(KeyError, match="no schema 'nope'"):
        schemas_loader.validator("nope")


# --- the cases -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("schema", "instance", "case"), VALID, ids=_ids(VALID))
def test_valid(schema, instance, case):
    assert schemas_loader.errors(schema, instance) == []
    assert schemas_loader.validator(schema).is_valid(instance)


@pytest.mark.parametrize(("schema", "instance", "where", "case"), INVALID, ids=_ids(INVALID))
def test_invalid(schema, instance, where, case):
    found = schemas_loader.errors(schema, instance)
    assert found, f"{case}: accepted"
    assert not schemas_loader.validator(schema).is_valid(instance)
    # the error points at the member that is wrong, not only at the whole document
    assert any(message.startswith(f"at {where}: ") for message in found), found


# --- messages ----------------------------------------------------------------------------------------------------

def test_message_names_the_pointer_and_the_problem():
    bad = {"middleware": [{"name": "m", "inputSchema": {"type": "string"}}]}
    assert schemas_loader.errors("middleware-list-result", bad) == [
        "at /middleware/0/inputSchema/type: 'string' is not 'object'"]


def test_one_message_per_problem_for_a_content_block():
    # if/then per type: a wrong image block reports its missing field only, not every other block type's fields
    assert schemas_loader.errors("content", {"type": "image", "data": "AA=="}) == [
        "at (root): 'mimeType' is a required property"]
    assert schemas_loader.errors("content", {"type": "video"}) == [
        "at /type: 'video' is not one of ['text', 'image', 'audio', 'resource_link', 'resource']"]
    assert schemas_loader.errors("content", {"type": "resource", "resource": {"uri": "u"}}) == [
        "at /resource: one of 'text', 'blob' is required"]


def test_resource_link_is_named_when_refused_in_augment_context():
    found = schemas_loader.errors("augment-params", {"name": "a", "context": [
        {"type": "resource_link", "uri": "u", "name": "n"}]})
    assert found == ["at /context/0/type: 'resource_link' is not one of ['text', 'image', 'audio', 'resource']"]


def test_pointer_escapes_and_orders_numerically():
    assert schemas_loader.pointer([]) == "(root)"
    assert schemas_loader.pointer(["a/b", "c~d", 0]) == "/a~1b/c~0d/0"
    blocks = [text("ok")] * 11
    blocks[2] = blocks[10] = {"type": "text"}
    found = schemas_loader.errors("middleware-invoke-result", {"content": blocks})
    assert found == ["at /content/2: 'text' is a required property", "at /content/10: 'text' is a required property"]


# --- properties --------------------------------------------------------------------------------------------------

@given(st.lists(st.text()))
def test_any_list_of_strings_is_valid_requirements(requirements):
    tool = {"name": "t", "inputSchema": OBJ, "execution": {"requirements": requirements}}
    assert schemas_loader.validator("tool-execution").is_valid(tool)


@given(st.lists(st.one_of(st.text(), st.integers(), st.none(), st.booleans()), min_size=1))
def test_any_non_string_requirement_is_refused(items):
    tool = {"name": "t", "inputSchema": OBJ, "execution": {"requirements": items}}
    assert schemas_loader.validator("tool-execution").is_valid(tool) == all(isinstance(i, str) for i in items)


@given(st.one_of(st.text(), st.integers(), st.none(), st.floats(allow_nan=False), st.lists(st.booleans())))
def test_preprocessor_accepts_only_booleans(value):
    tool = {"name": "t", "inputSchema": OBJ, "preprocessor": value}
    assert not schemas_loader.validator("tool-preprocessor").is_valid(tool)
