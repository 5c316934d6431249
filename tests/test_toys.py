"""A game and a driver added from inside a test, no other module edited (issue 31 item 4).

Adding a game is its folder and one line of ``GAME_MODULES``; adding a driver its
package and one line of ``DRIVER_PACKAGES``: nothing else of the code knows them by
name. To show it, this test declares a toy game and a toy driver here, registers them
(``games.register_game``, ``drivers.registry.register``) and plays a round with each,
end to end:

- **high card** (one card to the player, one to the banker, the higher wins; a tie
  pushes the two sides and pays the tie bet): dealt from the shoe through the deal
  interface. ``tablectl demo``'s table plays it: its table file, the daemon, the shoe
  procedure fed by the simulated shoe, the simulated players placing the bets the game
  describes over MQTT, the croupier dealing, the lit result board showing the game's
  winning area, the statistics it describes, the printer printing its words;
- **toy-keypad** (a dealer's keypad speaking a line protocol, ``KEY 3``): configured in
  a ``[devices]`` section through the registry, its simulator served on a
  pseudo-terminal, its events (the keypad kind's) feeding the fantan table's keypad
  procedure, which settles the round; its capture decoded by ``tablectl decode``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from drivers import registry
from drivers.base import HealthState
from drivers.common import DriverBase
from drivers.declaration import DecoderEntry, DriverDeclaration, SimEntry
from drivers.simulators import serve_simulator
from drivers.testing import Faults
from drivers.transport import PtyServer, TcpServer, cancel_and_wait, open_connection, serve_pty
from drivers.transport import serve_tcp as serve_on_tcp
from firmware_host.cli import main
from firmware_host.config import validate_document
from firmware_host.games import get_game, register_game, unregister_game
from firmware_host.games.base import (
    JSON,
    Bet,
    BetResult,
    BetType,
    Deal,
    Expect,
    Game,
    MathReport,
    Settlement,
    Totals,
    check_derived,
    require,
)
from firmware_host.games.cards import Card
from firmware_host.games.describe import Area, Board, Demo, Display, Rng
from firmware_host.games.errors import Misdeal, OutcomeError, RoundStateError
from firmware_host.games.money import MoneyRules, Verdict, settle_amounts
from firmware_host.journal import Journal
from firmware_host.table.engine import RoundEngine
from firmware_host.table.extension import TableExtension, TableExtensions
from firmware_host.table.phase import Phase
from firmware_host.table.procedures import Device, KeypadProcedure, ProcedureContext, make_procedure
from tablecommon.events.keypad import Bell, KeypadConfirm, KeypadEvent, KeypadNumber, KeypadResult
from tablecommon.settings import FieldSpec

# -- the toy game: high card -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class HighCardRules:
    """No house option."""


@dataclass(frozen=True, slots=True)
class HighCardOutcome:
    player: Card
    banker: Card

    @property
    def winner(self) -> str:
        p, b = (14 if c.rank == 1 else c.rank for c in (self.player, self.banker))  # aces high
        return "player" if p > b else "banker" if b > p else "tie"


@dataclass(frozen=True, slots=True)
class HighCardDeal(Deal):
    player: Card | None = None
    banker: Card | None = None

    def expect(self) -> Expect:
        if self.player is None:
            return Expect("card", to="player")
        if self.banker is None:
            return Expect("card", to="banker")
        return Expect("complete")

    def deal(self, item: Any) -> HighCardDeal:
        card = item if isinstance(item, Card) else Card.parse(item)
        due = self.expect()
        if due.kind == "complete":
            raise Misdeal(f"card {card}: both sides have theirs", code="MISDEAL_EXTRA_CARD")
        if due.to == "player":
            return HighCardDeal(card)
        return HighCardDeal(self.player, card)

    def outcome(self) -> HighCardOutcome:
        if self.player is None or self.banker is None:
            raise RoundStateError("the deal is not complete", code="ROUND_INCOMPLETE")
        return HighCardOutcome(self.player, self.banker)


_SIDES = ("player", "banker", "tie")


def _statistics(outcomes: Sequence[Mapping[str, Any]], *, last: int = 20) -> dict[str, JSON]:
    winners = [str(o["winner"]) for o in outcomes]
    counts = Counter(winners)
    return {"last": list(winners[:last]), "wins": {s: counts[s] for s in _SIDES}}


def _bet(rules: HighCardRules, rng: Rng) -> tuple[str, JSON]:
    return rng.choice(["player", "banker", "player", "banker", "tie"]), None


class HighCard(Game[HighCardRules, HighCardOutcome]):
    game_id = "high-card"
    title = "High card (a toy of the tests)"
    regulation = "none: a test's toy"
    rules_type = HighCardRules
    result_device = "shoe"
    device_kinds = frozenset({"shoe", "board"})
    display = Display(
        Board("high-card", tuple(Area(s, s) for s in _SIDES)),
        _statistics,
        words=lambda o: f"player {o['player']}, banker {o['banker']}: {o['winner']} wins",
        short=lambda o: str(o["winner"])[0].upper(),
    )
    demo = Demo(bet=_bet)

    def bet_types(self, rules: HighCardRules) -> Sequence[BetType]:
        return tuple(BetType(s, s.title(), "none", "8:1" if s == "tie" else "1:1") for s in _SIDES)

    def canonical_selection(self, rules: HighCardRules, bet_type: str, selection: JSON) -> JSON:
        require(selection is None, f"{bet_type}: takes no selection")
        return None

    def parse_outcome(self, rules: HighCardRules, raw: JSON) -> HighCardOutcome:
        if not isinstance(raw, Mapping) or not {"player", "banker"} <= set(raw):
            raise OutcomeError(f'high card: {{"player": card, "banker": card}}, got {raw!r}')
        outcome = HighCardOutcome(Card.parse(raw["player"]), Card.parse(raw["banker"]))
        check_derived(raw, self.outcome_json(outcome), self.game_id)  # type: ignore[arg-type]
        return outcome

    def outcome_json(self, outcome: HighCardOutcome) -> JSON:
        return {
            "player": str(outcome.player),
            "banker": str(outcome.banker),
            "winner": outcome.winner,
        }

    def verdict(self, rules: HighCardRules, outcome: HighCardOutcome, bet: Bet) -> Verdict:
        if bet.bet_type == outcome.winner:
            return Verdict.win(8 if bet.bet_type == "tie" else 1)
        if outcome.winner == "tie":
            return Verdict.push("a tie: the player and the banker push")
        return Verdict.lose()

    def settle(
        self, rules: HighCardRules, outcome: HighCardOutcome, bets: Sequence[Bet], money: MoneyRules
    ) -> Settlement:
        results = []
        for bet in bets:
            v = self.verdict(rules, outcome, bet)
            results.append(BetResult(bet, settle_amounts(bet.stake, v, money), v.reason))
        out = self.outcome_json(outcome)
        return Settlement(self.game_id, out, tuple(results), Totals.of(results))

    def start_deal(
        self, rules: HighCardRules, bets: Sequence[Bet], setup: Mapping[str, JSON] | None = None
    ) -> HighCardDeal:
        return HighCardDeal()

    def math(self, rules: HighCardRules, **options: Any) -> MathReport:
        return MathReport(self.game_id, self.rules_json(rules), "exact", ())


@pytest.fixture
def high_card() -> Iterator[HighCard]:
    game = HighCard()
    register_game(game)
    try:
        yield game
    finally:
        unregister_game(game.game_id)


async def test_a_toy_game_is_played_end_to_end(
    high_card: HighCard, capsys: pytest.CaptureFixture[str]
) -> None:
    from tablesim.demo import DemoTable  # the demo, as tablectl demo runs it

    assert get_game("high-card") is high_card
    async with DemoTable("high-card", speed=8.0, seed=3, bets=4, quiet=False, printer=True) as t:
        rounds: list[Any] = await t.play(2)
        assert t.daemon is not None
        board, statistics = t.daemon.parts.board, t.daemon.parts.statistics
        assert board is not None and statistics is not None
        assert board.state.round_id == rounds[-1]["round_id"]
        lamps = t.sims["board"].board(1)
        for _ in range(100):  # the board's own task catches up
            if lamps.lamps == [_SIDES.index(rounds[-1]["outcome"]["winner"])]:
                break
            await asyncio.sleep(0.05)
        figures = statistics.payload()
    assert [r["game"] for r in rounds] == ["high-card", "high-card"]
    for r in rounds:
        assert r["status"] == "settled"
        o = r["outcome"]
        assert o == high_card.outcome_json(high_card.parse_outcome(HighCardRules(), o))
        assert r["bets"], "the simulated players bet what the game describes"
        for b in r["bets"]:  # settled by the game's rules, as the floor received it
            assert b["bet_type"] in _SIDES
            if b["bet_type"] == o["winner"]:
                assert b["result"] == "win"
            else:
                assert b["result"] == ("push" if o["winner"] == "tie" else "lose")
    last = rounds[-1]["outcome"]
    assert board.state.lit == (last["winner"],)  # the game's own winning area
    assert lamps.lamps == [_SIDES.index(last["winner"])]  # lamp i is the game's area i
    assert figures["rounds"] == 2 and sum(figures["wins"].values()) == 2  # type: ignore[arg-type]
    printed = capsys.readouterr().out
    assert f"player {last['player']}, banker {last['banker']}: {last['winner']} wins" in printed
    assert "board: last 2, newest first: " in printed


# -- the toy driver: a keypad speaking lines ------------------------------------------------


class ToyKeypadTracker:
    """Lines in, the keypad kind's events out: ``KEY n`` (a number), ``KEY CONFIRM``
    (the result if a number was pressed, else a bare confirm), ``KEY BELL``."""

    def __init__(self, device: str) -> None:
        self.device = device
        self.number: int | None = None

    def feed(self, line: bytes) -> list[KeypadEvent]:
        key = line.decode("ascii", "replace").strip().removeprefix("KEY ")
        raw = bytes(line)
        if key.isdigit():
            self.number = int(key)
            return [KeypadNumber(device=self.device, raw=raw, key=key, value=self.number)]
        if key == "CONFIRM":
            number, self.number = self.number, None
            if number is None:
                return [KeypadConfirm(device=self.device, raw=raw)]
            return [KeypadResult(device=self.device, raw=raw, value=number)]
        if key == "BELL":
            return [Bell(device=self.device, raw=raw)]
        return []


class ToyKeypadDriver(DriverBase[KeypadEvent]):
    driver_name = "toy-keypad"
    SETTINGS = {"port": FieldSpec("str", required=True, doc="the keypad's serial port")}  # noqa: RUF012

    def __init__(self, name: str, settings: Mapping[str, Any], **_: Any) -> None:
        super().__init__(name)
        self.port = str(settings["port"])
        self.tracker = ToyKeypadTracker(name)
        self.task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self.task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        conn = await open_connection(self.port)
        self.set_health(HealthState.ONLINE)
        buffered = b""
        try:
            while True:
                buffered += await conn.read()
                while b"\n" in buffered:
                    line, buffered = buffered.split(b"\n", 1)
                    self.frames.rx(line)
                    for event in self.tracker.feed(line):
                        self.emit(event)
        finally:
            await conn.close()

    async def stop(self) -> None:
        await cancel_and_wait(self.task)
        self.hub.close()


class ToyKeypadSim:
    """The keypad's simulator: the keys pressed are sent as lines."""

    def __init__(self) -> None:
        self.faults = Faults()
        self.keys: asyncio.Queue[str] = asyncio.Queue()
        self.server: PtyServer | TcpServer | None = None

    async def _serve(self, conn: Any) -> None:
        while True:
            await conn.write(f"KEY {await self.keys.get()}\n".encode())

    async def serve_pty(self, link: str | Path | None = None) -> PtyServer:
        server = await serve_pty(self._serve, link)
        self.server = server
        return server

    async def serve_tcp(self, *, host: str = "127.0.0.1", port: int = 0) -> TcpServer:
        server = await serve_on_tcp(self._serve, host, port)
        self.server = server
        return server

    def press(self, *keys: str) -> None:
        for key in keys:
            self.keys.put_nowait(key)

    async def close(self) -> None:
        if self.server is not None:
            await self.server.close()


