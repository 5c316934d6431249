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

The bets' theoretical win (``table/theo.py``: each bet's exact edge, issue 34) does not
depend on the outcome: it is computed in the same time, a few bets with each outcome's
step (the same number of steps), or on its own steps when the settlements are beyond
:data:`AHEAD_BUDGET`; the result's payload takes it under the same checks.
"""

from __future__ import annotations

import logging
import math
from collections import deque
from collections.abc import Callable, Hashable, Sequence
from fractions import Fraction
from typing import Any

from ..games.base import Bet, DiscreteGame, Settlement
from ..games.money import MoneyRules
from ..jsonio import JSON
from .theo import BetTheo, Theo, bet_theo

log = logging.getLogger(__name__)

#: At most this many bet settlements (outcomes x bets) are computed ahead for a round:
#: 37 roulette outcomes x 200 bets, or 216 sic bo throws x 37 bets. Above it the result
#: settles on its path (the memory and CPU spent ahead grow with the product).
AHEAD_BUDGET = 7_500

#: The bets whose theoretical win a step computes when it settles no outcome (settlements
#: beyond :data:`AHEAD_BUDGET`).
THEO_CHUNK = 100

#: The outcomes whose settlements a step frees (:meth:`SettlementsAhead.free_step`):
#: about 0.2 ms of work for 100 bets.
FREE_CHUNK = 4

#: What runs the steps: called once with ``step``; calls ``step()`` again, one call per
#: event-loop iteration, until it returns False (the daemon's :func:`loop_runner`).
Runner = Callable[[Callable[[], bool]], None]


def same_inputs(
    have: tuple[str, Any, MoneyRules, tuple[Bet, ...]],
    round_id: str,
    rules: Any,
    money: MoneyRules,
    bets: Sequence[Bet],
) -> bool:
    """Whether the result's inputs are those the work ahead was computed from: the same
    round, the same rules and money objects, the same bet objects in the same order."""
    if round_id != have[0] or rules is not have[1] or money is not have[2]:
        return False
    mine = have[3]
    return len(bets) == len(mine) and all(a is b for a, b in zip(bets, mine, strict=True))


class TheoAhead:
    """The theoretical win of one round's bets (``table/theo.py``), computed a few bets
    per :meth:`step`; :meth:`take` finishes and hands it over."""

    def __init__(
        self, game: Any, rules: Any, money: MoneyRules, round_id: str, bets: Sequence[Bet]
    ) -> None:
        self.game = game
        self.inputs = (round_id, rules, money, tuple(bets))
        self._lines: list[BetTheo] = []
        self._total = Fraction(0)
        self._seen: dict[tuple[str, str, int], BetTheo] = {}
        self._failed = False
        self._cancelled = False

    def cancel(self) -> None:
        """Stop: nothing more is computed ahead (what :meth:`take` finishes aside)."""
        self._cancelled = True

    def step(self, count: int = THEO_CHUNK) -> bool:
        """Compute the next ``count`` bets'; whether any is left. A bet whose edge the
        rules core cannot give ends the work ahead (the payload computes it on the
        result's path, as without it)."""
        rid, rules, money, bets = self.inputs
        lines = self._lines
        if self._failed or self._cancelled:
            return False
        try:
            for bet in bets[len(lines) : len(lines) + count]:
                got = bet_theo(
                    self.game, rules, money, bet.bet_type, bet.selection, bet.stake,
                    seen=self._seen,
                )  # fmt: skip
                self._total += got[0]
                lines.append(got)
        except Exception:
            log.warning("round %s: theoretical win ahead stopped at bet %d", rid, len(lines))
            self._failed = True
            return False
        return len(lines) < len(bets)

    def take(
        self, round_id: str, rules: Any, money: MoneyRules, bets: Sequence[Bet]
    ) -> Theo | None:
        """The bets' theoretical win if computed from these very inputs (what is left of
        it computed now), else None (computed on the path)."""
        if not same_inputs(self.inputs, round_id, rules, money, bets):
            return None
        self._cancelled = False
        self.step(len(bets))
        if self._failed or len(self._lines) != len(bets):
            return None
        return Theo(tuple(b.bet_id for b in bets), tuple(self._lines), self._total)


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
        #: The bets' theoretical win, a share of them with each outcome.
        self.theo = TheoAhead(game, rules, money, round_id, bets)
        self._theo_share = math.ceil(len(self.bets) / max(1, len(outcomes)))

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

    def drop(self) -> None:
        """Stop and free what was computed at once (a round's settlements are thousands
        of objects: :meth:`Ahead.release` frees them a few per step instead)."""
        self.cancel()
        self._done.clear()
        self.theo.cancel()

    def free_step(self) -> bool:
        """Free the settlements of the next :data:`FREE_CHUNK` outcomes; whether any are
        left (a step of the runner, after :meth:`cancel`)."""
        done = self._done
        for _ in range(min(FREE_CHUNK, len(done))):
            done.popitem()
        return bool(done)

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
            self.theo.step(self._theo_share)
        return bool(self._todo)

    def take(
        self, round_id: str, rules: Any, money: MoneyRules, bets: Sequence[Bet], outcome: Any
    ) -> tuple[Settlement, dict[str, JSON]] | None:
        """The settlement of ``outcome`` and its JSON, if computed from these very
        inputs (same round, same rules and money objects, the same bet objects in the
        same order); else None (settle on the path). Each is handed over once."""
        if not same_inputs(self.theo.inputs, round_id, rules, money, bets):
            return None
        return self._done.pop(outcome, None)


class Ahead:
    """A table's settlements ahead: the round whose betting closed last, at most.
    Without a runner (outside the daemon) every result settles on its path."""

    def __init__(self, runner: Runner | None = None) -> None:
        """``runner``: runs the steps (the daemon's :func:`loop_runner`), or None."""
        self._runner = runner
        self._round: SettlementsAhead | None = None
        #: The last rounds', stopped: freed by :meth:`release` (the next close).
        self._spent: list[SettlementsAhead] = []
        #: The bets' theoretical win (the settlements' own, or alone beyond the budget).
        self._theo: TheoAhead | None = None

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
        self.release()
        if self._runner is None or not isinstance(game, DiscreteGame):
            return  # nothing to settle ahead: the bets are not even read
        try:
            placed = bets()
            ahead = SettlementsAhead.for_round(game, rules, money, round_id, placed)
        except Exception:  # betting is closed all the same: the result settles on its path
            log.exception("round %s: no settlements ahead", round_id)
            return
        if ahead is not None:
            self._round, self._theo = ahead, ahead.theo
            self._runner(ahead.step)
        elif placed:  # beyond the budget: the theoretical win alone (it grows with the bets)
            self._theo = TheoAhead(game, rules, money, round_id, placed)
            self._runner(self._theo.step)

    def stop(self) -> None:
        """The round settled, was voided or went back to betting."""
        if self._round is not None:
            self._round.cancel()
            self._spent.append(self._round)
            self._round = None
        if self._theo is not None:
            self._theo.cancel()
            self._theo = None

    def settle(
        self,
        game: Any,
        rules: Any,
        money: MoneyRules,
        round_id: str,
        outcome: Any,
        bets: Sequence[Bet],
    ) -> tuple[Settlement, dict[str, JSON], Theo | None]:
        """The rules core's settlement of ``bets`` for ``outcome`` and its JSON: the one
        computed ahead when its inputs are unchanged, else computed now; and the bets'
        theoretical win computed ahead from the same inputs (``with_theo``'s ``known``),
        or None."""
        ahead, self._round = self._round, None
        theo_ahead, self._theo = self._theo, None
        theo = None if theo_ahead is None else theo_ahead.take(round_id, rules, money, bets)
        if ahead is not None:
            ahead.cancel()
            done = ahead.take(round_id, rules, money, bets, outcome)
            self._spent.append(ahead)  # freed by release(): the next close
            if done is not None:
                return (*done, theo)
        settlement: Settlement = game.settle(rules, outcome, bets, money)
        return settlement, settlement.to_json(), theo

    def release(self) -> None:
        """Free the settlements of the rounds that ended (result taken, voided or
        reopened): :meth:`start` calls it, at the next close, while the ball spins. With
        a runner they are freed a few outcomes per loop step (:data:`FREE_CHUNK`).

        Not right after the publication: freeing one round's settlements takes 1.5-4 ms
        of CPU (37 outcomes x 100 bets), and run while the round travelled from the
        broker to the floor it took a core from them on a two-core machine: the
        result -> floor p99 grew from 4.3-4.5 to 6.8-7.1 ms (``python -m bench.stages``,
        docs/performance.md)."""
        spent, self._spent = self._spent, []
        for ahead in spent:  # each stopped already (stop, settle)
            if self._runner is None:
                ahead.drop()
            else:
                self._runner(ahead.free_step)


def loop_runner(call_soon: Callable[[Callable[[], None]], Any]) -> Runner:
    """A :data:`Runner` on an event loop: one step per ``call_soon`` (the loop's), so
    that I/O (the wheel's serial line, MQTT) is served between any two steps. Nothing
    but the loop's handle refers to the steps: once they end, what they computed is
    freed at once (a closure calling itself would be a reference cycle, left with a
    round's settlements for the cyclic collector: a full collection of 15-30 ms, which
    landed on the result's path)."""

    def run(step: Callable[[], bool]) -> None:
        call_soon(_Ticks(step, call_soon))

    return run


class _Ticks:
    """``step`` once per loop iteration until it says it is done."""

    __slots__ = ("call_soon", "step")

    def __init__(self, step: Callable[[], bool], call_soon: Callable[[Callable[[], None]], Any]):
        self.step = step
        self.call_soon = call_soon

    def __call__(self) -> None:
        if self.step():
            self.call_soon(self)
