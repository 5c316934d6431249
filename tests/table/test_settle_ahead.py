"""Settlements computed ahead (``firmware_host/table/ahead.py``): while the ball spins the
bets are settled for every outcome; the result picks its own, and only when nothing it
was computed from has changed. What a round settles to never depends on it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from firmware_host.config import load_config
from firmware_host.games.base import DiscreteGame
from firmware_host.journal import Journal
from firmware_host.table.ahead import (
    AHEAD_BUDGET,
    FREE_CHUNK,
    Ahead,
    SettlementsAhead,
    loop_runner,
)
from firmware_host.table.engine import RoundEngine
from firmware_host.table.theo import with_theo
from tablesim.players import SimulatedPlayers

ROOT = Path(__file__).resolve().parents[2]
DISCRETE = ("roulette", "sicbo", "fantan", "fish-prawn-crab")


class Steps:
    """A runner the test drives: the steps it was given, run when the test says."""

    def __init__(self) -> None:
        self.given: list[Callable[[], bool]] = []

    def __call__(self, step: Callable[[], bool]) -> None:
        self.given.append(step)

    def run(self, limit: int | None = None) -> int:
        """Run the last step given until it says it is done (or ``limit`` times)."""
        n = 0
        while limit is None or n < limit:
            n += 1
            if not self.given[-1]():
                break
        return n


class CountingSettle:
    """The rules core's ``settle``, counted (the game's class method, wrapped)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, game: DiscreteGame[Any, Any]) -> None:
        self.calls: list[Any] = []
        original = type(game).settle

        def settle(g: Any, rules: Any, outcome: Any, bets: Any, money: Any) -> Any:
            self.calls.append(outcome)
            return original(g, rules, outcome, bets, money)

        monkeypatch.setattr(type(game), "settle", settle)


def engine(tmp_path: Path, game: str = "roulette") -> tuple[RoundEngine, Steps]:
    cfg = load_config(ROOT / "config" / f"{game}.toml")
    steps = Steps()
    e = RoundEngine(cfg, Journal(tmp_path / "j.sqlite3"), runner=steps)
    return e, steps


def bet(bet_id: str, bet_type: str, selection: object, stake: int) -> dict[str, Any]:
    return {"bet_id": bet_id, "seat": 1, "bet_type": bet_type, "selection": selection,
            "stake": stake}  # fmt: skip


