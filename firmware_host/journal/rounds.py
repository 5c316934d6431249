"""Rounds: one row per round from open to settled or void, with its settlement.

A crash at any instant leaves every round either fully settled (round row,
settlement payload, outbox entry, jackpot state, all in one transaction) or not
settled at all, and a round can never be settled or voided twice:
:meth:`RoundStore.settle_round` and :meth:`RoundStore.void_round` refuse a round
that is already finished. Settling or voiding writes, in that one transaction, through
the parts it takes as collaborators (their ``*_in_tx`` writers): the jackpot's state and
hits, the chain's entries, the outbox's messages and the raw frames that carried the
result.

This module is also the one place that numbers rounds: :meth:`RoundStore.next_seq`
(the table's next sequence number) and :func:`new_round_id`. A sequence number the
floor has already seen is never given again, even by a journal that lost its tail:
the start-up check against the floor records the floor's last ``seq`` (``meta``
``seq_floor:<table_id>``) and numbering continues above it.

Each round's opening and finish append its entry to the audit chain (``chain.py``) in
the same transaction, and queue the retained ``anchor`` (``anchor.py``) before the
round's own messages; a finished round's payload carries its chain position
(``chain``).
"""

from __future__ import annotations

import hashlib
import json
import secrets
import sqlite3
from collections.abc import Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from ..auth.identity import TableIdentity
from ..jsonio import JSON, canonical_json, canonical_json_nofloat, dumps
from ..schemas import PAYLOAD_SCHEMA_VERSION
from .anchor import ANCHOR_TOPIC
from .chain import AuditLog, Event
from .database import Database
from .errors import RoundExists, RoundFinished, RoundInFlight, RoundNotFound
from .frames import FrameStore
from .jackpot import DEFAULT_JACKPOT, JackpotHit, JackpotStore
from .outbox import Outbox, OutboxMessage
from .retention import Retention
from .storage import loads_or_none

#: Topic of settled and voided rounds, relative to the table's root.
ROUNDS_TOPIC = "rounds"
#: ``settlements.outbox_id`` of a round voided in the journal only (never published).
WITHHELD = 0

RoundStatus = Literal["settled", "void"]


def new_round_id(table_id: str, seq: int) -> str:
    """``<table_id>-<seq:06d>-<8 hex>``: the id of round ``seq`` of a table.

    The random tail keeps ids unique on the floor even if a journal is ever lost and
    ``seq`` restarts.
    """
    return f"{table_id}-{seq:06d}-{secrets.token_hex(4)}"


def seq_of_round_id(round_id: object) -> int | None:
    """The seq in a round id of :func:`new_round_id`'s form (None: not of that form)."""
    if not isinstance(round_id, str):
        return None
    parts = round_id.rsplit("-", 2)
    if len(parts) != 3 or not parts[1].isdigit() or int(parts[1]) < 1:
        return None
    return int(parts[1])


def _next_seq(db: sqlite3.Connection, table_id: str) -> int:
    row = db.execute(
        "SELECT MAX(COALESCE((SELECT MAX(seq) FROM rounds WHERE table_id = ?), 0), "
        "COALESCE((SELECT CAST(value AS INTEGER) FROM meta WHERE key = ?), 0)) + 1",
        (table_id, f"seq_floor:{table_id}"),
    ).fetchone()
    return int(row[0])


#: Members of a round payload its digest leaves out: the position of the chain entry
#: that records the digest, and the table's signature over the whole.
_NOT_DIGESTED = ("chain", "signature")


def payload_digest(payload: Mapping[str, JSON]) -> str:
    """SHA-256 (hex) of a round payload's canonical JSON without its ``chain`` (the
    position of the chain entry that records this digest) and its ``signature``."""
    return _digest(_canonical_payload(payload))


