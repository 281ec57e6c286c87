"""Timestamp injection (the SEP's example 5): the current time before the context."""

from __future__ import annotations

import datetime as dt
from typing import Callable
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

SCHEMA = {
    "type": "object",
    "properties": {
        "timezone": {"type": "string", "default": "UTC", "description": "IANA time zone, e.g. Europe/Copenhagen"},
        "format": {"type": "string", "description": "strftime format (default: 'Saturday, October 4, 2025, 3:42 PM UTC')"},
    },
    "additionalProperties": False,
}

now: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.timezone.utc)  # noqa: E731 - replaced in tests


def render(moment: dt.datetime, fmt: str | None) -> str:
    if fmt:
        return moment.strftime(fmt)
    hour = moment.strftime("%I").lstrip("0") or "12"
    return f"{moment:%A, %B} {moment.day}, {moment.year}, {hour}:{moment:%M %p} {moment.tzname()}"


def timestamp_injector(context: list[dict], arguments: dict) -> dict:
    name = arguments.get("timezone", "UTC")
    try:
        zone = ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone {name!r}") from None
    moment = now().astimezone(zone)
    stamp = render(moment, arguments.get("format"))
    return {"content": [{"type": "text", "text": f"[Current time: {stamp}]"}] + context,
            "metadata": {"timestamp": moment.isoformat(), "timezone": name}}
