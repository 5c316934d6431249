"""The budgets of ``replay_rounds`` (``table/floor.py``): per request and per principal
a minute, so that a repair loop gone wrong, or a hostile principal, never buries the
live rounds under replays nor uses up another principal's repairs (issue 28)."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

#: ``replay_rounds``: the most rounds one request queues (the answer says where it
#: stopped: ask again from ``last_seq + 1``), and the rounds a table queues again in a
#: minute for one principal: a repair loop gone wrong, or a hostile principal, can
#: never bury the live rounds under replays (they share the outbox, in order), nor use
#: up another principal's repairs. The principals allowed ``replay_rounds`` are few
#: and named in the configuration, which bounds the total.
REPLAY_MAX_ROUNDS = 500
REPLAY_ROUNDS_PER_MINUTE = 2000
REPLAY_WINDOW_S = 60.0


class ReplayLimit:
    """A sliding one-minute budget of replayed rounds (``replay_rounds``)."""

    def __init__(
        self,
        per_window: int = REPLAY_ROUNDS_PER_MINUTE,
        window_s: float = REPLAY_WINDOW_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.per_window = per_window
        self.window_s = window_s
        self.clock = clock
        self._spent: deque[tuple[float, int]] = deque()

    def _trim(self) -> int:
        now = self.clock()
        while self._spent and now - self._spent[0][0] >= self.window_s:
            self._spent.popleft()
        return sum(n for _, n in self._spent)

    def available(self) -> int:
        """Rounds that may be queued now."""
        return max(0, self.per_window - self._trim())

    def retry_after(self) -> float:
        """Seconds until some budget is free again."""
        self._trim()
        if not self._spent:
            return 0.0
        return max(0.0, self._spent[0][0] + self.window_s - self.clock())

    def spend(self, n: int) -> None:
        if n > 0:
            self._spent.append((self.clock(), n))


class ReplayBudgets:
    """One :class:`ReplayLimit` per principal (issue 28: a point-of-sale principal that
    spends its minute's budget leaves the floor ingest's intact)."""

    def __init__(
        self,
        per_window: int = REPLAY_ROUNDS_PER_MINUTE,
        window_s: float = REPLAY_WINDOW_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.per_window, self.window_s, self.clock = per_window, window_s, clock
        self._by_principal: dict[str, ReplayLimit] = {}

    def of(self, principal: str) -> ReplayLimit:
        """``principal``'s budget (a principal's name is from the configuration or, on
        a table without signatures, claimed: bounded by the names a request can carry,
        and a budget left untouched for a window is forgotten)."""
        limit = self._by_principal.get(principal)
        if limit is None:
            if len(self._by_principal) >= 1000:  # forget the idle ones
                for name, old in list(self._by_principal.items()):
                    if old.available() == old.per_window:
                        del self._by_principal[name]
            limit = self._by_principal[principal] = ReplayLimit(
                self.per_window, self.window_s, self.clock
            )
        return limit