def _decode(data: bytes, options: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    tracker = ToyKeypadTracker(str(options.get("device") or "keypad"))
    for line in data.splitlines():
        text = line.split(b"\t")[-1]  # a frame log's line, or the raw line
        for event in tracker.feed(text):
            yield event.to_json()


TOY_DRIVER = DriverDeclaration(
    "toy-keypad",
    "keypad",
    lambda: ToyKeypadDriver,
    SimEntry("a toy keypad speaking lines", lambda seed, options: ToyKeypadSim()),
    DecoderEntry("toy keypad lines -> keypad events", _decode),
)


@pytest.fixture
def toy_keypad() -> Iterator[DriverDeclaration]:
    registry.register(TOY_DRIVER)
    try:
        yield TOY_DRIVER
    finally:
        registry.unregister(TOY_DRIVER.name)


class Settled(TableExtension):
    name = "settled"

    def __init__(self, extensions: TableExtensions) -> None:
        self.payloads: list[Mapping[str, JSON]] = []
        extensions.add(self)

    def round_settled(self, payload: Mapping[str, JSON]) -> None:
        self.payloads.append(payload)


async def test_a_toy_driver_feeds_a_procedure(
    toy_keypad: DriverDeclaration, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    served = await serve_simulator("toy-keypad")  # its simulator, through the registry
    cfg = validate_document(
        {
            "table": {"id": "t-1", "game": "fantan"},
            "devices": {"keys": {"driver": "toy-keypad", "port": served.where}},
        }
    )
    section = cfg.section("devices")["keys"]
    assert (section.driver, section.kind) == ("toy-keypad", "keypad")
    driver = registry.create_driver("keys", section)
    assert isinstance(driver, ToyKeypadDriver)
    extensions = TableExtensions()
    settled = Settled(extensions)
    engine = RoundEngine(cfg, Journal(tmp_path / "j.sqlite3"), extensions=extensions)
    procedure = make_procedure(
        ProcedureContext(engine, (Device("keys", section.kind, driver),), extensions=extensions)
    )
    assert isinstance(procedure, KeypadProcedure)  # the kind it declares chose it

    async def pump() -> None:
        async for event in driver.events():
            await procedure.on_device_event("keys", event)

    events = asyncio.create_task(pump())
    await driver.start()
    sim = served.sim
    try:
        await _until(lambda: driver.health.state is HealthState.ONLINE)  # the port is open
        sim.press("CONFIRM")  # no round in flight: betting opens (58/2004 art. 4)
        await _until(lambda: engine.phase is Phase.OPEN)
        assert engine.desk.place(
            {"bet_id": "f3", "bet_type": "fan", "selection": 3, "stake": 100}
        ).accepted
        sim.press("BELL")  # no more bets
        await _until(lambda: engine.phase is Phase.CLOSED)
        sim.press("3", "CONFIRM")  # the count's remainder, confirmed: the result
        await _until(lambda: bool(settled.payloads))
    finally:
        await driver.stop()
        await cancel_and_wait(events)
        await served.close()
    (payload,) = settled.payloads
    assert payload["outcome"] == {"number": 3}
    (bet,) = payload["bets"]  # type: ignore[misc]
    assert (bet["bet_id"], bet["result"]) == ("f3", "win")
    # its capture, decoded by tablectl decode through the registry
    capture = tmp_path / "keys.log"
    capture.write_text("\n".join(driver.frames.dump()) + "\n")
    assert main(["decode", "toy-keypad", str(capture)]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["kind"] for r in records] == [
        "KeypadConfirm",
        "Bell",
        "KeypadNumber",
        "KeypadResult",
    ]
    assert records[-1]["value"] == 3


async def _until(condition: Any, timeout: float = 10.0) -> None:
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(timeout):
            while not condition():
                await asyncio.sleep(0.01)
    assert condition()
