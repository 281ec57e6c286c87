"""Timestamp injection (the SEP's example 5): the current time as a text block before the context.

    [Current time: Saturday, October 4, 2025, 3:42 PM UTC]

`timezone` is an IANA name resolved with `zoneinfo` (default "UTC"); a name
zoneinfo does not know is a ValueError. `format` picks the rendering:

| format            | example                                      |
|-------------------|----------------------------------------------|
| `long` (default)  | Saturday, October 4, 2025, 3:42 PM UTC       |
| `iso8601`         | 2025-10-04T15:42:00+00:00                    |
| `rfc2822`         | Sat, 04 Oct 2025 15:42:00 +0000              |
| `date`            | Saturday, October 4, 2025                    |

Day and month names are English whatever the process locale (strftime's %A
and %B follow LC_TIME, so they are not used). The zone abbreviation is the one
zoneinfo gives (UTC, CEST, EST, or an offset like +04 where the zone has no
abbreviation). Seconds are dropped from `long`; `iso8601` and `rfc2822` keep
whole seconds.

The clock is injectable: `timestamp_injector(context, arguments, now=fn)`
where `fn()` returns an aware datetime (tests pass a fixed one); by default
`now` is the module-level `clock`, the system clock in UTC.
"""

from __future__ import annotations

import datetime as dt
import email.utils
from typing import Callable
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from . import MiddlewareSpec

DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")
FORMATS = ("long", "iso8601", "rfc2822", "date")

SCHEMA = {
    "type": "object",
    "properties": {
        "timezone": {"type": "string", "minLength": 1, "default": "UTC",
                     "description": "IANA time zone name, e.g. Europe/Copenhagen or America/New_York"},
        "format": {"type": "string", "enum": list(FORMATS), "default": "long",
                   "description": "long: 'Saturday, October 4, 2025, 3:42 PM UTC'; iso8601; rfc2822; date"},
    },
    "additionalProperties": False,
}


def clock() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def zone(name) -> ZoneInfo:
    if not isinstance(name, str) or not name:
        raise ValueError("timezone must be an IANA time zone name such as Europe/Copenhagen")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise ValueError(f"unknown time zone {name!r}: use an IANA name such as Europe/Copenhagen") from None


def render(moment: dt.datetime, fmt: str = "long") -> str:
    date = f"{DAYS[moment.weekday()]}, {MONTHS[moment.month - 1]} {moment.day}, {moment.year}"
    if fmt == "long":
        hour = moment.hour % 12 or 12
        return f"{date}, {hour}:{moment.minute:02d} {'AM' if moment.hour < 12 else 'PM'} {moment.tzname()}"
    if fmt == "iso8601":
        return moment.replace(microsecond=0).isoformat()
    if fmt == "rfc2822":
        return email.utils.format_datetime(moment.replace(microsecond=0))
    if fmt == "date":
        return date
    raise ValueError(f"format must be one of {', '.join(FORMATS)}, not {fmt!r}")


def timestamp_injector(context: list[dict], arguments: dict, now: Callable[[], dt.datetime] | None = None) -> dict:
    if not isinstance(context, list):
        raise ValueError("context must be a list of content blocks")
    name = arguments.get("timezone", "UTC")
    moment = (now or clock)()
    if moment.tzinfo is None:
        raise ValueError("the clock must return an aware datetime")
    moment = moment.astimezone(zone(name))
    stamp = render(moment, arguments.get("format", "long"))
    return {"content": [{"type": "text", "text": f"[Current time: {stamp}]"}, *context],
            "metadata": {"timestamp": moment.isoformat(), "timezone": name}}


DEFINITION = MiddlewareSpec(
    "timestamp_injector",
    "Put the current time, in an IANA time zone, before the context: [Current time: Saturday, October 4, 2025, "
    "3:42 PM UTC].",
    SCHEMA, timestamp_injector)
