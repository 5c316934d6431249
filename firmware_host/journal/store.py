"""The :class:`Journal`: the parts of the journal over one database, and what reads
across them.

Each concern is an object of its own in its own module, with its own small interface,
all sharing the one :class:`~.database.Database` (the connection, its one transaction
at a time, the storage guard, ``meta`` and the clock):

- ``journal.db``: :class:`~.database.Database`; transactions (``transaction``,
  ``after_commit``, ``on_rollback``, ``later``), the storage guard;
- ``journal.outbox``: :class:`~.outbox.Outbox`; ``journal.chain``:
  :class:`~.chain.AuditLog`, the keyed chain; ``journal.faults``:
  :class:`~.faults.FaultStore`, the latched faults;
- ``journal.jackpot``: :class:`~.jackpot.JackpotStore`; ``journal.frames``:
  :class:`~.frames.FrameStore`; ``journal.retention``: :class:`~.retention.Retention`;
- ``journal.rounds``: :class:`~.rounds.RoundStore`; ``journal.bets``:
  :class:`~.bets.BetStore`; ``journal.requests``: :class:`~.requests.RequestStore`;
  ``journal.alerts``: :class:`~.alerts.AlertStore`.

A part that writes what others record takes them as collaborators and calls their
``*_in_tx`` writers inside its own transaction: settling a round writes the round, its
settlement, its outbox entries, the jackpot's state and hits, its raw frames and its
chain entries in ONE transaction (``RoundStore.settle_round``). Every public write of a
part is one transaction, or a savepoint of the one open (``Database.transaction``).

``Journal`` builds the parts, opens and closes the file, and keeps only what reads
across them: game recall, the audit, the start-up checks against its own chain and the
floor, which table it serves (``claim``) and the status snapshot.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Self

from ..auth.identity import TableIdentity
from ..jsonio import JSON
from ..timefmt import utc_now
from .alerts import AlertStore
from .anchor import ANCHOR_TOPIC, Anchor, AnchorFinding, check_against_anchors
from .auditkey import AuditKey
from .bets import BetRecord, BetStore
from .chain import AuditLog
from .database import Database
from .errors import JournalCorrupt, JournalError
from .faults import Fault, FaultStore
from .frames import FrameStore, RawFrame
from .jackpot import JackpotStore
from .outbox import Outbox
from .requests import RequestStore
from .retention import Retention, Windows
from .rounds import RoundRecord, RoundStore

if TYPE_CHECKING:
    from .verify_model import AuditReport


@dataclass(frozen=True, slots=True)
class TableOwner:
    """The table a journal serves: recorded when the daemon first opens it, checked at
    every open after (``Journal.claim``)."""

    table_id: str
    game: str
    #: SHA-256 of the rules options as every round records them (``rules_digest``).
    rules_sha256: str


class JournalOfAnotherTable(JournalError):
    """A journal opened with the configuration of another table or game."""

    code = "JOURNAL_OTHER_TABLE"


@dataclass(frozen=True, slots=True)
class RecalledRound:
    """One round as the console's ``recall`` shows it."""

    round: RoundRecord
    bets: tuple[BetRecord, ...]
    settlement: JSON  # the published payload, or None (in flight, or pruned)
    frames: tuple[RawFrame, ...]

    def to_json(self) -> dict[str, JSON]:
        return {
            "round": self.round.to_json(),
            "bets": [b.to_json() for b in self.bets],
            "settlement": self.settlement,
            "frames": [f.to_json() for f in self.frames],
        }


