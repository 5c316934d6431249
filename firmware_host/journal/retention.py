"""Retention: what the journal keeps, and for how long.

Raw frames are kept for the last ``raw_frame_rounds`` finished rounds, bets and
settlement payloads for the last ``full_rounds``, published outbox entries for the
last ``published_outbox_keep``; the round row (outcome, status, timestamps and a
totals summary) is kept forever. The answers to floor requests (``requests.py``) are
kept ``request_keep_hours`` (24 at least) and, beyond, as long as the round they name
keeps its bets: a retried request is answered as the first time for that long. The
round windows keep at least what they say and at most 1% more (their edges are looked
for every hundredth of the window, :data:`EDGE_SPACING`). A
round's ``detail`` says what is left of it: ``full``, ``no_frames`` or ``summary``. Pruning runs after each finished round, in a
transaction of its own without an fsync (losing it on power failure only means it
runs again); in the daemon it runs once the broker has acknowledged the round
(``Database.defer``), and asks for a checkpoint of the WAL, done on a thread of its
own (``checkpoint_in_background``, ``checkpoint.py``). Dropping a round's bets and settlement payload appends a
``rounds_pruned`` entry to the audit chain in that transaction, and dropping answers
a ``requests_pruned`` entry, so an audit tells what retention pruned from rows deleted
behind the journal's back.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta

from ..timefmt import iso_utc
from .chain import AuditLog
from .checkpoint import Checkpointer
from .database import Database
from .errors import JournalError

log = logging.getLogger(__name__)

#: A window's edge (the n-th newest finished round) is found by walking n index entries:
#: looked for every ``n // EDGE_SPACING`` finished rounds, not after each (the default
#: 10,000 rounds in full: 100 entries a round on average, not 10,000). A window then
#: keeps at most 1% more rounds than it says, never fewer.
EDGE_SPACING = 100


@dataclass(frozen=True, slots=True)
class Windows:
    """What the journal keeps (the ``[journal]`` options of the same names); checked
    when made, before the journal's file is opened."""

    #: Finished rounds whose raw frames are kept (at least 10: recall of the last 10 games).
    raw_frame_rounds: int = 100
    #: Finished rounds whose bets and settlement payload are kept (>= ``raw_frame_rounds``).
    full_rounds: int = 10000
    #: Published outbox entries kept after publication.
    published_outbox_keep: int = 1000
    #: Hours an answer to a floor request is kept at least (24 or more).
    request_keep_hours: int = 24

    def __post_init__(self) -> None:
        if self.raw_frame_rounds < 10:
            raise ValueError("raw_frame_rounds must be at least 10 (recall of the last 10 games)")
        if self.full_rounds < self.raw_frame_rounds:
            raise ValueError("full_rounds must be at least raw_frame_rounds")
        if self.request_keep_hours < 24:
            raise ValueError("request_keep_hours must be at least 24 (docs/mqtt.md)")


