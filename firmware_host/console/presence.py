"""Who is logged in at the table's console now: the technicians present.

A console session tells :class:`OperatorPresence` when its operator logs in or out,
when it is used, and when it ends (the terminal closed). An operator counts as present
while logged in and active within the session's idle timeout (``[console]
session_timeout``): a session left logged in and idle stops counting when its login
would expire, without waiting for the next line typed. The table's switches ask it
whether an opening is attended (``firmware_host/integrity/switches.py``).
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["OperatorPresence"]


@dataclass
class _Seen:
    operator: str
    channel: str
    last: float
    timeout: float


class OperatorPresence:
    """The operators logged in at the console, per session (sessions are weakly held: a
    session dropped without an end counts no more)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._sessions: weakref.WeakKeyDictionary[object, _Seen] = weakref.WeakKeyDictionary()

    def logged_in(self, session: object, operator: str, channel: str, timeout: float) -> None:
        self._sessions[session] = _Seen(operator, channel, self.clock(), timeout)

    def active(self, session: object) -> None:
        """The session was used (a line typed): its login is fresh again."""
        seen = self._sessions.get(session)
        if seen is not None:
            seen.last = self.clock()

    def logged_out(self, session: object) -> None:
        """Logout, idle timeout, or the session's end."""
        self._sessions.pop(session, None)

    def present(self) -> list[str]:
        """``operator@channel`` of each operator present now, sorted."""
        now = self.clock()
        return sorted(
            f"{s.operator}@{s.channel}"
            for s in list(self._sessions.values())
            if now - s.last <= s.timeout
        )
