"""WAL checkpoints on a thread of their own (issue 20).

SQLite copies the WAL into the database file itself once the WAL reaches 1,000 pages,
inside whichever commit gets there: with a hundred bets a round, every second round or
so, and sometimes a settlement's commit, on the result's path (two fsyncs more). The
daemon asks instead for a ``PASSIVE`` checkpoint after finished rounds, spaced to keep
the WAL near :data:`CHECKPOINT_PAGES`, done by a thread with its own connection: its
fsyncs never block the event loop (on a Raspberry Pi's SD card, tens of milliseconds).
A ``PASSIVE`` checkpoint waits for no reader or writer; SQLite's own locking keeps it
safe beside the event loop's connection, and it changes nothing a crash could lose (the
WAL's frames stay until copied and synced)."""

from __future__ import annotations

import logging
import sqlite3
import threading
from pathlib import Path

log = logging.getLogger(__name__)

#: The WAL's size, in pages, the checkpoints aim for (half SQLite's automatic 1,000).
CHECKPOINT_PAGES = 500


class Checkpointer:
    """Checkpoints of one journal file, on a daemon thread (:meth:`round_finished`
    asks, :meth:`close` stops it)."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        #: Checkpoints done, and the WAL pages the last one found (read by the spacing).
        self.done = 0
        self.last_pages = 0
        self._rounds = 0
        self._every = 1
        self._wake = threading.Event()
        self._stop = False
        self._thread = threading.Thread(target=self._run, name="journal-checkpoint", daemon=True)
        self._thread.start()

    def round_finished(self) -> None:
        """A round ended: ask for a checkpoint if enough rounds went by (as many as fill
        :data:`CHECKPOINT_PAGES`, learnt from the pages the last checkpoint found)."""
        self._rounds += 1
        if self._rounds >= self._every:
            self._rounds = 0
            self._wake.set()

    def _run(self) -> None:
        try:
            db = sqlite3.connect(self.path, isolation_level=None)
        except sqlite3.Error as exc:
            log.warning("journal %s: no checkpoint thread (%s)", self.path, exc)
            return
        try:
            while True:
                self._wake.wait()
                self._wake.clear()
                if self._stop:
                    return
                self._checkpoint(db)
        finally:
            db.close()

    def _checkpoint(self, db: sqlite3.Connection) -> None:
        try:
            row = db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        except sqlite3.Error as exc:  # a full disk: the next commit latches the fault
            log.warning("journal %s: checkpoint failed: %s", self.path, exc)
            return
        pages = int(row[1])
        self.last_pages = pages
        self.done += 1
        per_round = max(1, pages // self._every)  # the WAL held the last _every rounds
        self._every = max(1, CHECKPOINT_PAGES // per_round)

    def close(self, timeout: float = 10.0) -> None:
        """Stop the thread (a checkpoint under way finishes first)."""
        self._stop = True
        self._wake.set()
        self._thread.join(timeout)
