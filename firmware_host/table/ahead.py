"""Settlements computed ahead: while the ball spins, every possible result is settled.

Between "no more bets" and the result a roulette wheel spins for seconds; the bets are
fixed. For a game decided by one outcome from a small finite set (``DiscreteGame``:
roulette, sic bo, fantan, fish-prawn-crab) the table settles the round's bets for each
outcome of :meth:`~firmware_host.games.base.DiscreteGame.outcome_space` in that time, one
outcome per event-loop step, so that the result only has to pick its settlement: the
rules core's work (and its JSON) leaves the result's path (issue 20).

Nothing here changes what a round settles to. The rules core is pure, so the settlement
computed ahead for outcome ``o`` is the one ``game.settle`` would return for ``o``; it is
used only when the result's inputs are *the same objects* it was computed from (the
round, the rules, the money rules, every bet in order), checked when the result comes.
Any change in between (a bet added after a voided throw, a reload, a restart, a result
that comes before its outcome was reached) and the result is settled on its path as
before. A game with a jackpot (whose settle has state) is never settled ahead.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from ..games.base import Bet, DiscreteGame, Settlement
from ..games.money import MoneyRules
from ..jsonio import JSON

log = logging.getLogger(__name__)

#: At most this many bet settlements (outcomes x bets) are computed ahead for a round:
#: 37 roulette outcomes x 200 bets, or 216 sic bo throws x 37 bets. Above it the result
#: settles on its path (the memory and CPU spent ahead grow with the product).
AHEAD_BUDGET = 7_500

#: What runs the steps: called once with ``step``; calls ``step()`` again, one call per
#: event-loop iteration, until it returns False (the daemon's :func:`loop_runner`).
Runner = Callable[[Callable[[], bool]], None]


class SettlementsAhead:
    """The settlements of one round's bets for every outcome of its game, filled one
    outcome per :meth:`step`; :meth:`take` hands the result's one over."""

    def __init__(
        self,
        game: DiscreteGame[Any, Any],
        rules: Any,
        money: MoneyRules,
        round_id: str,
        bets: Sequence[Bet],
        outcomes: Sequence[Hashable],
    ) -> None:
        self.game = game
        self.rules = rules
        self.money = money
        self.round_id = round_id
        self.bets = tuple(bets)
        self._todo: deque[Hashable] = deque(outcomes)
        self._done: dict[Hashable, tuple[Settlement, dict[str, JSON]]] = {}

    @classmethod
    def for_round(
        cls, game: Any, rules: Any, money: MoneyRules, round_id: str, bets: Sequence[Bet]
    ) -> SettlementsAhead | None:
        """Settlements ahead for this round, or None when its game cannot have them
        (not a ``DiscreteGame``, or beyond :data:`AHEAD_BUDGET`)."""
        if not isinstance(game, DiscreteGame) or not bets:
            return None
        outcomes = [o for o, _p in game.outcome_space(rules)]
        if len(outcomes) * len(bets) > AHEAD_BUDGET:
            return None
        return cls(game, rules, money, round_id, bets, outcomes)

    def cancel(self) -> None:
        """Stop: the round settled, was voided or went back to betting."""
        self._todo.clear()

    def step(self) -> bool:
        """Settle the next outcome; whether any is left. An outcome the rules core
        refuses ends the work ahead (that result, if it comes, is settled and refused
        on its path, as without it)."""
        if self._todo:
            outcome = self._todo.popleft()
            try:
                settlement = self.game.settle(self.rules, outcome, self.bets, self.money)
            except Exception:
                log.warning("round %s: settling ahead stopped at %r", self.round_id, outcome)
                self.cancel()
                return False
            self._done[outcome] = (settlement, settlement.to_json())
        return bool(self._todo)

    def take(
        self, round_id: str, rules: Any, money: MoneyRules, bets: Sequence[Bet], outcome: Any
    ) -> tuple[Settlement, dict[str, JSON]] | None:
        """The settlement of ``outcome`` and its JSON, if computed from these very
        inputs (same round, same rules and money objects, the same bet objects in the
        same order); else None (settle on the path). Each is handed over once."""
        if round_id != self.round_id or rules is not self.rules or money is not self.money:
            return None
        if len(bets) != len(self.bets) or any(
            a is not b for a, b in zip(bets, self.bets, strict=True)
        ):
            return None
        return self._done.pop(outcome, None)


class Ahead:
    """A table's settlements ahead: the round whose betting closed last, at most.
    Without a runner (outside the daemon) every result settles on its path."""

    def __init__(self, runner: Runner | None = None) -> None:
        """``runner``: runs the steps (the daemon's :func:`loop_runner`), or None."""
        self._runner = runner
        self._round: SettlementsAhead | None = None

    @property
    def runner(self) -> Runner | None:
        """What runs the steps, given to the constructor (None: nothing runs ahead)."""
        return self._runner

    def start(
        self,
        game: Any,
        rules: Any,
        money: MoneyRules,
        round_id: str,
        bets: Callable[[], Sequence[Bet]],
    ) -> None:
        """Betting closed on ``round_id``: settle ``bets()`` for every outcome, one per
        step, while the result is awaited (when the game allows it)."""
        self.stop()
        if self._runner is None or not isinstance(game, DiscreteGame):
            return  # nothing to settle ahead: the bets are not even read
        try:
            ahead = SettlementsAhead.for_round(game, rules, money, round_id, bets())
        except Exception:  # betting is closed all the same: the result settles on its path
            log.exception("round %s: no settlements ahead", round_id)
            return
        if ahead is not None:
            self._round = ahead
            self._runner(ahead.step)

    def stop(self) -> None:
        """The round settled, was voided or went back to betting."""
        if self._round is not None:
            self._round.cancel()
            self._round = None

    def settle(
        self,
        game: Any,
        rules: Any,
        money: MoneyRules,
        round_id: str,
        outcome: Any,
        bets: Sequence[Bet],
    ) -> tuple[Settlement, dict[str, JSON]]:
        """The rules core's settlement of ``bets`` for ``outcome`` and its JSON: the one
        computed ahead when its inputs are unchanged, else computed now."""
        ahead, self._round = self._round, None
        if ahead is not None:
            ahead.cancel()
            done = ahead.take(round_id, rules, money, bets, outcome)
            if done is not None:
                return done
        settlement: Settlement = game.settle(rules, outcome, bets, money)
        return settlement, settlement.to_json()


def loop_runner(call_soon: Callable[[Callable[[], None]], Any]) -> Runner:
    """A :data:`Runner` on an event loop: one step per ``call_soon`` (the loop's), so
    that I/O (the wheel's serial line, MQTT) is served between any two steps."""

    def run(step: Callable[[], bool]) -> None:
        def tick() -> None:
            if step():
                call_soon(tick)

        call_soon(tick)

    return run
