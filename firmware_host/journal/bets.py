"""Bets: each placed or cancelled bet of a round, idempotent by its ``bet_id``.

A bet is recorded only while its round is unfinished and, when the caller says so,
in a phase that takes bets; the check and the write are one transaction, so a bet
can never slip in after the round was closed or settled. Placing and cancelling each
append their entry to the audit chain (``bet_placed``, ``bet_cancelled``) in that
same transaction.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from ..games.base import Bet
from ..jsonio import JSON, canonical_json
from .chain import AuditLog
from .database import Database
from .errors import BetConflict, BetNotFound, PhaseNotAllowed
from .outbox import Outbox, OutboxMessage
from .rounds import RoundStore
from .storage import loads_or_none


@dataclass(frozen=True, slots=True)
class BetRecord:
    round_id: str
    bet_id: str
    seat: int
    bet_type: str
    selection: JSON
    stake: int
    status: Literal["placed", "cancelled"]
    placed_at: str
    cancelled_at: str | None
    #: Who placed it (the verified principal of the request; None: not from the floor).
    principal: str | None = None

    def content(self) -> tuple[int, str, str, int]:
        return (self.seat, self.bet_type, canonical_json(self.selection), self.stake)

    def to_bet(self) -> Bet:
        """The rules core's :class:`~firmware_host.games.base.Bet`."""
        return Bet(self.bet_id, self.seat, self.bet_type, self.selection, self.stake)

    def to_json(self) -> dict[str, JSON]:
        return {
            "bet_id": self.bet_id,
            "seat": self.seat,
            "bet_type": self.bet_type,
            "selection": self.selection,
            "stake": self.stake,
            "status": self.status,
            "placed_at": self.placed_at,
            "cancelled_at": self.cancelled_at,
            "principal": self.principal,
        }


_BET_COLS = (
    "round_id, bet_id, seat, bet_type, selection, stake, status, placed_at, cancelled_at, principal"
)


def _bet(row: sqlite3.Row) -> BetRecord:
    return BetRecord(
        row[0], row[1], row[2], row[3], loads_or_none(row[4]), row[5], row[6], row[7], row[8],
        row[9],
    )  # fmt: skip


