"""timestamp_injector: the SEP's example, zones, formats, the injected clock."""

import datetime as dt

import pytest

from reference_servers.middleware import timestamp

FIXED = dt.datetime(2025, 10, 4, 15, 42, 17, tzinfo=dt.timezone.utc)


def stamp(**arguments):
    out = timestamp.timestamp_injector([{"type": "text", "text": "q"}], arguments, now=lambda: FIXED)
    assert out["content"][1] == {"type": "text", "text": "q"}
    return out["content"][0]["text"], out["metadata"]


def test_the_seps_example_five():
    context = [{"type": "text", "text": "What's on my calendar today?"}]
    out = timestamp.timestamp_injector(context, {}, now=lambda: FIXED)
    assert out["content"] == [{"type": "text", "text": "[Current time: Saturday, October 4, 2025, 3:42 PM UTC]"},
                              *context]
    assert out["metadata"] == {"timestamp": "2025-10-04T15:42:17+00:00", "timezone": "UTC"}


@pytest.mark.parametrize("zone, want", [
    ("Europe/Copenhagen", "Saturday, October 4, 2025, 5:42 PM CEST"),
    ("America/New_York", "Saturday, October 4, 2025, 11:42 AM EDT"),
    ("Asia/Tokyo", "Sunday, October 5, 2025, 12:42 AM JST"),
    ("Asia/Dubai", "Saturday, October 4, 2025, 7:42 PM +04"),
])
def test_zones(zone, want):
    assert stamp(timezone=zone)[0] == f"[Current time: {want}]"


@pytest.mark.parametrize("fmt, want", [
    ("iso8601", "2025-10-04T15:42:17+00:00"), ("rfc2822", "Sat, 04 Oct 2025 15:42:17 +0000"),
    ("date", "Saturday, October 4, 2025"), ("long", "Saturday, October 4, 2025, 3:42 PM UTC")])
def test_formats(fmt, want):
    assert stamp(format=fmt)[0] == f"[Current time: {want}]"


def test_midnight_and_noon_are_twelve():
    midnight = dt.datetime(2025, 1, 1, 0, 5, tzinfo=dt.timezone.utc)
    assert timestamp.render(midnight) == "Wednesday, January 1, 2025, 12:05 AM UTC"
    assert timestamp.render(midnight.replace(hour=12)) == "Wednesday, January 1, 2025, 12:05 PM UTC"


def test_unknown_zone_and_naive_clock_are_value_errors():
    with pytest.raises(ValueError, match="unknown time zone 'Mars/Olympus'"):
        stamp(timezone="Mars/Olympus")
    with pytest.raises(ValueError, match="unknown time zone"):
        stamp(timezone="../../etc/passwd")
    with pytest.raises(ValueError, match="aware"):
        timestamp.timestamp_injector([], {}, now=lambda: dt.datetime(2025, 1, 1))


def test_default_clock_is_now():
    out = timestamp.timestamp_injector([], {})
    moment = dt.datetime.fromisoformat(out["metadata"]["timestamp"])
    assert abs((dt.datetime.now(dt.timezone.utc) - moment).total_seconds()) < 60
