"""Every check as a pytest test: one test per check id of the run's role, judged from its recordings.

Collected by `pytest --pyargs conformance` (or the CLI); the plugin parametrizes `check_id` with the
checks of the role whose target is given (conformance/core/roles.py), and every check skips without a target.
"""


def test_check(check_id, mcpx_recordings, mcpx_verdict):
    mcpx_verdict(check_id, mcpx_recordings)
