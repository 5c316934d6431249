"""Time as the table writes it: timezone-aware UTC, ISO-8601 with milliseconds.

Every timestamp the daemon journals or publishes goes through :func:`iso_utc`, so
the journal, the MQTT payloads and the console all read the same way.
"""

from __future__ import annotations

from datetime import UTC, datetime


def utc_now() -> datetime:
    """The default clock of the daemon's parts (tests inject their own)."""
    return datetime.now(UTC)


def iso_utc(dt: datetime) -> str:
    """ISO-8601 UTC with milliseconds and a ``Z``: ``2026-05-09T07:35:25.123Z``."""
    if dt.tzinfo is None:
        raise ValueError("timestamps must be timezone-aware")
    return dt.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
