"""reference_servers/limits.py: sizes counted without recursion and cut short past a limit; configuration keys."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reference_servers import limits


@pytest.mark.parametrize("value", [{"a": "b", "c": [1, 2.5, True, None, {"d": "é"}]}, [], {}, "x" * 100,
                                   {"redactions": {f"EMAIL_{i}": "jane@example.com" for i in range(50)}}])
def test_json_chars_is_about_the_json_texts_length(value):
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    assert len(text) <= limits.json_chars(value) <= 2 * len(text) + 24


def test_json_chars_stops_past_the_limit_and_needs_no_recursion():
    deep: list = []
    for _ in range(100_000):  # deeper than any recursion limit
        deep = [deep]
    assert limits.json_chars(deep) >= 200_000
    huge = ["x" * 1000] * 100_000
    assert 10_000 < limits.json_chars(huge, stop_after=10_000) < 200_000  # not the 100 M of all its strings


def test_string_chars_counts_string_values_not_keys():
    assert limits.string_chars({"key": ["ab", {"k": "cde"}], "n": 5}) == 5


def test_the_configuration_keys_and_their_defaults():
    assert limits.Limits.from_config({}).to_config() == {
        "maxTextChars": 4 * 1024 * 1024, "maxInputChars": 8 * 1024 * 1024, "maxOutputChars": 8 * 1024 * 1024,
        "maxSeconds": 10.0, "maxConcurrent": 4, "maxQueued": 32,
        "maxJsonValues": 20_000}
    with pytest.raises(ValueError, match="maxOutputChars"):
        limits.Limits.from_config({"maxOutputChars": 0})
    with pytest.raises(ValueError, match="unknown"):
        limits.Limits.from_config({"maxOutput": 1})


def test_a_cancelled_call_stops_at_its_next_checkpoint():
    control = limits.CallControl()
    seen = []

    def work():
        for i in range(1000):
            if i == 10:
                control.cancel("maxSeconds")
            limits.checkpoint()
            seen.append(i)

    with pytest.raises(limits.Cancelled):
        control.run(work)
    assert seen == list(range(10)) and control.finished.is_set()
    limits.checkpoint()  # outside a call: never stops


@settings(max_examples=15, deadline=None)
@given(st.integers(1, 3), st.integers(1, 3), st.integers(0, 10))
def test_calls_past_the_queue_are_refused_at_once_and_the_rest_all_run(running, queued, calls):
    """Issue 32 item 10: at most maxConcurrent calls run and maxQueued wait; every call past them gets -32000
    "busy" at once (before any slot frees), and each admitted call runs."""
    import threading

    import anyio

    from reference_servers.core import App, JsonRpcError

    app = App(limits=limits.Limits.from_config({"maxConcurrent": running, "maxQueued": queued, "maxSeconds": 30}))
    release, ran, refused = threading.Event(), [], []

    def work() -> dict:
        release.wait(20)
        ran.append(1)
        return {}

    async def one() -> None:
        try:
            await app._run_bounded("test", work, {"input": "x"})
        except JsonRpcError as exc:
            assert exc.code == -32000 and exc.data == {"limit": "maxQueued", "maxQueued": queued}
            refused.append(anyio.current_time())

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            for _ in range(calls):
                tg.start_soon(one)
                await anyio.sleep(0.01)  # each call has arrived, and taken a slot or its place in the queue
            await anyio.sleep(0.05)
            assert len(refused) == max(0, calls - running - queued)  # answered while every slot is still held
            release.set()

    anyio.run(main)
    assert len(ran) == min(calls, running + queued)


def test_an_oversized_input_is_refused_before_it_can_wait():
    import anyio

    from reference_servers.core import App, JsonRpcError

    app = App(limits=limits.Limits.from_config({"maxInputChars": 100}))
    with pytest.raises(JsonRpcError) as caught:
        anyio.run(app._run_bounded, "test", lambda: pytest.fail("ran"), {"text": "x" * 200})
    assert caught.value.data["limit"] == "maxInputChars"