@pytest.mark.parametrize("game_id", DISCRETE)
def test_every_outcome_settled_ahead_is_the_rules_cores_settlement_of_it(game_id: str) -> None:
    cfg = load_config(ROOT / "config" / f"{game_id}.toml")
    game, rules, money = cfg.game, cfg.rules, cfg.money
    raw = SimulatedPlayers(cfg, seed=7).many(AHEAD_BUDGET // len(game.outcome_space(rules)))
    bets = [game.parse_bet(rules, b, cfg.limits) for b in raw]
    ahead = SettlementsAhead.for_round(game, rules, money, "R1", bets)
    assert ahead is not None
    outcomes = [o for o, _p in game.outcome_space(rules)]
    steps = 1
    while ahead.step():
        steps += 1
    assert steps == len(outcomes) and ahead.step() is False  # nothing left
    for o in outcomes:
        got = ahead.take("R1", rules, money, bets, o)
        assert got is not None, o
        settlement, body = got
        direct = game.settle(rules, o, bets, money)
        assert settlement == direct and body == direct.to_json()
        assert ahead.take("R1", rules, money, bets, o) is None  # handed over once


def test_a_straight_up_settled_ahead_pays_35_to_1_on_its_number_only() -> None:
    # 60/2004 art. 7 1): a straight-up bet (pleno) is paid 35 to 1; art. 8: on zero
    # only a straight on 0 wins. Checked against the article's figure, not the code.
    cfg = load_config(ROOT / "config" / "roulette.toml")
    game, rules, money = cfg.game, cfg.rules, cfg.money
    bets = [game.parse_bet(rules, bet("a", "straight", [17], 2500), cfg.limits)]
    ahead = SettlementsAhead.for_round(game, rules, money, "R1", bets)
    assert ahead is not None
    while ahead.step():
        pass
    for number in range(37):
        got = ahead.take("R1", rules, money, bets, game.parse_outcome(rules, {"number": number}))
        assert got is not None
        [result] = got[1]["bets"]  # type: ignore[misc]
        assert result["net"] == (35 * 2500 if number == 17 else -2500), number


def direct_settlement(e: RoundEngine, raw: list[dict[str, Any]], outcome: Any) -> Any:
    """The rules core on the same bets and outcome, without the engine."""
    bets = [e.game.parse_bet(e.rules, b, e.cfg.limits) for b in raw]
    return e.game.settle(e.rules, e.game.parse_outcome(e.rules, outcome), bets, e.cfg.money)


def play(e: RoundEngine, raw: list[dict[str, Any]]) -> None:
    e.open_betting()
    for b in raw:
        assert e.desk.place(b).accepted
    e.close_betting()


@pytest.mark.parametrize(
    ("steps_run", "number", "settled_on_path"),
    [
        (None, 23, 0),  # every outcome settled ahead: the result takes its own
        (5, 30, 1),  # outcomes 0-4 settled ahead, the wheel says 30: settled on the path
    ],
)
def test_the_result_takes_its_settlement_from_ahead_or_settles_on_its_path(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    steps_run: int | None,
    number: int,
    settled_on_path: int,
) -> None:
    e, steps = engine(tmp_path)
    raw = SimulatedPlayers(e.cfg, seed=3).many(60)
    play(e, raw)
    assert len(steps.given) == 1 and steps.run(limit=steps_run) == (steps_run or 37)
    counted = CountingSettle(monkeypatch, e.game)
    payload = e.submit_result({"number": number})
    assert len(counted.calls) == settled_on_path
    monkeypatch.undo()
    direct = direct_settlement(e, raw, {"number": number}).to_json()
    direct = with_theo(e.game, e.rules, e.cfg.money, direct)  # as the payload builder adds them
    assert payload["bets"] == direct["bets"] and payload["totals"] == direct["totals"]
    # 23 and 30 are red on the standard single-zero wheel (60/2004 art. 1 4): red and black).
    assert payload["outcome"] == {"number": number, "colour": "red"}
    assert steps.given[-1]() is False  # the work ahead ended with the round


def test_a_bet_added_after_a_voided_throw_is_settled_never_missed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 57/2004 art. 3 3)-4): a throw voided (dice stacked or tilted), betting reopens and
    # new bets may be added. Settlements computed before must not be used for the result.
    e, steps = engine(tmp_path, "sicbo")
    first = [bet("a", "small", None, 5000)]
    play(e, first)
    steps.run()
    stale = steps.given[-1]
    e.reopen_betting("dice tilted")
    assert stale() is False  # stopped by the reopening
    assert e.desk.place(bet("b", "big", None, 5000)).accepted
    e.close_betting()  # a new round of work ahead, not run yet
    counted = CountingSettle(monkeypatch, e.game)
    payload = e.submit_result({"dice": [4, 5, 6]})
    assert len(counted.calls) == 1
    # 57/2004 art. 5 2), art. 6 2): "big" (total 11-17, no triple) pays 1 to 1; "small" loses.
    assert [(b["bet_id"], b["result"], b["net"]) for b in payload["bets"]] == [
        ("a", "lose", -5000),
        ("b", "win", 5000),
    ]


def test_settlements_ahead_are_taken_only_for_the_very_same_inputs() -> None:
    cfg = load_config(ROOT / "config" / "roulette.toml")
    game, rules, money = cfg.game, cfg.rules, cfg.money
    raw = [bet("a", "red", None, 5000), bet("b", "straight", [7], 2500)]
    bets = [game.parse_bet(rules, b, cfg.limits) for b in raw]
    ahead = SettlementsAhead.for_round(game, rules, money, "R1", bets)
    assert ahead is not None
    while ahead.step():
        pass
    seven = game.parse_outcome(rules, {"number": 7})
    copy = [bets[0], game.parse_bet(rules, raw[1], cfg.limits)]  # equal, not the same
    assert copy == bets
    other_rules = load_config(ROOT / "config" / "roulette.toml").rules
    assert ahead.take("R2", rules, money, bets, seven) is None  # another round
    assert ahead.take("R1", rules, money, copy, seven) is None  # a bet object replaced
    assert ahead.take("R1", rules, money, bets[:1], seven) is None  # a bet fewer
    assert ahead.take("R1", other_rules, money, bets, seven) is None  # rules reloaded
    assert ahead.take("R1", rules, money, bets, seven) is not None