def _canonical_payload(payload: Mapping[str, JSON]) -> str:
    return canonical_json_nofloat({k: v for k, v in payload.items() if k not in _NOT_DIGESTED})


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _body(
    payload: Mapping[str, JSON],
    canonical: str,
    chain: Mapping[str, JSON],
    identity: TableIdentity | None,
) -> str:
    """The stored and published body of a finished round. Signed (the daemon's
    journal): the canonical JSON of the payload with ``chain``, and the table's
    signature as its last member (``auth/evidence.py``). Unsigned (library use, tests):
    the canonical JSON its digest was computed on with ``chain`` appended."""
    if identity is not None:
        body = {k: v for k, v in payload.items() if k not in _NOT_DIGESTED}
        body["chain"] = dict(chain)
        return identity.seal_text(ROUNDS_TOPIC, canonical_json_nofloat(body)).decode("utf-8")
    tail = '"chain":' + dumps(dict(chain)) + "}"
    return "{" + tail if canonical == "{}" else canonical[:-1] + "," + tail


def rules_digest(rules: JSON) -> str:
    """SHA-256 (hex) of a round's rules, as its ``round_opened`` chain entry records them."""
    return hashlib.sha256(canonical_json(rules).encode("utf-8")).hexdigest()


def anchor_message(
    table_id: str, round_id: str, seq: int, phase: str, entry: Event, now: str
) -> OutboxMessage:
    """The retained ``anchor`` (``firmware_host/schemas/anchor.json``): round ``seq`` is
    in ``phase`` and chain entry ``entry`` is its latest."""
    return OutboxMessage(
        ANCHOR_TOPIC,
        {
            "schema_version": PAYLOAD_SCHEMA_VERSION,
            "table_id": table_id,
            "round_id": round_id,
            "seq": seq,
            "phase": phase,
            "chain": {"seq": entry.id, "head": entry.hash},
            "at": now,
        },
        qos=1,
        retain=True,
        round_id=round_id,
    )


@dataclass(frozen=True, slots=True)
class RoundRecord:
    round_id: str
    table_id: str
    seq: int
    game: str
    rules: JSON
    phase: str
    status: RoundStatus | None
    void_reason: str | None
    outcome: JSON
    #: First time the round entered each phase: ``{"open": "2026-...Z", ...}``.
    timestamps: Mapping[str, str]
    opened_at: str
    finished_at: str | None
    #: Kept forever: totals and bet count of the settled round.
    summary: JSON
    #: What is still kept: ``full``, ``no_frames`` (raw frames pruned) or ``summary``.
    detail: str

    @property
    def finished(self) -> bool:
        return self.status is not None

    def to_json(self) -> dict[str, JSON]:
        return {
            "round_id": self.round_id,
            "table_id": self.table_id,
            "seq": self.seq,
            "game": self.game,
            "rules": self.rules,
            "phase": self.phase,
            "status": self.status,
            "void_reason": self.void_reason,
            "outcome": self.outcome,
            "timestamps": dict(self.timestamps),
            "opened_at": self.opened_at,
            "finished_at": self.finished_at,
            "summary": self.summary,
            "detail": self.detail,
        }


_ROUND_COLS = (
    "round_id, table_id, seq, game, rules, phase, status, void_reason, outcome, "
    "timestamps, opened_at, finished_at, summary, detail"
)


def _round(row: sqlite3.Row) -> RoundRecord:
    return RoundRecord(
        round_id=row[0],
        table_id=row[1],
        seq=row[2],
        game=row[3],
        rules=loads_or_none(row[4]),
        phase=row[5],
        status=row[6],
        void_reason=row[7],
        outcome=loads_or_none(row[8]),
        timestamps=loads_or_none(row[9]),
        opened_at=row[10],
        finished_at=row[11],
        summary=loads_or_none(row[12]),
        detail=row[13],
    )


