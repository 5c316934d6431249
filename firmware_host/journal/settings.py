"""The ``[journal]`` section of a table's configuration and :class:`JournalSettings`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..config import FieldSpec, register_section, validate_fields
from ..timefmt import utc_now
from .store import Journal

JOURNAL_SPECS: dict[str, FieldSpec] = {
    "path": FieldSpec("str", "/var/lib/tablectl/journal.sqlite3", doc="journal file (SQLite)"),
    "raw_frame_rounds": FieldSpec(
        "int",
        100,
        doc="finished rounds whose raw device frames are kept (at least 10)",
        range=(10, 10**7),
        cite="GLI-11 game recall: last 10 games",
    ),
    "full_rounds": FieldSpec(
        "int",
        10000,
        doc="finished rounds whose bets and settlement payload are kept in full",
        range=(10, 10**9),
    ),
    "published_outbox_keep": FieldSpec(
        "int", 1000, doc="published outbox entries kept after publication", range=(0, 10**9)
    ),
    "request_keep_hours": FieldSpec(
        "int",
        24,
        doc="hours the answer to a floor request is kept at least (a retry within them is "
        "answered as the first time, and acts nothing); kept longer while its round keeps "
        "its bets (full_rounds)",
        range=(24, 24 * 366),
    ),
    "integrity_check": FieldSpec(
        "str",
        "quick",
        doc="SQLite check when the journal is opened",
        choices=("quick", "full", "none"),
    ),
}


@dataclass(frozen=True, slots=True)
class JournalSettings:
    path: str = "/var/lib/tablectl/journal.sqlite3"
    raw_frame_rounds: int = 100
    full_rounds: int = 10000
    published_outbox_keep: int = 1000
    request_keep_hours: int = 24
    integrity_check: str = "quick"

    def open(self, *, clock: Callable[[], datetime] = utc_now) -> Journal:
        return Journal(
            self.path,
            raw_frame_rounds=self.raw_frame_rounds,
            full_rounds=self.full_rounds,
            published_outbox_keep=self.published_outbox_keep,
            request_keep_hours=self.request_keep_hours,
            integrity_check=self.integrity_check,
            clock=clock,
        )


def _validate_section(data: Any, path: str, errors: list[str]) -> JournalSettings | None:
    n = len(errors)
    vals = validate_fields(JOURNAL_SPECS, data, path, errors)
    if len(errors) > n:
        return None
    if vals["full_rounds"] < vals["raw_frame_rounds"]:
        errors.append(
            f"{path}.full_rounds: {vals['full_rounds']} is below raw_frame_rounds "
            f"{vals['raw_frame_rounds']} (a round kept with its frames must keep its bets)"
        )
        return None
    if not vals["path"]:
        errors.append(f"{path}.path: must not be empty")
        return None
    return JournalSettings(**vals)


register_section("journal", _validate_section)