def test_no_settlements_ahead_beyond_the_budget_or_without_bets_or_a_discrete_game(
    tmp_path: Path,
) -> None:
    cfg = load_config(ROOT / "config" / "roulette.toml")
    game, rules = cfg.game, cfg.rules
    per_outcome = AHEAD_BUDGET // 37
    raw = SimulatedPlayers(cfg, seed=5).many(per_outcome + 1)
    bets = [game.parse_bet(rules, b, cfg.limits) for b in raw]
    assert SettlementsAhead.for_round(game, rules, cfg.money, "R", bets) is None
    assert SettlementsAhead.for_round(game, rules, cfg.money, "R", bets[:per_outcome])
    assert SettlementsAhead.for_round(game, rules, cfg.money, "R", []) is None
    bac = load_config(ROOT / "config" / "baccarat.toml")
    assert SettlementsAhead.for_round(bac.game, bac.rules, bac.money, "R", bets) is None
    # A game that cannot be settled ahead: its bets are not even read at the close.
    read: list[int] = []
    runner = Steps()
    box = Ahead(runner)
    box.start(bac.game, bac.rules, bac.money, "R", lambda: read.append(1) or [])  # type: ignore[func-returns-value]
    assert read == [] and runner.given == []
    # The engine: no runner call for a round without bets.
    e, steps = engine(tmp_path)
    e.open_betting()
    e.close_betting()
    assert steps.given == []


def test_an_outcome_the_rules_core_refuses_ends_the_work_ahead_quietly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cfg = load_config(ROOT / "config" / "fantan.toml")
    game, rules, money = cfg.game, cfg.rules, cfg.money
    bets = [game.parse_bet(rules, b, cfg.limits) for b in SimulatedPlayers(cfg).many(5)]
    ahead = SettlementsAhead.for_round(game, rules, money, "R1", bets)
    assert ahead is not None
    original = type(game).settle
    outcomes = [o for o, _p in game.outcome_space(rules)]

    def settle(g: Any, r: Any, outcome: Any, b: Any, m: Any) -> Any:
        if outcome == outcomes[1]:
            raise ValueError("refused")
        return original(g, r, outcome, b, m)

    monkeypatch.setattr(type(game), "settle", settle)
    assert ahead.step() is True
    assert ahead.step() is False  # no exception escapes a step
    assert ahead.step() is False  # and nothing is left after it
    assert ahead.take("R1", rules, money, bets, outcomes[0]) is not None
    assert ahead.take("R1", rules, money, bets, outcomes[1]) is None


def test_the_loop_runner_serves_other_callbacks_between_two_steps() -> None:
    order: list[str] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()
        left = [3]

        def step() -> bool:
            order.append("step")
            left[0] -= 1
            return left[0] > 0

        loop_runner(loop.call_soon)(step)
        loop.call_soon(order.append, "io")  # as a serial line read arriving meanwhile
        for _ in range(5):
            await asyncio.sleep(0)

    asyncio.run(main())
    assert order == ["step", "io", "step", "step"]


def test_a_rounds_settlements_are_freed_at_the_next_close_a_few_outcomes_a_step(
    tmp_path: Path,
) -> None:
    """Freeing a round's settlements (37 outcomes x 60 bets here) costs milliseconds of
    CPU: not right after the result, while the round travels to the floor, but at the
    next close, a few outcomes per loop step (``Ahead.release``)."""
    import weakref

    e, steps = engine(tmp_path)
    play(e, SimulatedPlayers(e.cfg, seed=3).many(60))
    steps.run()
    first = e.ahead._round
    assert first is not None
    kept = weakref.ref(first)
    e.submit_result({"number": 23})
    del first
    assert len(steps.given) == 1  # nothing freed after the result: no step given
    assert kept() is not None and len(kept()._done) == 36  # the 36 outcomes not taken
    play(e, SimulatedPlayers(e.cfg, seed=4).many(60))  # the next round's close
    assert len(steps.given) == 3  # the freeing, then the next round's settlements
    free = steps.given[1]
    n = 0
    while free():
        n += 1
        assert len(kept()._done) == 36 - FREE_CHUNK * n  # a few outcomes a step
    assert len(kept()._done) == 0 and n + 1 == -(-36 // FREE_CHUNK)
    del free
    steps.given.clear()  # the loop's handle, gone once the step ended
    assert kept() is None
