"""The :class:`Journal`: every part of the journal over one connection.

Each concern is a mixin over :class:`~.connection.Connection` in its own module
(outbox, audit chain and faults, jackpot, raw frames, retention, rounds, bets);
``Journal`` sets the state they share, opens the file, and adds what reads across
them (game recall, the status snapshot).
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ..auth.identity import TableIdentity
from ..jsonio import JSON
from ..timefmt import utc_now
from .alerts import AlertStore
from .anchor import ANCHOR_TOPIC, Anchor, AnchorFinding, check_against_anchors
from .audit import Fault
from .auditkey import AuditKey
from .bets import BetRecord, BetStore
from .errors import JournalCorrupt, JournalError
from .frames import RawFrame
from .requests import RequestStore
from .rounds import RoundRecord

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


class Journal(BetStore, RequestStore, AlertStore):
    """The table's journal. Not thread-safe: use it from one thread (the event loop).

    Every public method that writes is one atomic transaction. Methods taking
    ``outbox=`` write those messages in the same transaction, so a lifecycle event
    is published if and only if the change it announces is committed.
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
    ) -> None:
        """``audit_key`` keys the audit chain (``audit.py``); the daemon always gives
        it. Without one the chain is plain SHA-256 (library use and tests), and a
        journal whose chain is keyed refuses chain writes. ``identity`` signs what the
        outbox holds (every round, anchor and event the table publishes); the daemon
        always gives it, and records a change of identity key in the chain."""
        if raw_frame_rounds < 10:
            raise ValueError("raw_frame_rounds must be at least 10 (recall of the last 10 games)")
        if full_rounds < raw_frame_rounds:
            raise ValueError("full_rounds must be at least raw_frame_rounds")
        self.raw_frame_rounds = raw_frame_rounds
        self.full_rounds = full_rounds
        self.published_outbox_keep = published_outbox_keep
        if request_keep_hours < 24:
            raise ValueError("request_keep_hours must be at least 24 (docs/mqtt.md)")
        self.request_keep_hours = request_keep_hours
        self._listeners = []
        self._audit_key = audit_key
        self._identity = identity
        self._chain_key_id = None
        super().__init__(path, integrity_check=integrity_check, clock=clock, readonly=readonly)
        try:
            self._init_chain()
            self._record_identity()
        except BaseException:
            self.close()
            raise

    def _record_identity(self) -> None:
        """The first start with an identity key, and every change of it (a rotation),
        is an ``identity_key`` entry of the chain: which key signed the table's messages
        from when (the floor's registry must hold it)."""
        identity = self._identity
        if identity is None or self.readonly:
            return
        row = self._db.execute("SELECT value FROM meta WHERE key = 'identity_key_id'").fetchone()
        previous = row[0] if row else None
        if previous == identity.key_id:
            return
        with self._tx("identity_key") as db:
            self._append_event(
                db,
                "identity_key",
                {"key_id": identity.key_id, "previous": previous, "path": identity.path},
                self._now(),
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
        meta = dict(
            self._db.execute(
                "SELECT key, value FROM meta WHERE key IN "
                "('owner_table_id', 'owner_game', 'owner_rules_sha256')"
            ).fetchall()
        )
        known = (meta.get("owner_table_id"), meta.get("owner_game"))
        if known == (None, None):
            row = self._db.execute(
                "SELECT table_id, game FROM rounds ORDER BY id DESC LIMIT 1"
            ).fetchone()
            known = (row[0], row[1]) if row else (None, None)
        if known != (None, None) and known != (owner.table_id, owner.game):
            raise JournalOfAnotherTable(
                f"{self.path} is the journal of table {known[0]} ({known[1]}); this "
                f"configuration is for table {owner.table_id} ({owner.game}): a journal "
                "serves one table and one game (changing a table's game: docs/install.md)"
            )
        if self.readonly:
            return
        first = "owner_table_id" not in meta
        changed = not first and meta.get("owner_rules_sha256") != owner.rules_sha256
        if not first and not changed:
            return
        with self._tx("journal_table") as db:
            if first:
                self._append_event(
                    db,
                    "journal_table",
                    {
                        "table_id": owner.table_id,
                        "game": owner.game,
                        "rules_sha256": owner.rules_sha256,
                    },
                    self._now(),
                )
            else:
                self._append_event(
                    db,
                    "rules_changed",
                    {"from": meta.get("owner_rules_sha256"), "to": owner.rules_sha256},
                    self._now(),
                )
            db.executemany(
                "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                [
                    ("owner_table_id", owner.table_id),
                    ("owner_game", owner.game),
                    ("owner_rules_sha256", owner.rules_sha256),
                ],
            )

    @property
    def identity(self) -> TableIdentity | None:
        """The key that signs the table's messages (None: unsigned, library use)."""
        return self._identity

    def recall(self, n: int = 10) -> list[RecalledRound]:
        """The last ``n`` rounds (newest first) with bets, settlement payload and raw frames."""
        return [
            RecalledRound(
                rnd,
                tuple(self.bets(rnd.round_id)),
                self.settlement(rnd.round_id),
                tuple(self.raw_frames(rnd.round_id)),
            )
            for rnd in self.rounds_summary(n)
        ]

    def _storage_recovered(self, fault: dict[str, JSON]) -> None:
        """A storage fault cleared: the episode goes to the event log (best effort: a
        failure here latches the fault again, which the guard logs)."""
        with contextlib.suppress(JournalError):
            self.append_event("storage_fault_cleared", fault)

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
            key if key is not None else self._audit_key,
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
            head, _ = self.chain_head()
            return audit_journal(self, self._audit_key, since=max(1, head - entries + 1))
        except sqlite3.DatabaseError as exc:  # a damaged page the open's quick check missed
            raise JournalCorrupt(f"{self.path}: {exc}") from exc

    # -- the journal against the floor ---------------------------------------------------
    def check_against_floor(
        self, anchors: Sequence[Anchor], table_id: str | None = None
    ) -> list[AnchorFinding]:
        """What the journal lacks of what the floor holds (``anchors``: the retained
        ``anchor`` and ``state`` the table last published): empty when it lacks nothing."""
        try:
            return check_against_anchors(self, anchors, table_id)
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
        ``seq_floor:<table_id>``; :meth:`next_seq` continues above it).

        ``findings``: what the floor's anchors say is missing; ``damage``: rows the
        journal's own recent chain describes and no longer holds (:meth:`check_recent`);
        ``anchors``: every anchor the floor holds (for its last ``seq``)."""
        if not findings and not damage:
            raise ValueError("nothing is missing: there is no fault to latch")
        now = self._now(at)
        seqs = [
            a.round_seq
            for a in [*anchors, *(f.anchor for f in findings)]
            if a.round_seq is not None
        ]
        floor_seq = max(seqs, default=0)
        head_id, head = self.chain_head()
        last = self.last_seq(table_id)
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
        with self._tx("latch_behind_floor") as db:
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
            fault, _ = self._set_fault(db, "JOURNAL_BEHIND_FLOOR", message, data, now)
            return fault

    def get_status(self) -> dict[str, JSON]:
        """A snapshot for ``status`` on the console and the daemon's health."""
        return {
            "storage": self.storage.get_status(),
            "path": self.path,
            "schema_version": self.schema_version,
            "outbox_pending": self.outbox_pending_count(),
            "in_flight_rounds": [r.round_id for r in self.in_flight_rounds()],
            "active_faults": [f.code for f in self.active_faults()],
            "chain": dict(zip(("seq", "head"), self.chain_head(), strict=True)),
            "audit_key_id": self.audit_key_id,
            "commit_latency": self.commit_latency(),
        }
