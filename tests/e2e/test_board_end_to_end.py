"""The lit result board follows the game end to end (issue 16, acceptance): the demo
table (simulated result device, daemon, players over MQTT) with a simulated board on
its serial line. For sic bo, fish-prawn-crab, fantan, roulette and baccarat, the board
receives the lit state that matches each settled round, checked against the round
payload the floor received (every winning bet's area lit, every losing bet's area
dark; the number and its history; the baccarat road), and after a daemon restart,
with the board power-cycled meanwhile, it shows the same history and roads again.

A board that goes offline for 30 s during play (``-m fault``) delays no round, is
reported as a device fault, and gets the current state when it answers again."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import pytest

from drivers.board.layouts import lamp_map
from drivers.board.model import BoardModel
from firmware_host.daemon import TableDaemon
from firmware_host.games import get_game
from tablesim.demo import DemoTable

ROUNDS = 4


def area_of_bet(game: str, bet: dict[str, Any]) -> str | None:
    """The layout area of a bet (``docs/protocols/board.md``), read from the bet lists
    of 57/2004 art. 5 and 59/2004 art. 5; None for a bet with no area of its own."""
    t, sel = bet["bet_type"], bet["selection"]
    join = "-".join
    if game == "sicbo":
        return {
            "small": "small",
            "big": "big",
            "odd": "odd",
            "even": "even",
            "any_triple": "any-triple",
        }.get(t) or {
            "single": lambda: f"single-{sel}",
            "specific_double": lambda: f"double-{sel}",
            "specific_triple": lambda: f"triple-{sel}",
            "total": lambda: f"total-{sel}",
            "two_dice": lambda: "combo-" + join(map(str, sel)),
            "three_specified": lambda: "three-" + join(map(str, sel)),
            "four_numbers": lambda: "four-" + join(map(str, sel)),
            "double_single": lambda: "pair-single-" + join(map(str, sel)),
        }[t]()
    if game == "fish-prawn-crab":
        return {
            "small": "small",
            "big": "big",
            "any_three_colour": "any-three-colour",
            "any_triple": "any-triple",
        }.get(t) or {
            "figure": lambda: str(sel),
            "one_colour": lambda: f"one-{sel}",
            "two_colour": lambda: f"two-{sel}",
            "three_colour": lambda: f"three-{sel}",
            "specific_triple": lambda: f"triple-{sel}",
            "total": lambda: f"total-{sel}",
        }[t]()
    if game == "baccarat":
        return {
            "banker": "banker",
            "player": "player",
            "tie": "tie",
            "banker_pair": "banker-pair",
            "player_pair": "player-pair",
        }[t]
    return None


def road_entry(outcome: dict[str, Any]) -> str:
    """55/2004 as the road byte's text: B, P or T, then b / p for the pairs."""
    w = {"banker": "B", "player": "P", "tie": "T"}[outcome["winner"]]
    return w + ("b" if outcome["banker_pair"] else "") + ("p" if outcome["player_pair"] else "")


class Recorder:
    """Every display state the simulated board went through (a copy after each message
    it carried out)."""

    def __init__(self, model: BoardModel) -> None:
        self.shown: list[dict[str, Any]] = []
        original = model.on_request

        def on_request(msg: Any) -> bytes:
            out = original(msg)
            self.shown.append(model.snapshot())
            return out

        model.on_request = on_request  # type: ignore[method-assign]


def expectations(game: str, rounds: list[dict[str, Any]]) -> list[Callable[[dict], bool]]:
    """One predicate per settled round: the board snapshot that shows its result."""
    board = get_game(game).display.board
    assert board is not None
    layout = lamp_map(board.area_names())  # the board's default order: the game's
    names = {i: a for a, i in layout.items()}
    out: list[Callable[[dict], bool]] = []
    numbers: list[int] = []
    road: list[str] = []
    for r in rounds:
        assert r["status"] == "settled"
        o = r["outcome"]
        won = {area_of_bet(game, b) for b in r["bets"] if b["result"] == "win"} - {None}
        lost = {area_of_bet(game, b) for b in r["bets"] if b["result"] == "lose"} - {None}
        if game in ("roulette", "fantan"):
            won |= {str(o["number"])}
            history = tuple(reversed(numbers))
            numbers.append(o["number"])
            number = (game, o["number"], history)
        else:
            number = None
        if game == "baccarat":
            road.append(road_entry(o))
        want_road = tuple(road)

        def shows(
            snap: dict[str, Any],
            won: set[str | None] = won,
            lost: set[str | None] = lost,
            number: Any = number,
            want_road: tuple[str, ...] = want_road,
        ) -> bool:
            lit = {names[i] for i in snap["lamps"]}
            if not won <= lit or lit & lost:
                return False
            # the board shows the configured 12 numbers of history (board.md `history`)
            if number is not None and snap["number"] != (number[0], number[1], number[2][:12]):
                return False
            if game == "baccarat" and snap["road"] != want_road:
                return False
            return snap["message"] == (3, "")

        out.append(shows)
    return out