class RoundStore:
    """Open, move, settle and void rounds; read them back.

    A round's settlement or void is one transaction that also writes through its
    collaborators: the jackpot's state and hits, the chain's entries, the outbox's
    messages and raw frames; then retention prunes."""

    def __init__(
        self,
        db: Database,
        *,
        chain: AuditLog,
        outbox: Outbox,
        jackpot: JackpotStore,
        frames: FrameStore,
        retention: Retention,
    ) -> None:
        self._db = db
        self._chain = chain
        self._outbox = outbox
        self._jackpot = jackpot
        self._frames = frames
        self._retention = retention

    def _get(self, db: sqlite3.Connection, round_id: str) -> RoundRecord:
        """Round ``round_id`` as ``db`` sees it (:class:`RoundNotFound`)."""
        row = db.execute(
            f"SELECT {_ROUND_COLS} FROM rounds WHERE round_id = ?", (round_id,)
        ).fetchone()
        if row is None:
            raise RoundNotFound(f"no round {round_id!r} in the journal")
        return _round(row)

    def unfinished_in_tx(self, db: sqlite3.Connection, round_id: str, what: str) -> RoundRecord:
        """Round ``round_id``, refused (:class:`RoundFinished`) if finished: checked in the
        open transaction that changes it (a bet cannot slip in after its round ended)."""
        rnd = self._get(db, round_id)
        if rnd.finished:
            raise RoundFinished(
                f"round {round_id} is already {rnd.status}"
                + (f" ({rnd.void_reason})" if rnd.void_reason else "")
                + f"; cannot {what}"
            )
        return rnd

    # -- rounds ------------------------------------------------------------------
    def next_seq(self, table_id: str) -> int:
        """The sequence number the table's next round gets (its last one + 1)."""
        return _next_seq(self._db.sql, table_id)

    def open_round(
        self,
        table_id: str,
        game: str,
        rules: JSON,
        *,
        round_id: str | None = None,
        seq: int | None = None,
        phase: str = "open",
        at: datetime | None = None,
        allow_concurrent: bool = False,
        outbox: Sequence[OutboxMessage] = (),
    ) -> RoundRecord:
        """Start a round. ``seq`` defaults to the table's next sequence number and
        ``round_id`` to :func:`new_round_id` of it.

        Refuses (:class:`RoundInFlight`) while another round of the table is unfinished
        unless ``allow_concurrent``.
        """
        now = self._db.now(at)
        with self._db.tx("open_round") as db:
            if not allow_concurrent:
                row = db.execute(
                    # ``+table_id``: through the index of rounds in flight (a few), not
                    # every round of the table (kept forever).
                    "SELECT round_id FROM rounds WHERE +table_id = ? AND status IS NULL LIMIT 1",
                    (table_id,),
                ).fetchone()
                if row is not None:
                    raise RoundInFlight(f"round {row[0]} of table {table_id} is not finished")
            if seq is None:
                seq = _next_seq(db, table_id)
            if round_id is None:
                round_id = new_round_id(table_id, seq)
            try:
                db.execute(
                    "INSERT INTO rounds (round_id, table_id, seq, game, rules, phase, timestamps, "
                    "opened_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (round_id, table_id, seq, game, dumps(rules), phase, dumps({phase: now}), now),
                )
            except sqlite3.IntegrityError as exc:
                raise RoundExists(
                    f"round {round_id!r} or seq {seq} of table {table_id} already exists"
                ) from exc
            entry = self._chain.append_in_tx(
                db,
                "round_opened",
                {
                    "round_id": round_id,
                    "table_id": table_id,
                    "seq": seq,
                    "game": game,
                    "phase": phase,
                    "rules_sha256": rules_digest(rules),
                },
                now,
            )
            anchor = anchor_message(table_id, round_id, seq, phase, entry, now)
            self._outbox.enqueue_in_tx(db, [anchor], now)
            self._outbox.enqueue_in_tx(db, outbox, now)
            return self._get(db, round_id)

    def round(self, round_id: str) -> RoundRecord:
        return self._get(self._db.sql, round_id)

    def set_phase(
        self,
        round_id: str,
        phase: str,
        *,
        outcome: JSON = None,
        at: datetime | None = None,
        outbox: Sequence[OutboxMessage] = (),
    ) -> RoundRecord:
        """Move an unfinished round to ``phase`` (and record the outcome, when given).

        An outcome recorded here survives a restart (``RoundEngine.resume`` settles a
        round found in phase ``result`` with an outcome); the round engine does not
        write one today: it settles a result in one transaction. ``settled`` and
        ``void`` are set only by :meth:`settle_round` and :meth:`void_round`.
        """
        if phase in ("settled", "void"):
            raise ValueError(
                f"use settle_round/void_round to finish a round, not set_phase({phase!r})"
            )
        now = self._db.now(at)
        with self._db.tx("set_phase") as db:
            rnd = self.unfinished_in_tx(db, round_id, f"move it to phase {phase!r}")
            stamps = dict(rnd.timestamps)
            stamps.setdefault(phase, now)
            if outcome is None:
                db.execute(
                    "UPDATE rounds SET phase = ?, timestamps = ? WHERE round_id = ?",
                    (phase, dumps(stamps), round_id),
                )
            else:
                db.execute(
                    "UPDATE rounds SET phase = ?, timestamps = ?, outcome = ? WHERE round_id = ?",
                    (phase, dumps(stamps), dumps(outcome), round_id),
                )
            self._outbox.enqueue_in_tx(db, outbox, now)
            return self._get(db, round_id)

    def _finish(
        self,
        op: str,
        round_id: str,
        status: RoundStatus,
        payload: Mapping[str, JSON],
        *,
        outcome: JSON,
        void_reason: str | None,
        jackpot_state: Mapping[str, JSON] | None,
        jackpot_name: str,
        jackpot_hits: Sequence[JackpotHit],
        events: Sequence[tuple[str, JSON]],
        outbox: Sequence[OutboxMessage],
        at: datetime | None,
        raw_frames: Sequence[tuple[str, Literal["rx", "tx"], bytes]] = (),
    ) -> int:
        if not isinstance(payload, Mapping):
            raise TypeError("the round payload must be a JSON object (mapping)")
        if payload.get("round_id", round_id) != round_id:
            raise ValueError(f"payload round_id {payload.get('round_id')!r} is not {round_id!r}")
        if payload.get("status", status) != status:
            raise ValueError(f"payload status {payload.get('status')!r} is not {status!r}")
        now = self._db.now(at)
        with self._db.tx(op) as db:
            rnd = self.unfinished_in_tx(db, round_id, "settle or void it again")
            stamps = dict(rnd.timestamps)
            stamps.setdefault(status, now)
            final_outcome = outcome if outcome is not None else rnd.outcome
            canonical = _canonical_payload(payload)
            bets = payload.get("bets")
            summary: dict[str, JSON] = {"bets": len(bets) if isinstance(bets, list) else 0}
            for key in ("totals", "jackpot"):
                if key in payload:
                    summary[key] = payload[key]
            cur = db.execute(
                "UPDATE rounds SET phase = ?, status = ?, void_reason = ?, outcome = ?, "
                "timestamps = ?, finished_at = ?, summary = ? "
                "WHERE round_id = ? AND status IS NULL",
                (
                    status,
                    status,
                    void_reason,
                    None if final_outcome is None else dumps(final_outcome),
                    dumps(stamps),
                    now,
                    dumps(summary),
                    round_id,
                ),
            )
            if cur.rowcount != 1:  # cannot happen inside BEGIN IMMEDIATE; belt and braces
                raise RoundFinished(f"round {round_id} changed under the transaction")
            for hit in jackpot_hits:
                self._jackpot.record_hit_in_tx(db, hit, now)
            if jackpot_state is not None:
                self._jackpot.save_in_tx(db, jackpot_name, jackpot_state, round_id, now)
            for kind, data in events:
                self._chain.append_in_tx(db, kind, data, now)
            # The round's closing entry comes last, so its position (published with the
            # round) anchors everything the round wrote.
            closing: dict[str, JSON] = {
                "round_id": round_id,
                "seq": rnd.seq,
                "status": status,
                "outcome": final_outcome,
                "timestamps": stamps,
                "summary": summary,
                "payload_sha256": _digest(canonical),
            }
            if status == "void":
                closing["reason"] = void_reason
            # A seq the floor holds as another round (a journal behind the floor left
            # it in flight): finished for the journal only (:meth:`withheld`).
            withheld = self.withheld(rnd.table_id, rnd.seq)
            if withheld is not None:
                closing["withheld"] = withheld
            entry = self._chain.append_in_tx(
                db, "round_settled" if status == "settled" else "round_void", closing, now
            )
            chain: dict[str, JSON] = {"seq": entry.id, "head": entry.hash}
            body = _body(payload, canonical, chain, self._outbox.identity)
            if withheld is None:
                anchor = anchor_message(rnd.table_id, round_id, rnd.seq, status, entry, now)
                (_, outbox_id) = self._outbox.enqueue_in_tx(
                    db,
                    [anchor, OutboxMessage(ROUNDS_TOPIC, body.encode("utf-8"), 1, False, round_id)],
                    now,
                )
            else:  # never published, never replayed: the floor holds another round `seq`
                outbox_id = WITHHELD
            db.execute(
                "INSERT INTO settlements (round_id, status, payload, outbox_id, created_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (round_id, status, body, outbox_id, now),
            )
            self._outbox.enqueue_in_tx(db, outbox, now)
            self._frames.insert_in_tx(db, ((round_id, *f) for f in raw_frames), now)
        if isinstance(payload, MutableMapping):
            payload["chain"] = chain
        self._retention.prune_later()
        return outbox_id

    def settle_round(
        self,
        round_id: str,
        outcome: JSON,
        payload: Mapping[str, JSON],
        jackpot_state: Mapping[str, JSON] | None = None,
        *,
        jackpot_name: str = DEFAULT_JACKPOT,
        jackpot_hits: Sequence[JackpotHit] = (),
        events: Sequence[tuple[str, JSON]] = (),
        outbox: Sequence[OutboxMessage] = (),
        at: datetime | None = None,
        raw_frames: Sequence[tuple[str, Literal["rx", "tx"], bytes]] = (),
    ) -> int:
        """Settle a round in ONE transaction; return the id of its ``rounds`` outbox entry.

        Marks the round settled with its outcome, stores ``payload`` (the round as
        published, ``firmware_host/schemas/round.json``), queues it on ``rounds``
        (QoS 1), saves ``jackpot_state`` and records ``jackpot_hits`` (step 1 of 2),
        appends ``events`` to the event log, queues ``outbox`` and keeps
        ``raw_frames`` ``(device, direction, data)``, the device frames that carried the
        result, against the round. Raises
        :class:`RoundFinished` if the round is already settled or voided, so nothing
        is ever settled twice, and :class:`RoundNotFound` for an unknown round.

        The round's closing chain entry (``round_settled``: outcome, timestamps,
        totals, the payload's SHA-256) is appended last, the retained ``anchor`` is
        queued before the round, and the payload is stored and published with
        ``chain = {"seq", "head"}``, that entry's position (the body is the payload's
        canonical JSON, serialised once for its digest and its bytes, with ``chain``
        appended as the last key); ``payload`` itself gets the
        same ``chain`` key when it is a mutable mapping (the round engine's dict).
        """
        return self._finish(
            "settle_round",
            round_id,
            "settled",
            payload,
            outcome=outcome,
            void_reason=None,
            jackpot_state=jackpot_state,
            jackpot_name=jackpot_name,
            jackpot_hits=jackpot_hits,
            events=events,
            outbox=outbox,
            at=at,
            raw_frames=raw_frames,
        )

    def void_round(
        self,
        round_id: str,
        reason: str,
        payload: Mapping[str, JSON],
        *,
        outcome: JSON = None,
        jackpot_state: Mapping[str, JSON] | None = None,
        jackpot_name: str = DEFAULT_JACKPOT,
        events: Sequence[tuple[str, JSON]] = (),
        outbox: Sequence[OutboxMessage] = (),
        at: datetime | None = None,
    ) -> int:
        """Void a round in ONE transaction (same guarantees as :meth:`settle_round`).

        ``payload`` is the voided round as published (bets refunded). Its closing chain
        entry is ``round_void`` (with the ``reason``).

        A round whose ``seq`` the floor already holds as another round (a journal
        behind the floor that left it in flight: a restored backup, ``table/floorcheck.py``)
        is finished for the journal only, *withheld* (:meth:`withheld`): never published
        nor replayed, no ``anchor`` queued, and :data:`WITHHELD` returned.
        """
        if not reason:
            raise ValueError("a void needs a reason")
        return self._finish(
            "void_round",
            round_id,
            "void",
            payload,
            outcome=outcome,
            void_reason=reason,
            jackpot_state=jackpot_state,
            jackpot_name=jackpot_name,
            jackpot_hits=(),
            events=events,
            outbox=outbox,
            at=at,
        )

    def seq_floor(self, table_id: str) -> int:
        """The highest round ``seq`` the floor was found to hold beyond this journal
        (recorded when the journal was found behind it; 0 if never): no round at or
        below it is ever numbered, published or replayed again by this journal."""
        value = self._db.meta(f"seq_floor:{table_id}")
        return int(value) if value is not None else 0

    def withheld(self, table_id: str, seq: int) -> str | None:
        """Why round ``seq`` must be withheld (voided for the journal only, never
        published, replayed or announced), or None: the floor holds that ``seq`` as
        another round, as it really finished (this journal is behind the floor:
        restored or replaced, ``table/floorcheck.py`` recorded the floor's last seq)."""
        floor = self.seq_floor(table_id)
        if seq > floor:
            return None
        return (
            f"the floor holds round seq {floor}: this journal is behind it (restored or "
            "replaced), and its copy of this round is not the floor's"
        )

    def _floor_above(self, table_id: object) -> int:
        """:meth:`seq_floor` of ``table_id``, or the highest of any table when unknown."""
        if isinstance(table_id, str):
            return self.seq_floor(table_id)
        row = self._db.sql.execute(
            "SELECT MAX(CAST(value AS INTEGER)) FROM meta WHERE key LIKE 'seq\\_floor:%' ESCAPE '\\'"
        ).fetchone()
        return int(row[0]) if row and row[0] is not None else 0

    def last_seq(self, table_id: str | None = None) -> int:
        """The highest round ``seq`` the journal holds (of ``table_id``), 0 if none."""
        if table_id is None:
            row = self._db.sql.execute("SELECT COALESCE(MAX(seq), 0) FROM rounds").fetchone()
        else:
            row = self._db.sql.execute(
                "SELECT COALESCE(MAX(seq), 0) FROM rounds WHERE table_id = ?", (table_id,)
            ).fetchone()
        return int(row[0])

    def finished_between(
        self, table_id: str, after_seq: int, upto_seq: int, *, payloads: bool = False
    ) -> list[tuple[int, str, JSON]]:
        """``(seq, status, summary)`` of the finished rounds with ``after_seq < seq <=
        upto_seq``, in seq order (a shift's and a player session's rounds, issue 34);
        with ``payloads`` the published payload instead of the summary (None where it
        was pruned: older than ``full_rounds``)."""
        if payloads:
            sql = (
                "SELECT r.seq, r.status, s.payload FROM rounds r LEFT JOIN settlements s "
                "ON s.round_id = r.round_id WHERE r.table_id = ? AND r.seq > ? AND r.seq <= ? "
                "AND r.status IS NOT NULL ORDER BY r.seq"
            )
        else:
            sql = (
                "SELECT seq, status, summary FROM rounds WHERE table_id = ? AND seq > ? "
                "AND seq <= ? AND status IS NOT NULL ORDER BY seq"
            )
        rows = self._db.sql.execute(sql, (table_id, after_seq, upto_seq)).fetchall()
        return [(int(r[0]), str(r[1]), loads_or_none(r[2])) for r in rows]

    def anchor(self) -> dict[str, JSON] | None:
        """The latest round's chain position, as the retained ``anchor`` says it:
        ``{"round_id", "seq", "phase", "chain": {"seq", "head"}}``; None before any round.

        Always a durable position: round openings and finishes commit with a flush."""
        row = self._db.sql.execute(
            "SELECT id, hash, kind, data FROM events WHERE kind IN "
            "('round_opened', 'round_settled', 'round_void') ORDER BY id DESC LIMIT 1"
        ).fetchone()
        if row is None:
            return None
        data = json.loads(row[3])
        if data.get("withheld"):  # a round of the journal only; the floor holds further
            return None
        rid = data.get("round_id")
        seq = data.get("seq")
        if not isinstance(seq, int):  # a round_void entry written before the chain covered rounds
            found = self._db.sql.execute(
                "SELECT seq FROM rounds WHERE round_id = ?", (rid,)
            ).fetchone()
            seq = int(found[0]) if found else None
        table_id = data.get("table_id")
        if isinstance(seq, int) and seq <= self._floor_above(table_id):
            return None  # older than what the floor holds: never announced as the latest
        phase = {"round_settled": "settled", "round_void": "void"}.get(
            row[2], data.get("phase", "open")
        )
        return {
            "round_id": rid,
            "seq": seq,
            "phase": phase,
            "chain": {"seq": int(row[0]), "head": str(row[1])},
        }

    def in_flight(self, table_id: str | None = None) -> list[RoundRecord]:
        """Rounds neither settled nor voided, oldest first (what a restart must resolve)."""
        sql = f"SELECT {_ROUND_COLS} FROM rounds WHERE status IS NULL"
        args: tuple[str, ...] = ()
        if table_id is not None:
            sql += " AND +table_id = ?"  # through the index of rounds in flight
            args = (table_id,)
        return [_round(r) for r in self._db.sql.execute(sql + " ORDER BY id", args)]

    def settlement(self, round_id: str) -> JSON:
        """The published payload of a finished round (None if in flight or pruned)."""
        row = self._db.sql.execute(
            "SELECT payload FROM settlements WHERE round_id = ?", (round_id,)
        ).fetchone()
        return None if row is None else loads_or_none(row[0])

    def summary(
        self, limit: int = 100, *, before_seq: int | None = None, table_id: str | None = None
    ) -> list[RoundRecord]:
        """Round rows (kept forever) newest first; page with ``before_seq``."""
        sql = f"SELECT {_ROUND_COLS} FROM rounds WHERE 1 = 1"
        args: list[Any] = []
        if table_id is not None:
            sql += " AND table_id = ?"
            args.append(table_id)
        if before_seq is not None:
            sql += " AND seq < ?"
            args.append(before_seq)
        args.append(limit)
        return [_round(r) for r in self._db.sql.execute(sql + " ORDER BY id DESC LIMIT ?", args)]

    def replay_rounds(
        self, table_id: str, from_seq: int, to_seq: int | None = None, *, limit: int = 1000
    ) -> list[int]:
        """Queue the stored payloads of finished rounds ``from_seq..to_seq`` again, in seq order.

        For a floor system that found a gap in ``seq`` (a broker that lost messages it
        had acknowledged): the same bytes under the same ``round_id``, so it is just
        another duplicate for consumers that already have them. Rounds whose payload was
        pruned (older than ``full_rounds``) are skipped. Returns the new outbox ids.

        The floor's ``replay_rounds`` command (``table/floor.py``, issue 18) calls it.
        """
        return [oid for _seq, oid in self.replay_range(table_id, from_seq, to_seq, limit=limit)]

    def replay_range(
        self, table_id: str, from_seq: int, to_seq: int | None = None, *, limit: int = 1000
    ) -> list[tuple[int, int]]:
        """:meth:`replay_rounds`, returning ``(seq, outbox id)`` of each round queued: the
        ``replay_rounds`` command (``table/floor.py``) answers with the range it queued."""
        now = self._db.now()
        sql = (
            "SELECT r.seq, r.round_id, s.payload FROM rounds r "
            "JOIN settlements s ON s.round_id = r.round_id WHERE r.table_id = ? AND r.seq >= ? "
            f"AND s.outbox_id != {WITHHELD}"
        )
        args: list[Any] = [table_id, from_seq]
        if to_seq is not None:
            sql += " AND r.seq <= ?"
            args.append(to_seq)
        args.append(limit)
        with self._db.tx("replay_rounds") as db:
            rows = db.execute(sql + " ORDER BY r.seq LIMIT ?", args).fetchall()
            msgs = [
                OutboxMessage(ROUNDS_TOPIC, text.encode("utf-8"), 1, False, rid)
                for _seq, rid, text in rows
            ]
            ids = self._outbox.enqueue_in_tx(db, msgs, now)
        return [(int(row[0]), oid) for row, oid in zip(rows, ids, strict=True)]
