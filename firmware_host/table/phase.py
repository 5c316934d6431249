"""The phases of a round (what ``state`` publishes and the journal records)."""

from __future__ import annotations

import enum


class Phase(enum.StrEnum):
    """``open`` (betting open) -> ``closed`` (no more bets) -> ``settled``; or ``void``
    from either, every bet refunded. ``idle``: no round in flight.

    There is no phase between closed and settled: a result is settled in the same
    journal transaction that records it, so a journal never holds a round with a
    result and no settlement (a restart voids every unfinished round)."""

    OPEN = "open"
    CLOSED = "closed"
    SETTLED = "settled"
    VOID = "void"
    IDLE = "idle"  # no round in flight
