"""The check core: the check model and registry, the requirement catalog, recordings, the pure judges'
helpers, wire and schema validation, the roles, and the runner that turns a recording into verdicts.

Nothing here imports pytest: the plugin and the CLI are front ends over this package.
"""