async def wait_until(cond: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


@pytest.mark.parametrize("game", ["sicbo", "fish-prawn-crab", "fantan", "roulette", "baccarat"])
async def test_the_board_shows_every_settled_round_and_comes_back_after_a_restart(
    game: str,
) -> None:
    async with DemoTable(game, speed=8.0, seed=11, bets=5) as t:
        board = t.sims["board"].board(1)
        rec = Recorder(board)
        await wait_until(lambda: not board.state_lost, 10, "the board's first state")
        rounds = await t.play(ROUNDS)
        checks = expectations(game, rounds)
        await wait_until(
            lambda: any(checks[-1](s) for s in rec.shown), 5, "the last round on the board"
        )
        # every round's result was shown, in order
        i = 0
        for n, check in enumerate(checks):
            while i < len(rec.shown) and not check(rec.shown[i]):
                i += 1
            assert i < len(rec.shown), f"round {n + 1} of {game} never lit on the board"
        before = board.snapshot()

        # Restart: the daemon stops, the board loses its display (power cut), a new
        # daemon on the same journal rebuilds it.
        assert t.daemon is not None
        await t.daemon.stop("test restart")
        t.sims["board"].reboot(1)
        assert board.snapshot()["number"] is None and board.snapshot()["road"] == ()
        t.daemon = TableDaemon(t.cfg, config_path=t.config_path, state_dir=t.tmp, runtime_dir=t.tmp)
        await t.daemon.start()
        await wait_until(
            lambda: (
                (board.snapshot()["number"], board.snapshot()["road"])
                == (before["number"], before["road"])
            ),
            10,
            "the board rebuilt after the restart",
        )
        if game in ("roulette", "fantan"):
            assert board.snapshot()["number"][2]  # the history came back too
        if game == "baccarat":
            assert len(board.snapshot()["road"]) == ROUNDS


@pytest.mark.fault
@pytest.mark.slow
async def test_a_board_offline_for_30_s_delays_no_round_and_gets_the_state_back() -> None:
    async with DemoTable("roulette", speed=8.0, seed=5, bets=3) as t:
        assert t.daemon is not None and t.daemon.parts.engine is not None
        sim = t.sims["board"]
        board = sim.board(1)
        await wait_until(lambda: not board.state_lost, 10, "the board's first state")
        await t.play(2)
        # time every settlement of the table (its whole settle call, on the event loop)
        engine = t.daemon.parts.engine
        settle = engine.submit_result
        durations: list[float] = []

        def timed(*a: Any, **k: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return settle(*a, **k)
            finally:
                durations.append(time.perf_counter() - t0)

        engine.submit_result = timed  # type: ignore[method-assign]
        # the board's cable is cut: it neither hears nor answers
        sim.faults.silent = sim.rx_faults.silent = True
        t0 = time.monotonic()
        played_offline = 0
        while time.monotonic() - t0 < 30:
            await t.play(1)
            played_offline += 1
        devices = [m for m in t.floor.messages if m.topic == "devices/board"]  # type: ignore[union-attr]
        faults = [m.json() for m in devices if m.json()["state"] == "offline"]
        assert faults and faults[-1]["code"] in ("NO_ANSWER", "IDENTIFYING"), faults[-1:]
        assert t.daemon.journal.chain.events(1, kind="device_fault")  # type: ignore[union-attr]
        # no settlement waited for the board: each took what a settle takes
        assert durations and max(durations) < 0.25, max(durations)
        assert played_offline >= 5, played_offline
        # the board answers again: the current state is sent to it
        sim.faults.silent = sim.rx_faults.silent = False
        last = t.rounds[-1]["outcome"]["number"]
        await wait_until(
            lambda: (board.snapshot()["number"] or (None, None))[1] == last,
            10,
            "the current number resent to the board",
        )
        online = [m.json() for m in t.floor.messages if m.topic == "devices/board"]  # type: ignore[union-attr]
        assert online[-1]["state"] == "online"
