"""Wrong-PIN lockout (journaled, survives a restart) and dual control (one operator
asks, another approves)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..jsonio import JSON


class Lockout:
    """Wrong-PIN counter shared by every session of one console (serial and socket).

    A lockout's end is also kept as wall-clock time (:attr:`until_wall`): the console
    journals it, and :func:`restore_lockout` puts it back after a restart."""

    def __init__(
        self,
        max_tries: int,
        seconds: int,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.max_tries = max_tries
        self.seconds = seconds
        self.clock = clock
        self.wall = wall
        self.failures = 0
        self.until = 0.0

    def configure(self, max_tries: int, seconds: int) -> None:
        """A reload's new limits; a lockout in progress runs to its end."""
        self.max_tries = max_tries
        self.seconds = seconds

    def locked(self) -> float:
        """Seconds left of a lockout (0 when not locked)."""
        return max(0.0, self.until - self.clock())

    @property
    def until_wall(self) -> float:
        """The lockout's end, seconds since the epoch (0 when not locked)."""
        left = self.locked()
        return self.wall() + left if left else 0.0

    def lock_for(self, seconds: float) -> None:
        self.until = max(self.until, self.clock() + seconds)

    def fail(self) -> bool:
        """Count a failure; True when it locks the console."""
        self.failures += 1
        if self.failures >= self.max_tries:
            self.lock_for(self.seconds)
            self.failures = 0
            return True
        return False

    def success(self) -> None:
        self.failures = 0


class LockoutJournal(Protocol):
    def events(self, limit: int = ..., *, kind: str | None = ...) -> Sequence[Any]: ...


#: The audit log's kinds of the console's lockout: a success, a lockout, a failure.
CONSOLE_KINDS = ("console_login", "console_lockout", "console_login_failed")


def restore_lockout(
    lockout: Lockout, journal: LockoutJournal, *, kinds: tuple[str, str, str] = CONSOLE_KINDS
) -> float:
    """After a restart: a lockout journaled (``console_lockout`` with its ``until``) that
    has not ended yet locks the console again for what is left of it. Returns the
    seconds left (0: none). ``kinds``: the success, lockout and failure events (the
    keypad's sign-in has its own)."""
    _restore_failures(lockout, journal, kinds)
    last = journal.events(1, kind=kinds[1])
    if not last:
        return 0.0
    until = last[-1].data.get("until_epoch")
    if not isinstance(until, (int, float)):
        return 0.0
    left = float(until) - lockout.wall()
    if left <= 0:
        return 0.0
    lockout.lock_for(min(left, float(lockout.seconds)))
    return lockout.locked()


def _restore_failures(
    lockout: Lockout, journal: LockoutJournal, kinds: tuple[str, str, str]
) -> None:
    """The wrong PINs since the last login or lockout count again after a restart (a
    restart between tries does not give a guesser a fresh count)."""
    n = 0
    for ev in reversed(journal.events(500)):
        if ev.kind in kinds[:2]:
            break
        if ev.kind == kinds[2]:
            n += 1
    lockout.failures = min(n, max(lockout.max_tries - 1, 0))


@dataclass
class PendingRequest:
    """A dual-control request waiting for a second operator."""

    id: int
    command: str
    args: str
    by: str
    at: float
    run: Callable[[str], JSON]  # called with the approver's name


class DualControl:
    """Requests that need two different operators (shared by every session). A request
    expires after :attr:`ttl` seconds; each is journaled when asked, approved or expired."""

    def __init__(self, ttl: float = 600.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl = ttl
        self.clock = clock
        self._next = 1
        self._pending: dict[int, PendingRequest] = {}

    def ask(self, command: str, args: str, by: str, run: Callable[[str], JSON]) -> PendingRequest:
        req = PendingRequest(self._next, command, args, by, self.clock(), run)
        self._next += 1
        self._pending[req.id] = req
        return req

    def expire(self) -> list[PendingRequest]:
        now = self.clock()
        gone = [r for r in self._pending.values() if now - r.at > self.ttl]
        for r in gone:
            del self._pending[r.id]
        return gone

    def pending(self) -> list[PendingRequest]:
        self.expire()
        return sorted(self._pending.values(), key=lambda r: r.id)

    def take(self, rid: int) -> PendingRequest | None:
        self.expire()
        return self._pending.pop(rid, None)

    def put_back(self, req: PendingRequest) -> None:
        self._pending[req.id] = req
