"""What the round engine and the bet desk raise for an input that does not fit the round
in flight, and the one way a journal write's storage fault becomes such a refusal."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from ..games.errors import RulesError
from ..journal import StorageError


class RoundFault(RulesError):
    """An input that does not fit the round's state (a result while betting is open,
    a bet after close). Raised to the caller, published as a fault event, never settled."""

    code = "ROUND_FAULT"


class StaleRound(RoundFault):
    """A command or bet names a round that is not the one in progress (a retry that
    arrives after its round ended must never act on the next one). ``current`` is the
    round in progress (None: none); the answer names it."""

    code = "STALE_ROUND"

    def __init__(self, message: str, current: str | None) -> None:
        super().__init__(message)
        self.current = current


@contextlib.contextmanager
def writing() -> Iterator[None]:
    """A journal write that a storage fault refuses as a :class:`RoundFault` with the
    fault's code (nothing was committed; the guard logged it once)."""
    try:
        yield
    except StorageError as exc:
        raise RoundFault(exc.message, code=exc.code) from None
