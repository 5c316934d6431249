"""The backlog's pace after a reconnection (issue 36): live rounds first, the backlog's
rounds beside them at a bounded rate.

After an outage of the floor every table holds the rounds it played meanwhile; were
each to publish them all at once on its return, a floor of 1,000 tables would put
33,000 rounds (ten minutes at 200 an hour) in the broker's queue to the ingest at
once, and the rounds played after the return would wait behind them there (MQTT
delivers in order, with no priority). So the table's link (``pump.py``) and the
emulated tables (``tablesim/emulator.py``) both publish what they made after the
connection came up (*live*) as soon as it is made, and what was waiting when it came
up, made before its last wait to reconnect (the *backlog*), at ``backlog_per_minute``
rounds a minute beside it: the floor's
aggregate backlog rate is bounded (1,000 tables at 60 a minute: 1,000 rounds a second,
below what one ingest commits on the benchmark's machine), and the backlog drains in
``backlog / rate`` (a ten-minute outage's 33 rounds in 33 s). A backlog of one window
(``max_inflight``) or less goes at once, as before: a short cut costs nothing. What was
made in the last ``recent_s`` before the connection came up (the reconnect backoff's
cap: rounds made after the floor returned, while the table waited for its next try)
is live too, and so is what was made after the last failed try to connect began
(``OutboxPump.down_at``: a broker taking a floor's tables back can take longer than the
cap to answer one): at the end of the backlog it would wait for all of it.

:class:`BacklogPace` is that policy, the same object in both places: the token bucket
(one round's worth: no burst on the return) and whether a connection's backlog is
paced at all."""

from __future__ import annotations

__all__ = ["BacklogPace"]


class BacklogPace:
    """Whether the backlog found on a connection is paced, and when its next round may go.

    ``per_minute``: rounds of the backlog a minute (0: never paced); ``unpaced``: a
    backlog of at most this many entries is not paced (the link's window); ``recent_s``:
    what was made this long before the connection came up is live (the reconnect
    backoff's cap). Times are the caller's monotonic seconds."""

    __slots__ = ("_at", "_tokens", "active", "per_minute", "recent_s", "unpaced")

    def __init__(self, per_minute: int, unpaced: int, recent_s: float = 0.0) -> None:
        if per_minute < 0 or unpaced < 0 or recent_s < 0:
            raise ValueError("per_minute, unpaced and recent_s must be >= 0")
        self.per_minute = per_minute
        self.unpaced = unpaced
        self.recent_s = recent_s
        #: Whether the current connection's backlog is being paced.
        self.active = False
        self._tokens = 0.0
        self._at = 0.0

    def begin(self, backlog: int, now: float) -> bool:
        """A connection came up with ``backlog`` entries waiting: whether they are paced
        (then the first round may go at once, the next ones at the pace)."""
        self.active = self.per_minute > 0 and backlog > self.unpaced
        self._tokens, self._at = 1.0, now
        return self.active

    def end(self) -> None:
        """The backlog is all handed over (or the connection ended)."""
        self.active = False

    def _refill(self, now: float) -> None:
        if now > self._at:
            self._tokens = min(1.0, self._tokens + (now - self._at) * self.per_minute / 60.0)
        self._at = max(self._at, now)

    def allowed(self, now: float) -> bool:
        """Whether a round of the backlog may go now (always, when not paced)."""
        if not self.active:
            return True
        self._refill(now)
        return self._tokens >= 1.0 - 1e-9

    def spend(self, now: float) -> None:
        """A round of the backlog was handed over."""
        if self.active:
            self._refill(now)
            self._tokens -= 1.0

    def wait(self, now: float) -> float:
        """Seconds until the backlog's next round may go (0: now, or not paced)."""
        if not self.active:
            return 0.0
        self._refill(now)
        missing = 1.0 - 1e-9 - self._tokens
        return max(0.0, missing * 60.0 / self.per_minute) if missing > 0 else 0.0
