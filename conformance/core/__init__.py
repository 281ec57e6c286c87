"""The check core: the check model and registry, the requirement catalog, recordings, the pure judges'
helpers, wire and schema validation, the roles, the runner that turns a recording into verdicts, and the two
things every verdict's words need: the user's secrets kept out of them (redact.py) and options spelled as the
form in use spells them (spelling.py).

Nothing here imports pytest, a transport, a report writer or the option table: this package is the bottom layer
(tests/unit/test_layers.py). The plugin and the CLI are front ends over it.
"""
