"""The theoretical win computed while the ball spins (``firmware_host/table/ahead.py``,
``table/theo.py``): the result's payload takes each bet's edge and theoretical win
computed ahead, only for the very same bets, and what was computed ahead is freed by
reference counting (never left to the cyclic collector, whose full collections landed
on the result's path)."""

from __future__ import annotations

import asyncio
import gc
import weakref
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from firmware_host.config import load_config
from firmware_host.journal import Journal
from firmware_host.table.ahead import AHEAD_BUDGET, Ahead, TheoAhead, loop_runner
from firmware_host.table.engine import RoundEngine
from firmware_host.table.theo import Theo, with_theo
from tablesim.players import SimulatedPlayers

ROOT = Path(__file__).resolve().parents[2]


class Steps:
    """A runner the test drives (as in test_settle_ahead.py)."""

    def __init__(self) -> None:
        self.given: list[Any] = []

    def __call__(self, step: Any) -> None:
        self.given.append(step)

    def run_all(self) -> None:
        for step in list(self.given):
            while step():
                pass


class CountingEdges:
    """The rules core's ``bet_edge``, counted (the game's class method, wrapped)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, game: Any) -> None:
        self.calls = 0
        original = type(game).bet_edge

        def bet_edge(g: Any, *args: Any, **kw: Any) -> Any:
            self.calls += 1
            return original(g, *args, **kw)

        monkeypatch.setattr(type(game), "bet_edge", bet_edge)


def bet(bet_id: str, bet_type: str, selection: object, stake: int) -> dict[str, Any]:
    return {"bet_id": bet_id, "seat": 1, "bet_type": bet_type, "selection": selection,
            "stake": stake}  # fmt: skip


def engine(tmp_path: Path, game: str = "roulette") -> tuple[RoundEngine, Steps]:
    cfg = load_config(ROOT / "config" / f"{game}.toml")
    steps = Steps()
    return RoundEngine(cfg, Journal(tmp_path / "j.sqlite3"), runner=steps), steps


def play(e: RoundEngine, raw: list[dict[str, Any]]) -> None:
    e.open_betting()
    for b in raw:
        assert e.desk.place(b).accepted
    e.close_betting()


@pytest.mark.parametrize("n_bets", [60, AHEAD_BUDGET // 37 + 1])
def test_the_payload_takes_the_theoretical_win_computed_while_the_ball_spun(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, n_bets: int
) -> None:
    # 60 bets: computed with the settlements; above the budget: on its own steps.
    e, steps = engine(tmp_path)
    straight = bet("s17", "straight", [17], 3700)
    raw = [straight, *SimulatedPlayers(e.cfg, seed=11).many(n_bets - 1)]
    play(e, raw)
    steps.run_all()
    counted = CountingEdges(monkeypatch, e.game)
    payload = e.submit_result({"number": 17})
    assert counted.calls == 0  # nothing of it computed on the result's path
    monkeypatch.undo()
    # 60/2004 art. 7 1): a straight-up bet pays 35 to 1 on one of 37 numbers, so the
    # house keeps 1/37 of the stake on average: 3700 * 1/37 = 100 minor units.
    line = payload["bets"][0]  # type: ignore[index]
    assert line["bet_id"] == "s17"
    assert (line["edge"], line["theo_exact"], line["theo"]) == ("1/37", "100", 100)
    # every line and the totals as computed on the path, without anything ahead
    bets = [e.game.parse_bet(e.rules, b, e.cfg.limits) for b in raw]
    direct = e.game.settle(e.rules, e.game.parse_outcome(e.rules, {"number": 17}), bets,
                           e.cfg.money).to_json()  # fmt: skip
    direct = with_theo(e.game, e.rules, e.cfg.money, direct)
    assert payload["bets"] == direct["bets"] and payload["totals"] == direct["totals"]
    assert payload["theo_basis"] == "exact"


def test_a_bet_added_after_a_voided_throw_gets_its_theoretical_win_on_the_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 57/2004 art. 3 3)-4): betting reopens after a voided throw and bets may be added;
    # what was computed ahead for the earlier bets must not be used for the result.
    e, steps = engine(tmp_path, "sicbo")
    play(e, [bet("a", "small", None, 7200)])
    steps.run_all()
    e.reopen_betting("dice tilted")
    assert e.desk.place(bet("b", "big", None, 10800)).accepted
    e.close_betting()  # its work ahead not run
    counted = CountingEdges(monkeypatch, e.game)
    payload = e.submit_result({"dice": [4, 5, 6]})
    assert counted.calls == 2  # both bets' edges computed on the path
    # 57/2004 art. 6: big and small pay 1 to 1 and lose on any triple; each wins on
    # 105 of the 216 throws, so the house keeps (111 - 105) / 216 = 1/36 of the stake.
    got = [(b["bet_id"], b["edge"], b["theo"]) for b in payload["bets"]]  # type: ignore[index,union-attr]
    assert got == [("a", "1/36", 200), ("b", "1/36", 300)]
    assert payload["totals"]["theo_exact"] == "500"  # type: ignore[index,call-overload]


def test_theo_ahead_is_taken_only_for_the_very_same_inputs_and_checked_by_bet_id() -> None:
    cfg = load_config(ROOT / "config" / "roulette.toml")
    game, rules, money = cfg.game, cfg.rules, cfg.money
    raw = [bet("a", "red", None, 5000), bet("b", "straight", [7], 3700)]
    bets = [game.parse_bet(rules, b, cfg.limits) for b in raw]
    copy = [bets[0], game.parse_bet(rules, raw[1], cfg.limits)]  # equal, not the same
    assert TheoAhead(game, rules, money, "R1", bets).take("R2", rules, money, bets) is None
    assert TheoAhead(game, rules, money, "R1", bets).take("R1", rules, money, copy) is None
    assert TheoAhead(game, rules, money, "R1", bets).take("R1", rules, money, bets[:1]) is None
    theo = TheoAhead(game, rules, money, "R1", bets).take("R1", rules, money, bets)
    assert theo is not None and theo.bet_ids == ("a", "b")
    assert theo.lines[1][1:] == ("1/37", "100", 100)  # 60/2004 art. 7 1), as above
    # with_theo uses what it is given only for the same bets, in the same order
    body: dict[str, Any] = {
        "bets": [{"bet_id": "b", "bet_type": "straight", "selection": [7], "stake": 3700}],
        "totals": {},
    }
    wrong = Theo(("a",), (theo.lines[0],), theo.lines[0][0])
    out = with_theo(game, rules, money, body, known=wrong)
    assert out["bets"][0]["edge"] == "1/37"  # type: ignore[index,call-overload]
    assert out["totals"] == {"theo_exact": "100", "theo": 100}


def test_what_was_computed_ahead_is_freed_without_the_cyclic_collector(tmp_path: Path) -> None:
    cfg = load_config(ROOT / "config" / "roulette.toml")
    game, rules, money = cfg.game, cfg.rules, cfg.money
    raw = SimulatedPlayers(cfg, seed=2).many(20)
    bets = [game.parse_bet(rules, b, cfg.limits) for b in raw]
    seen: list[weakref.ref[Any]] = []

    async def main() -> None:
        box = Ahead(loop_runner(asyncio.get_running_loop().call_soon))
        box.start(game, rules, money, "R1", lambda: bets)
        assert box._round is not None
        seen.append(weakref.ref(box._round))
        for _ in range(60):  # every outcome settled ahead
            await asyncio.sleep(0)
        outcome = game.parse_outcome(rules, {"number": 3})
        settlement, _body, theo = box.settle(game, rules, money, "R1", outcome, bets)
        assert theo is not None and settlement is not None
        assert seen[0]() is not None  # kept until released (after the publication)
        box.release()
        for _ in range(3):
            await asyncio.sleep(0)

    was = gc.isenabled()
    gc.disable()
    try:
        asyncio.run(main())
        assert seen[0]() is None  # freed by reference counting alone: no cycle kept it
    finally:
        if was:
            gc.enable()


def test_a_cached_edge_is_the_same_exact_fraction_as_the_first_one() -> None:
    # 60/2004 art. 7 1): straight up, 35 to 1 over 37 numbers: an edge of 1/37.
    cfg = load_config(ROOT / "config" / "roulette.toml")
    game, rules, money = cfg.game, cfg.rules, cfg.money
    straight = game.parse_bet(rules, bet("x", "straight", [29], 3700), cfg.limits)
    first, again = (game.bet_edge(rules, straight, money) for _ in range(2))
    assert first == again == Fraction(1, 37) and isinstance(again, Fraction)
