"""What the link takes from the journal: its outbox part (``journal/outbox.py``), typed
by what each of the link's parts uses (the link sees nothing else of the journal).

- :class:`OutboxMarker`: the "published" marks (``marks.py``);
- :class:`OutboxReader`: the entries not yet published, in id order (``pump.py``);
- :class:`OutboxJournal`: both, the listener woken by a commit that queued entries,
  and the table's identity (``link.py``, ``connection.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from ..auth.identity import TableIdentity
from ..journal import OutboxEntry


class OutboxMarker(Protocol):
    def mark_published(self, ids: list[int]) -> object:
        """Mark the entries ``ids`` published, in one transaction (raises
        :class:`~firmware_host.journal.JournalError` when the journal cannot write)."""
        ...


class OutboxReader(Protocol):
    @property
    def in_transaction(self) -> bool:
        """Whether a transaction is open (its entries may still roll back)."""
        ...

    def pending(self, limit: int, *, after_id: int) -> list[OutboxEntry]:
        """At most ``limit`` entries not marked published, after ``after_id``, by id."""
        ...

    def pending_count(self) -> int: ...

    def newest_retained(self) -> dict[str, int]:
        """Per topic, the id of the newest retained entry, published or not."""
        ...


class OutboxJournal(OutboxReader, OutboxMarker, Protocol):
    identity: TableIdentity | None
    """The key that signs the table's messages (None: unsigned)."""

    def add_listener(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` after each commit that queued outbox entries."""
        ...

    def remove_listener(self, callback: Callable[[], None]) -> None: ...


__all__ = ["OutboxJournal", "OutboxMarker", "OutboxReader"]
