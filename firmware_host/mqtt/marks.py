"""The link's part that writes the outbox's "published" marks, and waits out the
journal's storage faults (a full disk, an I/O error) without touching the connection.

The broker took an outbox entry: it is marked published in the journal, with the other
marks of the publisher's turn, in one transaction (:meth:`OutboxMarks.flush`). When the
journal cannot write (``DISK_FULL``, ``JOURNAL_IO``) the entry is remembered as taken
and not marked (never sent again while the process lives), and marked when the journal
writes again (:meth:`OutboxMarks.retry`). A journal that cannot be read (``read``) or
written (``mark``) is waited for with backoff, each on its own: a journal failure is
not a broker failure, the connection and its own backoff are kept.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, KeysView

from ..journal import JournalError
from .outbox import OutboxMarker

log = logging.getLogger("firmware_host.mqtt")


class OutboxMarks:
    """The marks of the outbox entries the broker took, and the journal's storage holds."""

    def __init__(self, journal: OutboxMarker, backoff: Callable[[int], float]) -> None:
        self.journal = journal
        self._backoff = backoff
        #: Taken by the broker, the mark not yet written (written once per turn).
        self.pending: dict[int, None] = {}
        #: Taken by the broker, the mark not writable now (full disk, I/O error): not
        #: sent again, marked when the journal writes again.
        self.unmarked: dict[int, None] = {}
        #: While the journal cannot be read ("read") or its marks written ("mark"):
        #: (retry at, failures in a row). A failing mark does not stop publishing.
        self.holds: dict[str, tuple[float, int]] = {}
        #: Marks that could not be written when due (for the link's statistics).
        self.deferred = 0

    def add(self, ids: list[int]) -> None:
        """Entries the broker took: marked at the next :meth:`flush`."""
        self.pending.update(dict.fromkeys(ids))

    def skip(self) -> KeysView[int]:
        """The entries taken by the broker and not marked yet (never read or sent again)."""
        return self.pending.keys() | self.unmarked.keys()  # type: ignore[return-value]

    @property
    def waiting(self) -> bool:
        """Marks still to write."""
        return bool(self.pending or self.unmarked)

    def flush(self) -> None:
        """Write the marks of the entries the broker took since the last turn, in one
        transaction (or, if the journal cannot write now, remember them and mark them
        when it can). Until written, they are not read or sent again; after a crash
        they are published again (the same bytes under the same id)."""
        if not self.pending:
            return
        ids, self.pending = list(self.pending), {}
        if self.unmarked or not self.ready("mark", time.monotonic()):
            self._defer(ids)
            return
        try:
            self.journal.mark_published(ids)
        except JournalError as exc:
            self._defer(ids)
            self.failed("mark", exc)

    def _defer(self, ids: list[int]) -> None:
        self.deferred += len(ids)
        self.unmarked.update(dict.fromkeys(ids))

    def retry(self) -> None:
        """Write the marks the journal could not write before."""
        if not self.unmarked or not self.ready("mark", time.monotonic()):
            return
        try:
            self.journal.mark_published(list(self.unmarked))
        except JournalError as exc:
            self.failed("mark", exc)
            return
        self.unmarked.clear()
        self.ok("mark")

    # -- the journal's storage -----------------------------------------------------------
    def storage_changed(self) -> None:
        """The journal's storage fault was raised or cleared: retry at once."""
        for which, (_, n) in list(self.holds.items()):
            self.holds[which] = (0.0, n)

    def failed(self, which: str, exc: JournalError) -> None:
        """The journal could not be read (``read``: the outbox waits) or a mark could
        not be written (``mark``: publishing goes on, the marks are retried): retried
        with backoff. Logged once, when the first hold begins."""
        if not self.holds:
            log.warning("mqtt: the journal fails (%s); connection kept, retried with backoff", exc)
        _, n = self.holds.get(which, (0.0, 0))
        self.holds[which] = (time.monotonic() + self._backoff(n), n + 1)

    def ok(self, which: str) -> None:
        hold = self.holds.pop(which, None)
        if hold is not None and not self.holds:
            log.info("mqtt: the journal answers again after %d failure(s)", hold[1])

    def ready(self, which: str, now: float) -> bool:
        hold = self.holds.get(which)
        return hold is None or hold[0] <= now

    def retry_times(self) -> list[float]:
        """When each hold ends (the publisher's idle wait is no longer)."""
        return [t for t, _ in self.holds.values()]


__all__ = ["OutboxMarks"]