class BetStore:
    """Place, cancel and read the bets of a round."""

    def __init__(
        self, db: Database, *, chain: AuditLog, outbox: Outbox, rounds: RoundStore
    ) -> None:
        self._db = db
        self._chain = chain
        self._outbox = outbox
        self._rounds = rounds

    def place_bet(
        self,
        round_id: str,
        bet: Bet | Mapping[str, JSON],
        *,
        phases: Iterable[str] | None = None,
        at: datetime | None = None,
        outbox: Sequence[OutboxMessage] = (),
        principal: str | None = None,
    ) -> tuple[BetRecord, bool]:
        """Record a bet (a rules-core ``Bet`` or a mapping with its five fields).

        Idempotent by ``bet_id``: the same id with the same content returns the
        existing record and ``False`` (nothing written, ``outbox`` not queued); the
        same id with different content raises :class:`BetConflict`. Returns
        ``(record, created)``. ``phases``, when given, are the phases in which the
        round accepts bets (checked in the same transaction: :class:`PhaseNotAllowed`).
        ``principal``: who placed it (only they may cancel it).
        """
        if isinstance(bet, Mapping):
            bet_id, seat, bet_type = bet["bet_id"], bet.get("seat", 0), bet["bet_type"]
            selection, stake = bet.get("selection"), bet["stake"]
        else:
            bet_id, seat, bet_type, selection, stake = (
                bet.bet_id,
                bet.seat,
                bet.bet_type,
                bet.selection,
                bet.stake,
            )
        if not isinstance(bet_id, str) or not bet_id:
            raise ValueError("a journaled bet needs a non-empty bet_id")
        if isinstance(stake, bool) or not isinstance(stake, int) or stake <= 0:
            raise ValueError(f"stake must be a positive integer, got {stake!r}")
        if isinstance(seat, bool) or not isinstance(seat, int):
            raise ValueError(f"seat must be an integer, got {seat!r}")
        sel = canonical_json(selection)
        now = self._db.now(at)
        with self._db.tx("place_bet") as db:
            row = db.execute(
                f"SELECT {_BET_COLS} FROM bets WHERE round_id = ? AND bet_id = ?",
                (round_id, bet_id),
            ).fetchone()
            if row is not None:
                existing = _bet(row)
                if existing.content() != (seat, bet_type, sel, stake):
                    raise BetConflict(
                        f"bet id {bet_id!r} is already used in round {round_id} by "
                        f"{existing.bet_type} {canonical_json(existing.selection)} "
                        f"stake {existing.stake}"
                    )
                return existing, False
            rnd = self._rounds.unfinished_in_tx(db, round_id, "take bets")
            if phases is not None and rnd.phase not in set(phases):
                raise PhaseNotAllowed(
                    f"round {round_id} is in phase {rnd.phase!r}: bets are not accepted"
                )
            db.execute(
                "INSERT INTO bets (round_id, bet_id, seat, bet_type, selection, stake, status, "
                "placed_at, principal) VALUES (?, ?, ?, ?, ?, ?, 'placed', ?, ?)",
                (round_id, bet_id, seat, bet_type, sel, stake, now, principal),
            )
            self._chain.append_in_tx(
                db,
                "bet_placed",
                {
                    "round_id": round_id,
                    "bet_id": bet_id,
                    "seat": seat,
                    "bet_type": bet_type,
                    "selection": json.loads(sel),
                    "stake": stake,
                    "principal": principal,
                },
                now,
            )
            self._outbox.enqueue_in_tx(db, outbox, now)
            return BetRecord(
                round_id, bet_id, seat, bet_type, json.loads(sel), stake, "placed", now, None,
                principal,
            ), True  # fmt: skip

    def cancel_bet(
        self,
        round_id: str,
        bet_id: str,
        *,
        phases: Iterable[str] | None = None,
        at: datetime | None = None,
        outbox: Sequence[OutboxMessage] = (),
    ) -> tuple[BetRecord, bool]:
        """Cancel a bet; idempotent (cancelling a cancelled bet returns it and ``False``)."""
        now = self._db.now(at)
        with self._db.tx("cancel_bet") as db:
            row = db.execute(
                f"SELECT {_BET_COLS} FROM bets WHERE round_id = ? AND bet_id = ?",
                (round_id, bet_id),
            ).fetchone()
            if row is None:
                raise BetNotFound(f"no bet {bet_id!r} in round {round_id}")
            existing = _bet(row)
            if existing.status == "cancelled":
                return existing, False
            rnd = self._rounds.unfinished_in_tx(db, round_id, "cancel bets")
            if phases is not None and rnd.phase not in set(phases):
                raise PhaseNotAllowed(
                    f"round {round_id} is in phase {rnd.phase!r}: bets cannot be cancelled"
                )
            db.execute(
                "UPDATE bets SET status = 'cancelled', cancelled_at = ? "
                "WHERE round_id = ? AND bet_id = ?",
                (now, round_id, bet_id),
            )
            self._chain.append_in_tx(
                db, "bet_cancelled", {"round_id": round_id, "bet_id": bet_id}, now
            )
            self._outbox.enqueue_in_tx(db, outbox, now)
            row = db.execute(
                f"SELECT {_BET_COLS} FROM bets WHERE round_id = ? AND bet_id = ?",
                (round_id, bet_id),
            ).fetchone()
            return _bet(row), True

    def bet(self, round_id: str, bet_id: str) -> BetRecord | None:
        """One bet of a round (placed or cancelled), or None (unknown, or pruned)."""
        row = self._db.sql.execute(
            f"SELECT {_BET_COLS} FROM bets WHERE round_id = ? AND bet_id = ?",
            (round_id, bet_id),
        ).fetchone()
        return None if row is None else _bet(row)

    def bets(self, round_id: str, *, include_cancelled: bool = True) -> list[BetRecord]:
        """A round's bets in the order they were placed."""
        sql = f"SELECT {_BET_COLS} FROM bets WHERE round_id = ?"
        if not include_cancelled:
            sql += " AND status = 'placed'"
        return [_bet(r) for r in self._db.sql.execute(sql + " ORDER BY id", (round_id,))]
