"""core/redact.py: a secret of the user's (a --header or --secret-env value) in any string of any JSON
value, in any form a report writes it (as is, JSON-escaped, \\uXXXX, an HTML reference), is replaced by its
marker, and the value keeps its shape. Generated secrets and documents (Hypothesis); the CLI end to end is
tests/test_report_safety.py."""

from __future__ import annotations

import html
import json
import re
import string

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance import options
from conformance.core.redact import MIN_LENGTH, Secrets
from conformance.core.roles import ROLES
from conformance.targets import TargetSpec

SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                           HealthCheck.function_scoped_fixture])
MARKER = "[redacted:header Authorization]"
# What a header value may hold (options.HEADER_VALUE: visible ASCII, spaces, tabs), trimmed as a run trims it.
# A secret that JSON's own syntax could spell (`false`'s "alse", `", "`) is left out: the page holds JSON as
# text, where that syntax is structure, not the secret.
JSON_SYNTAX = set('{}[]:," \t0123456789.-+eEnulltruefalse')
secrets = st.text(alphabet=string.printable[:95] + "\t", min_size=MIN_LENGTH, max_size=40).map(str.strip).filter(
    lambda s: len(s) >= MIN_LENGTH and "\\u" not in s and not set(s) <= JSON_SYNTAX)


def documents(secret: str):
    text = st.one_of(st.text(max_size=8), st.builds(lambda a, b: a + secret + b, st.text(max_size=8),
                                                    st.text(max_size=8)))
    scalars = st.one_of(st.none(), st.booleans(), st.integers(-999, 999), text)  # a secret is a string
    return st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                         st.dictionaries(text, inner, max_size=4)), max_leaves=12)


def shape(value):
    if isinstance(value, dict):
        return sorted(json.dumps(shape(v), sort_keys=True) for v in value.values())
    if isinstance(value, list):
        return [shape(v) for v in value]
    return "string" if isinstance(value, str) else value


def assert_gone(secret: str, text: str) -> None:
    text = text.replace(MARKER, "\x00")  # what stands around a marker cannot form the secret with it
    # A \uXXXX escape of another character is not the secret (ASCII, no "\u" in it): "0000" in "\u0000"
    text = re.sub(r"\\u[0-9a-fA-F]{4}", "\x01", text)
    for form in (secret, json.dumps(secret)[1:-1], html.escape(secret), html.escape(json.dumps(secret)[1:-1])):
        assert form not in text


@SETTINGS
@given(secrets, st.data())
def test_a_secret_anywhere_in_a_value_is_replaced_and_the_value_keeps_its_shape(secret, data):
    if secret in MARKER or MARKER in secret:
        return
    document = data.draw(documents(secret))
    out = Secrets.of({"Authorization": secret}).value(document)
    assert shape(out) == shape(document)
    assert_gone(secret, json.dumps(out, ensure_ascii=False))
    assert_gone(secret, json.dumps(out, ensure_ascii=True))


@SETTINGS
@given(secrets, st.data())
def test_every_written_file_is_redacted_and_json_stays_json(tmp_path_factory, secret, data):
    if secret in MARKER or MARKER in secret:
        return
    directory = tmp_path_factory.mktemp("report")
    document = {"evidence": data.draw(documents(secret)), "said": f"you sent {secret}"}
    (directory / "results.json").write_text(json.dumps(document, indent=2, ensure_ascii=False))
    (directory / "ascii.json").write_text(json.dumps(document, ensure_ascii=True))
    (directory / "index.html").write_text(f"<pre>{html.escape(json.dumps(document, ensure_ascii=False))}</pre>")
    (directory / "junit.xml").write_text(f'<testcase message="{html.escape(secret)}"/>')
    Secrets.of({"Authorization": secret}).files([directory])
    for path in directory.iterdir():
        text = path.read_text()
        if path.suffix == ".json":  # JSON stays JSON, and no string of it (key or value) holds the secret
            for string_ in strings(json.loads(text)):
                assert_gone(secret, string_)
        else:
            assert_gone(secret, text)


def strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [*value, *(s for v in value.values() for s in strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return []


def test_values_shorter_than_the_minimum_are_left_alone_and_markers_name_the_source():
    secrets = Secrets.of({"Authorization": "Bearer abcdef", "X-Key": "abc"}, ["API_TOKEN=s3cr3t-value"])
    assert secrets.text("Bearer abcdef; abcdef alone; abc; s3cr3t-value") == (
        "[redacted:header Authorization]; [redacted:header Authorization] alone; abc; [redacted:env API_TOKEN]")


def test_a_run_takes_its_secrets_from_header_and_secret_env(monkeypatch):
    monkeypatch.setenv("MCPX_T", "from-the-environment")
    run = options.Run(ROLES["server"], {"header": ["Authorization: Bearer ${MCPX_T}"],
                                        "env": ["PLAIN=visible-value"], "secret_env": ["KEY=hidden-value"]})
    assert TargetSpec.from_run(run).environment == {"PLAIN": "visible-value", "KEY": "hidden-value"}
    assert run.secrets.text("from-the-environment visible-value hidden-value") == (
        "[redacted:header Authorization] visible-value [redacted:env KEY]")
