"""What the table's pieces use of the journal: the parts each one writes through.

The round engine and the floor's requests each use several parts of the journal
(``firmware_host/journal/``); each takes an object with just those parts, typed by
the :class:`~typing.Protocol` below (``Journal`` is one, and so is a test's own
bundle), and keeps the parts, never the journal. A piece that uses one part takes
that part.
"""

from __future__ import annotations

from typing import Protocol

from ..journal import (
    AuditLog,
    BetStore,
    Database,
    FrameStore,
    JackpotStore,
    Outbox,
    RequestStore,
    RoundStore,
)
from .extension import RoundHistory


class RoundJournal(RoundHistory, Protocol):
    """The parts of the journal the round engine writes through: the database (its
    transactions and their hooks, the storage guard), the rounds, their bets, raw
    frames, the chain and the outbox; and the rounds' history (``recall``) the
    extensions rebuild from after a restart."""

    @property
    def db(self) -> Database: ...

    @property
    def rounds(self) -> RoundStore: ...

    @property
    def bets(self) -> BetStore: ...

    @property
    def frames(self) -> FrameStore: ...

    @property
    def chain(self) -> AuditLog: ...

    @property
    def outbox(self) -> Outbox: ...


class FloorJournal(Protocol):
    """The parts of the journal the floor's requests use: the database (one
    transaction for a change and its answer), the answers and approvals, the chain,
    the rounds (``replay_rounds``) and the jackpot's hits."""

    @property
    def db(self) -> Database: ...

    @property
    def requests(self) -> RequestStore: ...

    @property
    def chain(self) -> AuditLog: ...

    @property
    def rounds(self) -> RoundStore: ...

    @property
    def jackpot(self) -> JackpotStore: ...