class Retention:
    """Prune what is past the retention :class:`Windows`."""

    def __init__(self, db: Database, chain: AuditLog, windows: Windows | None = None) -> None:
        self._db = db
        self._chain = chain
        self.windows = windows if windows is not None else Windows()
        #: WAL checkpoints after finished rounds, on a thread (checkpoint_in_background).
        self.checkpointer: Checkpointer | None = None
        #: Pruning passes so far (the windows' edges are looked for every EDGE_SPACING-th).
        self._edges_due = 0

    def checkpoint_in_background(self) -> None:
        """From now on the WAL is checkpointed after finished rounds by a thread of its
        own (``checkpoint.py``), not by SQLite inside a commit (the daemon's choice)."""
        if self.checkpointer is None and not self._db.readonly:
            self.checkpointer = Checkpointer(self._db.path)

    def close(self) -> None:
        """Stop the checkpoints' thread (the journal closes its database after)."""
        if self.checkpointer is not None:
            self.checkpointer.close()
            self.checkpointer = None

    def prune_later(self) -> None:
        """Prune after a finished round: at once, or deferred (``Database.defer``): then
        a failure is logged, not raised (the round is committed; pruning runs again after
        the next one), and nothing runs once the journal is closed."""
        if self._db.defer is None:
            self.prune()
            return

        def run() -> None:
            if self._db.closed:
                return
            try:
                self.prune()
            except JournalError as exc:
                log.warning("journal: retention failed, retried after the next round: %s", exc)

        self._db.defer(run)

    def prune(self) -> None:
        """Prune raw frames, full detail and published outbox entries past the windows."""
        db = self._db.sql

        def nth_finished(n: int) -> int | None:
            row = db.execute(
                "SELECT id FROM rounds WHERE status IS NOT NULL ORDER BY id DESC LIMIT 1 OFFSET ?",
                (n - 1,),
            ).fetchone()
            return None if row is None else int(row[0])

        self._edges_due += 1
        due = self._edges_due

        def edge(n: int) -> int | None:
            return nth_finished(n) if due % max(1, n // EDGE_SPACING) == 0 else None

        frames_edge = edge(self.windows.raw_frame_rounds)
        full_edge = edge(self.windows.full_rounds)
        pub = db.execute("SELECT MAX(id) FROM outbox_published").fetchone()[0]
        requests_edge = iso_utc(self._db.clock() - timedelta(hours=self.windows.request_keep_hours))
        with self._db.tx("retention", durable=False):
            # Through the index on ``at``: only the requests past the window are read
            # (ordered by id, SQLite scanned every request kept, 24 hours of them, after
            # every round: 2 ms after 120 rounds of 100 bets here, growing with traffic).
            gone = db.execute(
                "SELECT principal, request_id FROM requests WHERE at < ? AND (round_id IS NULL "
                "OR NOT EXISTS (SELECT 1 FROM rounds r WHERE r.round_id = requests.round_id "
                "AND r.detail != 'summary')) ORDER BY at, id",
                (requests_edge,),
            ).fetchall()
            if gone:
                db.executemany(
                    "DELETE FROM requests WHERE principal = ? AND request_id = ?",
                    [(r[0], r[1]) for r in gone],
                )
                self._chain.append_in_tx(
                    db,
                    "requests_pruned",
                    {"requests": [[r[0], r[1]] for r in gone]},
                    self._db.now(),
                )
            if frames_edge is not None:
                old = [
                    r[0]
                    for r in db.execute(
                        "SELECT round_id FROM rounds WHERE detail = 'full' AND id < ? "
                        "AND status IS NOT NULL",
                        (frames_edge,),
                    )
                ]
                for rid in old:
                    db.execute("DELETE FROM raw_frames WHERE round_id = ?", (rid,))
                    db.execute("UPDATE rounds SET detail = 'no_frames' WHERE round_id = ?", (rid,))
                edge_opened = db.execute(
                    "SELECT opened_at FROM rounds WHERE id = ?", (frames_edge,)
                ).fetchone()[0]
                db.execute(
                    "DELETE FROM raw_frames WHERE round_id IS NULL AND at < ?", (edge_opened,)
                )
            if full_edge is not None:
                old = [
                    r[0]
                    for r in db.execute(
                        "SELECT round_id FROM rounds WHERE detail IN ('full', 'no_frames') "
                        "AND id < ? AND status IS NOT NULL",
                        (full_edge,),
                    )
                ]
                for rid in old:
                    db.execute("DELETE FROM raw_frames WHERE round_id = ?", (rid,))
                    db.execute("DELETE FROM bets WHERE round_id = ?", (rid,))
                    db.execute("DELETE FROM settlements WHERE round_id = ?", (rid,))
                    db.execute("UPDATE rounds SET detail = 'summary' WHERE round_id = ?", (rid,))
                if old:
                    self._chain.append_in_tx(
                        db, "rounds_pruned", {"round_ids": old}, self._db.now()
                    )
            if pub is not None:
                # A published entry and its mark go together (an entry not marked stays).
                last = int(pub) - self.windows.published_outbox_keep
                db.execute(
                    "DELETE FROM outbox_entries WHERE id <= ? "
                    "AND id IN (SELECT id FROM outbox_published WHERE id <= ?)",
                    (last, last),
                )
                db.execute("DELETE FROM outbox_published WHERE id <= ?", (last,))
        if self.checkpointer is not None:
            self.checkpointer.round_finished()