class Journal:
    """The table's journal: its parts over one database. Not thread-safe: use it from
    one thread (the event loop).

    Every public method of a part that writes is one atomic transaction. Methods taking
    ``outbox=`` write those messages in the same transaction, so a lifecycle event is
    published if and only if the change it announces is committed.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        raw_frame_rounds: int = 100,
        full_rounds: int = 10000,
        published_outbox_keep: int = 1000,
        request_keep_hours: int = 24,
        integrity_check: str = "quick",
        clock: Callable[[], datetime] = utc_now,
        readonly: bool = False,
        audit_key: AuditKey | None = None,
        identity: TableIdentity | None = None,
        defer: Callable[[Callable[[], None]], object] | None = None,
    ) -> None:
        """``audit_key`` keys the audit chain (``chain.py``); the daemon always gives
        it. Without one the chain is plain SHA-256 (library use and tests), and a
        journal whose chain is keyed refuses chain writes. ``identity`` signs what the
        outbox holds (every round, anchor and event the table publishes); the daemon
        always gives it, and records a change of identity key in the chain. ``defer``:
        where work that can wait after a commit goes (``Database.defer``)."""
        windows = Windows(raw_frame_rounds, full_rounds, published_outbox_keep, request_keep_hours)
        self.db = Database(
            path, integrity_check=integrity_check, clock=clock, readonly=readonly, defer=defer
        )
        try:
            self.outbox = Outbox(self.db, identity)
            self.chain = AuditLog(self.db, self.outbox, audit_key)
            self.faults = FaultStore(self.db, self.chain)
            self.jackpot = JackpotStore(self.db, self.chain, self.outbox)
            self.frames = FrameStore(self.db)
            self.retention = Retention(self.db, self.chain, windows)
            self.rounds = RoundStore(
                self.db,
                chain=self.chain,
                outbox=self.outbox,
                jackpot=self.jackpot,
                frames=self.frames,
                retention=self.retention,
            )
            self.bets = BetStore(self.db, chain=self.chain, outbox=self.outbox, rounds=self.rounds)
            self.requests = RequestStore(self.db, self.chain)
            self.alerts = AlertStore(self.db, self.chain)
            self.db.on_storage_recovered(self._storage_recovered)
            self._record_identity(identity)
        except BaseException:
            self.db.close()  # no checkpoint thread runs yet, no lock is held yet
            raise

    @property
    def path(self) -> str:
        return self.db.path

    def close(self) -> None:
        """Stop the checkpoints' thread, close the file and release the state lock."""
        self.retention.close()
        self.db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _record_identity(self, identity: TableIdentity | None) -> None:
        """The first start with an identity key, and every change of it (a rotation),
        is an ``identity_key`` entry of the chain: which key signed the table's messages
        from when (the floor's registry must hold it)."""
        if identity is None or self.db.readonly:
            return
        previous = self.db.meta("identity_key_id")
        if previous == identity.key_id:
            return
        with self.db.tx("identity_key") as db:
            self.chain.append_in_tx(
                db,
                "identity_key",
                {"key_id": identity.key_id, "previous": previous, "path": identity.path},
                self.db.now(),
            )
            db.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('identity_key_id', ?)",
                (identity.key_id,),
            )

    def claim(self, owner: TableOwner) -> None:
        """The journal serves ``owner``'s table and game, or is refused
        (:class:`JournalOfAnotherTable`, one line naming both). A journal of no table yet
        (new, or written before issue 29: its rounds say which table and game it
        served) records its owner in the chain (``journal_table``); a change of the
        rules options of the same game is recorded (``rules_changed``)."""
        sql = self.db.sql
        meta = dict(
            sql.execute(
                "SELECT key, value FROM meta WHERE key IN "
                "('owner_table_id', 'owner_game', 'owner_rules_sha256')"
            ).fetchall()
        )
        known = (meta.get("owner_table_id"), meta.get("owner_game"))
        if known == (None, None):
            row = sql.execute(
                "SELECT table_id, game FROM rounds ORDER BY id DESC LIMIT 1"
            ).fetchone()
            known = (row[0], row[1]) if row else (None, None)
        if known != (None, None) and known != (owner.table_id, owner.game):
            raise JournalOfAnotherTable(
                f"{self.path} is the journal of table {known[0]} ({known[1]}); this "
                f"configuration is for table {owner.table_id} ({owner.game}): a journal "
                "serves one table and one game (changing a table's game: docs/install.md)"
            )
        if self.db.readonly:
            return
        first = "owner_table_id" not in meta
        changed = not first and meta.get("owner_rules_sha256") != owner.rules_sha256
        if not first and not changed:
            return
        with self.db.tx("journal_table") as db:
            if first:
                self.chain.append_in_tx(
                    db,
                    "journal_table",
                    {
                        "table_id": owner.table_id,
                        "game": owner.game,
                        "rules_sha256": owner.rules_sha256,
                    },
                    self.db.now(),
                )
            else:
                self.chain.append_in_tx(
                    db,
                    "rules_changed",
                    {"from": meta.get("owner_rules_sha256"), "to": owner.rules_sha256},
                    self.db.now(),
                )
            db.executemany(
                "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                [
                    ("owner_table_id", owner.table_id),
                    ("owner_game", owner.game),
                    ("owner_rules_sha256", owner.rules_sha256),
                ],
            )

    def recall(self, n: int = 10) -> list[RecalledRound]:
        """The last ``n`` rounds (newest first) with bets, settlement payload and raw frames."""
        return [
            RecalledRound(
                rnd,
                tuple(self.bets.bets(rnd.round_id)),
                self.rounds.settlement(rnd.round_id),
                tuple(self.frames.of_round(rnd.round_id)),
            )
            for rnd in self.rounds.summary(n)
        ]

    def _storage_recovered(self, fault: dict[str, JSON]) -> None:
        """A storage fault cleared: the episode goes to the event log (best effort: a
        failure here latches the fault again, which the guard logs)."""
        with contextlib.suppress(JournalError):
            self.chain.append_event("storage_fault_cleared", fault)

    def audit(
        self,
        key: AuditKey | None = None,
        *,
        anchors: Sequence[Anchor] = (),
        floor_rounds: Sequence[tuple[str, Mapping[str, JSON]]] = (),
    ) -> AuditReport:
        """Every money row checked against the chain (keyed with ``key``, by default
        the journal's own), and the journal against the floor's anchors and rounds:
        :func:`~.verify.audit_journal`."""
        from .verify import audit_journal

        return audit_journal(
            self,
            key if key is not None else self.chain.key,
            anchors=anchors,
            floor_rounds=floor_rounds,
        )

    def check_recent(self, entries: int = 10_000) -> AuditReport:
        """Does the journal still hold what it recently wrote? The last ``entries`` of
        the chain checked, and every row they describe (:meth:`audit` restricted to a
        window, taking the chain before it as stored).

        Power cut on storage that lied about a flush can leave a journal whose newest
        entries are there but some pages are older (a checkpoint lost): the anchors the
        floor holds still match, rounds are missing. Run at start-up; about as long as
        an audit of ``entries`` rows."""
        from .verify import audit_journal

        try:
            head, _ = self.chain.head()
            return audit_journal(self, self.chain.key, since=max(1, head - entries + 1))
        except sqlite3.DatabaseError as exc:  # a damaged page the open's quick check missed
            raise JournalCorrupt(f"{self.path}: {exc}") from exc

    # -- the journal against the floor ---------------------------------------------------
    def check_against_floor(
        self, anchors: Sequence[Anchor], table_id: str | None = None
    ) -> list[AnchorFinding]:
        """What the journal lacks of what the floor holds (``anchors``: the retained
        ``anchor`` and ``state`` the table last published): empty when it lacks nothing."""
        try:
            return check_against_anchors(self.chain, self.rounds, anchors, table_id)
        except sqlite3.DatabaseError as exc:
            raise JournalCorrupt(f"{self.path}: {exc}") from exc

    def latch_behind_floor(
        self,
        table_id: str,
        findings: Sequence[AnchorFinding],
        *,
        damage: Sequence[str] = (),
        anchors: Sequence[Anchor] = (),
        at: datetime | None = None,
    ) -> Fault:
        """Latch ``JOURNAL_BEHIND_FLOOR`` (play stops until a technician clears it) and
        make sure no ``seq`` the floor has seen is given again: in ONE transaction, the
        fault, its chain entry (what is missing) and the floor's last ``seq`` (``meta``
        ``seq_floor:<table_id>``; ``RoundStore.next_seq`` continues above it).

        ``findings``: what the floor's anchors say is missing; ``damage``: rows the
        journal's own recent chain describes and no longer holds (:meth:`check_recent`);
        ``anchors``: every anchor the floor holds (for its last ``seq``)."""
        if not findings and not damage:
            raise ValueError("nothing is missing: there is no fault to latch")
        now = self.db.now(at)
        seqs = [
            a.round_seq
            for a in [*anchors, *(f.anchor for f in findings)]
            if a.round_seq is not None
        ]
        floor_seq = max(seqs, default=0)
        head_id, head = self.chain.head()
        last = self.rounds.last_seq(table_id)
        missing = "; ".join(
            [
                *(f.reason for f in findings),
                *(
                    f"the journal no longer holds what its own chain recorded: {d}"
                    for d in damage[:3]
                ),
                *([f"and {len(damage) - 3} more such row(s)"] if len(damage) > 3 else []),
            ]
        )
        if floor_seq > last:
            n = floor_seq - last
            missing += (
                f"; rounds {last + 1}..{floor_seq} ({n} round(s)) the floor holds are not in "
                "the journal"
            )
        message = (
            f"the journal is behind what the floor holds: {missing}. "
            f"Rounds continue from seq {max(floor_seq, last) + 1} (no seq is reused); "
            "reconcile with the floor's records, then clear this fault from the console "
            "with a reason"
        )
        data: dict[str, JSON] = {
            "floor": [f.anchor.to_json() for f in findings],
            "findings": [f.kind for f in findings],
            "damage": list(damage),
            "journal": {"chain": {"seq": head_id, "head": head}, "last_seq": last},
            "seq_floor": floor_seq,
        }
        with self.db.tx("latch_behind_floor") as db:
            key = f"seq_floor:{table_id}"
            row = db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
            if row is None or int(row[0]) < floor_seq:
                db.execute(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, str(floor_seq))
                )
            # A retained anchor this journal had not published yet is older than the
            # floor's: never published (it would overwrite the floor's evidence).
            db.execute(
                "INSERT OR IGNORE INTO outbox_published (id, published_at) "
                "SELECT e.id, ? FROM outbox_entries e JOIN rounds r ON r.round_id = e.round_id "
                "WHERE e.topic = ? AND r.table_id = ? AND r.seq <= ? AND NOT EXISTS "
                "(SELECT 1 FROM outbox_published p WHERE p.id = e.id)",
                (now, ANCHOR_TOPIC, table_id, floor_seq),
            )
            fault, _ = self.faults.set_in_tx(db, "JOURNAL_BEHIND_FLOOR", message, data, now)
            return fault

    def get_status(self) -> dict[str, JSON]:
        """A snapshot for ``status`` on the console and the daemon's health."""
        return {
            "storage": self.db.storage.get_status(),
            "path": self.path,
            "schema_version": self.db.schema_version,
            "outbox_pending": self.outbox.pending_count(),
            "in_flight_rounds": [r.round_id for r in self.rounds.in_flight()],
            "active_faults": [f.code for f in self.faults.active()],
            "chain": dict(zip(("seq", "head"), self.chain.head(), strict=True)),
            "audit_key_id": self.chain.key_id,
            "commit_latency": self.db.commit_latency(),
        }
