"""The base MCP shapes: JSON Schemas of the SDK's types, shipped for known releases, exact about the wire."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.core import base_schemas

ROOT = Path(__file__).resolve().parents[2]


def test_a_shipped_release_is_what_the_installed_sdk_derives():
    shipped = base_schemas._shipped(base_schemas.sdk_release())
    if shipped is None:
        pytest.skip(f"no schemas shipped for {base_schemas.sdk_release()}; runs derive them "
                    "(python -m conformance.core.base_schemas --write adds them)")
    assert shipped == json.loads(json.dumps(base_schemas.derive()))


def test_schemas_ship_for_the_sdk_releases_ci_installs():
    names = sorted(p.name for p in (ROOT / "schemas" / "sdk-base").glob("*.json"))
    assert any(n.startswith("mcp-types-2.") for n in names) and any(n.startswith("mcp-1.") for n in names), names


def test_the_mcp1_release_shipped_is_what_that_sdk_derives():
    python = os.environ.get("MCPX_MCP1_PYTHON")
    if not python:
        pytest.skip("MCPX_MCP1_PYTHON is not set (an interpreter with mcp 1.x)")
    code = ("import json; from conformance.core import base_schemas as b; "
            "print(json.dumps([b.sdk_release(), b._shipped(b.sdk_release()) == json.loads(json.dumps(b.derive()))]))")
    out = subprocess.run([python, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    release, same = json.loads(out.stdout)
    assert release.startswith("mcp-1.") and same, out.stderr[-500:]


def test_an_unknown_release_derives_the_same_schemas(monkeypatch):
    base_schemas.schemas.cache_clear()
    base_schemas._validator.cache_clear()
    monkeypatch.setattr(base_schemas, "sdk_release", lambda: "mcp-types-0.0.0")
    try:
        assert base_schemas.schemas() == base_schemas.derive()["types"]
        assert base_schemas.problems("CallToolResult", {"content": [], "isError": "true"})
    finally:
        base_schemas.schemas.cache_clear()
        base_schemas._validator.cache_clear()


# What the SDK's types accept in pydantic's lax mode and the wire must not carry.
LAX = {
    "a boolean as a string": ("CallToolResult", {"content": [], "isError": "true"}, "/isError"),
    "a boolean as a number": ("CallToolResult", {"content": [], "isError": 1}, "/isError"),
    "a snake_case key for a required camelCase field": (
        "InitializeResult", {"protocol_version": "2025-11-25", "capabilities": {},
                             "serverInfo": {"name": "s", "version": "1"}}, "protocolVersion"),
    "a number as a string": ("ServerNotification", {"method": "notifications/progress",
                                                    "params": {"progressToken": 1, "progress": "0.5"}}, "/params/progress"),
}


@pytest.mark.parametrize("name", LAX)
def test_what_lax_validation_would_coerce_is_not_valid_mcp(name):
    type_name, instance, where = LAX[name]
    problems = base_schemas.problems(type_name, instance)
    assert problems and where in problems[0]


def test_valid_results_have_no_problems():
    assert base_schemas.problems("CallToolResult", {"content": [{"type": "text", "text": "hi"}],
                                                    "structuredContent": {"a": 1}, "isError": False}) == []
    assert base_schemas.problems("ListToolsResult", {"tools": [{"name": "t", "inputSchema": {"type": "object"},
                                                                "preprocessor": True}]}) == []
    assert base_schemas.problems("EmptyResult", {}) == []


def test_inside_a_union_the_alternative_the_value_names_is_explained():
    bad_level = base_schemas.problems("ServerNotification", {"method": "notifications/message",
                                                             "params": {"level": "loud", "data": "x"}})
    assert bad_level[0].startswith("at /params/level: 'loud' is not one of")
    bad_text = base_schemas.problems("CallToolResult", {"content": [{"type": "text", "text": 5}]})
    assert bad_text == ["at /content/0/text: 5 is not of type 'string'"]
    unknown = base_schemas.problems("CallToolResult", {"content": [{"type": "bogus"}]})
    assert unknown[0].startswith("at /content/0: type 'bogus' fits none of the")
    not_an_object = base_schemas.problems("CallToolResult", {"content": [], "_meta": [1]})
    assert not_an_object == ["at /_meta: [1] is not of type 'object' or 'null'"]


def test_a_long_value_is_clipped_in_the_problem():
    problems = base_schemas.problems("CallToolResult", {"content": "x" * 10_000})
    assert len(problems[0]) < 250


def test_the_writer_refuses_other_arguments(capsys):
    assert base_schemas.main([]) == 2
    assert "--write" in capsys.readouterr().err


def test_judging_the_wire_does_not_import_the_sdk_types():
    code = ("import sys; from conformance.core import wire; "
            "wire.base_problems('tools/list', {'jsonrpc': '2.0', 'id': 1, 'result': {'tools': []}}); "
            "print('mcp_types' in sys.modules or 'mcp.types' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False", out.stderr[-500:]


NOTIFICATIONS = [
    {"method": "notifications/message", "params": {"level": "info", "data": "x"}},
    {"method": "notifications/message", "params": {"level": "loud", "data": "x"}},
    {"method": "notifications/message", "params": {"level": "info"}},
    {"method": "notifications/progress", "params": {"progressToken": "t", "progress": 1}},
    {"method": "notifications/progress", "params": {"progressToken": "t", "progress": "1"}},
    {"method": "notifications/tools/list_changed"},
    {"method": "notifications/tools/list_changed", "params": []},
    {"method": "notifications/bogus"},
    {"params": {}},
]


@pytest.mark.parametrize("message", NOTIFICATIONS, ids=lambda m: f"{m.get('method')}-{m.get('params')}")
def test_holding_a_message_to_its_methods_shape_judges_as_the_whole_union(message):
    whole = base_schemas._validator("ServerNotification").is_valid(message)
    assert (base_schemas._problems("ServerNotification", message) == []) == whole
    assert (base_schemas.problems("ServerNotification", message) == []) == whole  # remembered, the same


def test_remembered_verdicts_tell_equal_looking_values_apart():
    as_int = {"content": [], "isError": 1}
    as_bool = {"content": [], "isError": True}
    assert base_schemas.problems("CallToolResult", as_int) and base_schemas.problems("CallToolResult", as_int)
    assert base_schemas.problems("CallToolResult", as_bool) == []
