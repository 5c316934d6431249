"""``tablectl demo``: a whole table on embedded defaults.

One process runs: an embedded amqtt broker on loopback (unless ``--broker``), the
table daemon with a temporary journal, the game's simulated devices on pseudo-
terminals (the daemon's drivers open them exactly as they would open
``/dev/ttyUSB0``), a simulated dealer who drives the simulators (spins the wheel,
shakes the dice, deals the cards, takes the players' decisions), simulated players
who place random valid bets over MQTT ``bets/request``, and a floor subscriber that
prints each settled round as it arrives on ``rounds``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .broker import EmbeddedBroker, parse_broker_url
from .config import TableConfig, validate_document
from .daemon import TableDaemon
from .floor_client import FloorClient, FloorMessage
from .games import GAME_IDS
from .mqtt import settings_for_demo
from .players import SimulatedPlayers
from .table.engine import Phase

JSON = Any
PREFIX = "casino"


def _out(text: str) -> None:
    print(text, flush=True)


def money(amount: int, cfg: TableConfig) -> str:
    return cfg.money.format(amount)


class RoundPrinter:
    """Readable lines for each settled round, as the floor receives it."""

    def __init__(self, cfg: TableConfig, quiet: bool) -> None:
        self.cfg = cfg
        self.quiet = quiet
        self.count = 0
        self.seen: set[str] = set()
        self.done = asyncio.Event()
        self.target = 0

    def on_message(self, msg: FloorMessage) -> None:
        if msg.topic == "rounds":
            r = msg.json()
            if r["round_id"] in self.seen:
                return  # QoS 1 may deliver twice; same id, same round
            self.seen.add(r["round_id"])
            self.count += 1
            self.print_round(r)
            if self.target and self.count >= self.target:
                self.done.set()
        elif msg.topic == "events" and not self.quiet:
            ev = msg.json()
            if ev["event"] in (
                "throw_void",
                "spin_void",
                "misdeal",
                "result_refused",
                "device_problem",
            ):
                _out(f"   ! {ev['event']}: {json.dumps(ev.get('data', {}), ensure_ascii=False)}")

    def print_round(self, r: JSON) -> None:
        cfg = self.cfg
        t = r["totals"]
        outcome = _outcome_text(r["game"], r["outcome"])
        status = "VOID " + (r.get("void_reason") or "") if r["status"] == "void" else "settled"
        _out(f"#{self.count:<4} {r['round_id']}  {status}")
        _out(f"      outcome: {outcome}")
        if not self.quiet:
            for b in r["bets"]:
                sel = (
                    ""
                    if b.get("selection") is None
                    else json.dumps(b["selection"], ensure_ascii=False)
                )
                res = b["result"].upper()
                extra = f" commission {money(b['commission'], cfg)}" if b.get("commission") else ""
                _out(
                    f"      seat {b['seat']:<2} {b['bet_type']:<16} {sel:<22} stake {money(b['stake'], cfg):>14}"
                    f"  {res:<6} net {money(b['net'], cfg):>15}{extra}"
                )
        jp = r.get("jackpot") or {}
        jp_text = ""
        if jp.get("pool_after") is not None:
            jp_text = f"  jackpot {money(jp['pool_after'], cfg)}"
            for h in jp.get("hits", []):
                jp_text += f"  HIT {h['hand']} seat {h['seat']} {money(h['prize'], cfg)}"
        _out(
            f"      totals: {len(r['bets'])} bets, stakes {money(t['stakes'], cfg)}, "
            f"players net {money(t['net'], cfg)}, commission {money(t['commission'], cfg)}, "
            f"house {money(t['house_net'], cfg)}{jp_text}"
        )


def _outcome_text(game: str, o: JSON) -> str:
    if o is None:
        return "(none)"
    if game == "roulette":
        return f"{o['number']} {o['colour']}"
    if game in ("sicbo", "fish-prawn-crab"):
        extra = (
            " ".join(o.get("figures", []))
            if game == "fish-prawn-crab"
            else ("triple" if o.get("triple") else "")
        )
        return f"dice {o['dice']} total {o['total']} {extra}".rstrip()
    if game == "fantan":
        return f"number {o['number']}" + (f" ({o['buttons']} buttons)" if "buttons" in o else "")
    try:
        if game == "baccarat":
            return (
                f"player {' '.join(o['player'])} ({o['player_total']})  banker {' '.join(o['banker'])} "
                f"({o['banker_total']})  -> {o['winner']}"
            )
        if game == "blackjack":
            places = "; ".join(
                f"seat {p['seat']}: "
                + " | ".join(
                    f"{' '.join(h['cards'])} ({h['total']} {h['status']})" for h in p["hands"]
                )
                for p in o["places"]
            )
            d = o["dealer"]
            return f"dealer {' '.join(d['cards'])} ({d['total']}); {places}"
        if game == "stud-poker":
            seats = "; ".join(
                f"seat {k}: {' '.join(v['cards'])} {v['hand']} {v['action']}"
                for k, v in o["seats"].items()
            )
            q = "qualifies" if o["dealer_qualifies"] else "does not qualify"
            return f"dealer {' '.join(o['dealer'])} {o['dealer_hand']} ({q}); {seats}"
        if game in ("super-pan-9", "paikao"):
            hands = " ".join(f"{k}:{'+'.join(v)}" for k, v in o["hands"].items())
            return f"banker place {o['banker']}, dice {o['dice']}, first served {o['first_place']}; {hands}"
        if game == "mahjong":
            return f"seat {o['winner']} wins on {o['win']['tile']} ({o['win']['by']}), banker {o['banker']}, stake {o['stake']}"
    except (KeyError, TypeError):
        pass
    text = json.dumps(o, ensure_ascii=False)
    return text if len(text) < 160 else text[:157] + "..."


# -- per-game table definitions --------------------------------------------------
def table_document(game: str, devices: dict[str, Any]) -> dict[str, Any]:
    base: dict[str, Any] = {
        "version": 1,
        "table": {
            "id": f"demo-{game}",
            "game": game,
            "name": f"Demo {game}",
            "currency": "MOP",
            "payable_unit": 100,
        },
        "limits": {"min_stake": 2500, "max_stake": 500000},
        "devices": devices,
        "daemon": {"simulated": True},
    }
    if game == "stud-poker":
        base["limits"] = {
            "min_stake": 10000,
            "max_stake": 2000000,
            "bet_types": {
                "raise": {"min": 20000, "max": 4000000},
                "jackpot": {"min": 2000, "max": 2000},
            },
        }
        base["pay_table"] = {
            "stud-poker": {
                "jackpot_offered": True,
                "jackpot_stake": 2000,
                "jackpot_contribution_rate": "7/10",
                "jackpot_seed": 20000000,
            }
        }
    if game in ("super-pan-9", "paikao"):
        base["limits"] = {"min_stake": 2500, "max_stake": 5000000}
    if game == "mahjong":
        base["limits"] = {"min_stake": 1, "max_stake": 10**9}
    return base


class Dealer:
    """The simulated croupier: drives the devices and enters what a croupier enters."""

    def __init__(
        self,
        game: str,
        daemon: TableDaemon,
        floor: FloorClient,
        players: SimulatedPlayers,
        sims: dict[str, Any],
        speed: float,
        bets: int,
        seed: int,
    ) -> None:
        self.game = game
        self.daemon = daemon
        self.floor = floor
        self.players = players
        self.sims = sims
        self.speed = speed
        self.bets = bets
        self.rng = random.Random(seed)
        self.round_no = 0

    async def pause(self, seconds: float) -> None:
        await asyncio.sleep(seconds / self.speed)

    @property
    def engine(self) -> Any:
        return self.daemon.engine

    async def wait_phase(self, *phases: Phase, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while self.engine.phase not in phases:
            if time.monotonic() > deadline:
                raise TimeoutError(f"table stuck in phase {self.engine.phase.value}")
            await asyncio.sleep(0.01)

    async def place_bets(self, bets: list[dict[str, JSON]] | None = None) -> None:
        self.round_no += 1
        for bet in bets if bets is not None else self.players.many(self.bets, f"r{self.round_no}"):
            resp = await self.floor.place(bet)
            if resp.get("status") != "accepted":
                _out(f"   ! bet {bet['bet_id']} rejected: {resp.get('code')} {resp.get('message')}")

    async def command(self, command: str, **args: JSON) -> JSON:
        resp = await self.floor.command(command, **args)
        if resp.get("status") != "ok":
            _out(f"   ! {command}: {resp.get('code')} {resp.get('message')}")
        return resp

    async def play_round(self) -> None:
        await getattr(self, "_round_" + self.game.replace("-", "_"))()

    # roulette: the wheel's states open and close betting; the croupier starts each game.
    async def _round_roulette(self) -> None:
        await self.wait_phase(Phase.OPEN)
        await self.place_bets()
        await self.pause(0.3)
        await self.sims["wheel"].spin()

    # dice: shake (opens betting), bets, the bell (close), lift the dome (read the dice).
    async def _round_sicbo(self) -> None:
        shaker = self.daemon.drivers["shaker"]
        await self.wait_phase(Phase.IDLE)
        await shaker.request_shake()
        await self.wait_phase(Phase.OPEN)
        await self.place_bets()
        await self.pause(0.3)
        await self.command("close_betting")  # the bell
        deadline = time.monotonic() + 20
        while self.engine.phase is not Phase.IDLE and time.monotonic() < deadline:
            await asyncio.sleep(0.3)
            if self.engine.phase is Phase.CLOSED:
                await shaker.read_dice()  # the dome is lifted: read the dice now
            elif self.engine.phase is Phase.OPEN:  # a void throw: shaken again, bets stay
                await self.pause(0.2)
                await self.command("close_betting")

    _round_fish_prawn_crab = _round_sicbo

    # fantan: the croupier opens, counts the buttons four by four, enters the number.
    async def _round_fantan(self) -> None:
        await self.command("open_betting")
        await self.place_bets()
        await self.pause(0.3)
        await self.command("close_betting")
        await self.pause(0.3)
        await self.command("result", outcome={"buttons": self.rng.randint(20, 120)})

    # cards from the shoe: betting closes at the first card; decisions by the players.
    async def _round_cards(
        self, bets: list[dict[str, JSON]], setup: dict[str, JSON] | None = None
    ) -> None:
        shoe = self.sims["shoe"]
        proc = self.daemon.procedure
        # Stud poker uses one deck shuffled for every game (61/2004 art. 1 1), art. 3); the
        # others reshuffle when about a quarter of the shoe is left (the cut card).
        if self.game == "stud-poker" or shoe.model.remaining < max(40, len(shoe.model.order) // 4):
            await shoe.shuffle()
            await self.pause(0.1)
        await self.command("open_betting")
        await self.place_bets(bets)
        if setup is not None:
            await self.command("deal_setup", **setup)
        await self.pause(0.3)
        deadline = time.monotonic() + 60
        while self.engine.phase in (Phase.OPEN, Phase.CLOSED):
            if time.monotonic() > deadline:
                await self.command("void_round", reason="demo dealer timed out")
                return
            d = getattr(proc, "deal", None)
            exp = d.expect() if d is not None else None
            if exp is None or exp.kind == "card":
                before = d
                await shoe.deal()
                t0 = time.monotonic()
                while getattr(proc, "deal", None) is before and self.engine.phase in (
                    Phase.OPEN,
                    Phase.CLOSED,
                ):
                    if time.monotonic() - t0 > 5:
                        break
                    await asyncio.sleep(0.005)
                await self.pause(0.05)
            elif exp.kind == "decision":
                await self.command("decide", **self.choose(exp, d))
                await self.pause(0.05)
            else:
                await asyncio.sleep(0.02)

    def choose(self, exp: Any, deal: Any) -> dict[str, JSON]:
        allowed = tuple(exp.allowed)
        if self.game == "stud-poker":
            return {"seat": exp.seat, "action": "raise" if self.rng.random() < 0.7 else "fold"}
        total = _bj_total(deal, exp.seat, exp.hand)
        if "split" in allowed and self.rng.random() < 0.5:
            action = "split"
        elif "double" in allowed and total in (10, 11):
            action = "double"
        elif "hit" in allowed and total < 17:
            action = "hit"
        else:
            action = "stand" if "stand" in allowed else allowed[0]
        return {"seat": exp.seat, "hand": exp.hand, "action": action}

    async def _round_baccarat(self) -> None:
        await self._round_cards(self.players.many(self.bets, f"r{self.round_no + 1}"))

    async def _round_blackjack(self) -> None:
        seats = self.rng.sample(range(1, 8), 3)
        tag = f"r{self.round_no + 1}"
        bets: list[dict[str, JSON]] = []
        for s in seats:
            bets.append(
                {
                    "bet_id": f"{tag}m{s}",
                    "seat": s,
                    "bet_type": "main",
                    "stake": 2500 * self.rng.randint(1, 8),
                }
            )
            if self.rng.random() < 0.3:
                bets.append({"bet_id": f"{tag}p{s}", "seat": s, "bet_type": "pair", "stake": 2500})
        await self._round_cards(bets)

    async def _round_stud_poker(self) -> None:
        seats = self.rng.sample(range(1, 8), 3)
        tag = f"r{self.round_no + 1}"
        bets: list[dict[str, JSON]] = []
        for s in seats:
            bets.append(
                {
                    "bet_id": f"{tag}a{s}",
                    "seat": s,
                    "bet_type": "ante",
                    "stake": 10000 * self.rng.randint(1, 4),
                }
            )
            if self.rng.random() < 0.6:
                bets.append(
                    {"bet_id": f"{tag}j{s}", "seat": s, "bet_type": "jackpot", "stake": 2000}
                )
        await self._round_cards(bets)

    # player-banked games: the inspector enters the dealt hands (no card reader).
    async def _round_banked(self, outcome: JSON, places: list[int], banker: int) -> None:
        await self.command("open_betting")
        tag = f"r{self.round_no + 1}"
        bets = [
            {
                "bet_id": f"{tag}b{p}",
                "seat": p,
                "bet_type": "place",
                "selection": p,
                "stake": 2500 * self.rng.randint(1, 10),
            }
            for p in places
            if p != banker
        ]
        await self.place_bets(bets[: max(1, self.bets)])
        await self.pause(0.3)
        await self.command("close_betting")
        outcome["bet_order"] = [b["bet_id"] for b in bets[: max(1, self.bets)]]
        await self.command("result", outcome=outcome)

    async def _round_super_pan_9(self) -> None:
        from .games.cards import deck

        places = self.engine.rules.places
        cards = [str(c) for c in deck()]
        self.rng.shuffle(cards)
        banker = self.rng.randint(1, places)
        outcome = {
            "banker": banker,
            "banker_capital": 1000000,
            "casino_capital": 0,
            "declared": 0,
            "dice": [self.rng.randint(1, 6) for _ in range(4)],
            "hands": {str(p): cards[2 * (p - 1) : 2 * p] for p in range(1, places + 1)},
        }
        await self._round_banked(outcome, list(range(1, places + 1)), banker)

    async def _round_paikao(self) -> None:
        from .games.paikao import FULL_SET

        tiles = [str(t) for t in FULL_SET]
        self.rng.shuffle(tiles)
        banker = self.rng.randint(1, 8)
        outcome = {
            "banker": banker,
            "banker_capital": 1000000,
            "casino_capital": 0,
            "set_game": 1,
            "dice": [self.rng.randint(1, 6) for _ in range(4)],
            "hands": {str(p): tiles[2 * (p - 1) : 2 * p] for p in range(1, 9)},
        }
        await self._round_banked(outcome, list(range(1, 9)), banker)

    async def _round_mahjong(self) -> None:
        game = self.engine.game
        samples = [game.outcome_json(o) for o in game.sample_outcomes(self.engine.rules)]
        await self.command("open_betting")
        await self.pause(0.3)
        await self.command("close_betting")
        await self.command("result", outcome=samples[self.round_no % len(samples)])
        self.round_no += 1


def _bj_total(deal: Any, seat: int | None, hand: int | None) -> int:
    """A blackjack hand's total as the deal state reports it (the demo's strategy only)."""
    for place in deal.summary_json().get("places", []):
        if place.get("seat") == seat:
            return int(place["hands"][hand or 0]["total"])
    return 12


async def _start_sims(
    game: str, seed: int, speed: float
) -> tuple[dict[str, Any], dict[str, Any], list[Any]]:
    """Simulated devices on pseudo-terminals; returns (devices config, sims, closers)."""
    sims: dict[str, Any] = {}
    devices: dict[str, Any] = {}
    closers: list[Any] = []
    if game == "roulette":
        from drivers.cammegh.sim import CammeghSim, SimTiming

        k = 1 / max(speed, 0.05)
        # Every state lasts several status lines, whatever the speed: the driver (like
        # the real wheel's host) reads the game from the status lines.
        timing = SimTiming(
            status_interval=0.1 * min(1.0, k),
            before_game=0.5 * k,
            braking=0.1 * k,
            launch=0.2 * k,
            ball_in_rim=0.4 * k,
            no_more_bets=0.6 * k,
            result=0.5 * k,
            power_down=0.3,
            self_test=1.0,
            no_ball_stop=10.0,
        )
        wheel = CammeghSim(seed=seed, timing=timing)
        server = await wheel.serve_pty()
        await wheel.power_on()
        sims["wheel"] = wheel
        devices["wheel"] = {"driver": "cammegh-ss2", "port": str(server.path)}
        closers.append(wheel.stop)
    elif game in ("sicbo", "fish-prawn-crab"):
        from drivers.shaker.sim import ShakerSimulator

        shaker = ShakerSimulator(seed=seed)
        server = await shaker.serve_pty()
        sims["shaker"] = shaker
        devices["shaker"] = {"driver": "shaker-ref", "port": str(server.path)}
        closers.append(shaker.close)
    elif game in ("baccarat", "blackjack", "stud-poker", "super-pan-9"):
        from drivers.shoe.sim import ShoeSimulator

        decks = {"baccarat": 8, "blackjack": 6, "stud-poker": 1, "super-pan-9": 1}[game]
        shoe = ShoeSimulator(decks=decks, seed=seed)
        server = await shoe.serve_pty()
        sims["shoe"] = shoe
        devices["shoe"] = {"driver": "shoe-ref", "port": str(server.path)}
        closers.append(shoe.close)
    return devices, sims, closers


def to_toml(doc: dict[str, Any]) -> str:
    """A table document as TOML (scalars, lists, nested tables: what table files hold)."""

    def value(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, (int, float)):
            return repr(v)
        if isinstance(v, str):
            return json.dumps(v)
        if isinstance(v, (list, tuple)):
            return "[" + ", ".join(value(x) for x in v) + "]"
        raise TypeError(f"cannot write {v!r} as TOML")

    lines: list[str] = []

    def table(path: list[str], d: dict[str, Any]) -> None:
        scalars = {k: v for k, v in d.items() if not isinstance(v, dict)}
        subs = {k: v for k, v in d.items() if isinstance(v, dict)}
        if path and (scalars or not subs):
            lines.append(
                "["
                + ".".join(
                    json.dumps(p) if not p.replace("_", "").replace("-", "").isalnum() else p
                    for p in path
                )
                + "]"
            )
        for k, v in scalars.items():
            lines.append(f"{k} = {value(v)}")
        if scalars:
            lines.append("")
        for k, v in subs.items():
            table([*path, k], v)

    table([], doc)
    return "\n".join(lines) + "\n"


class DemoTable:
    """A whole simulated table: broker (embedded unless given), simulators, daemon,
    players and the floor's subscriber. ``async with DemoTable(...) as t:`` then
    ``await t.play(n)``; ``t.rounds`` holds every settled round the floor received."""

    def __init__(
        self,
        game: str,
        *,
        broker: str | None = None,
        speed: float = 1.0,
        seed: int = 1,
        bets: int = 6,
        quiet: bool = True,
        printer: bool = False,
    ) -> None:
        self.game = game
        self.broker = broker
        self.speed = speed
        self.seed = seed
        self.bets = bets
        self.quiet = quiet
        self.print = printer
        self.tmp = Path(tempfile.mkdtemp(prefix="tablectl-demo-"))
        self.embedded: EmbeddedBroker | None = None
        self.closers: list[Any] = []
        self.rounds: list[JSON] = []
        self.ids: list[str] = []
        self.config_path = self.tmp / "table.toml"

    async def __aenter__(self) -> DemoTable:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def start(self) -> None:
        if self.broker:
            self.host, self.port = parse_broker_url(self.broker)
        else:
            self.embedded = EmbeddedBroker()
            ep = await self.embedded.start()
            self.host, self.port = ep.host, ep.port
        self.devices, self.sims, self.closers = await _start_sims(self.game, self.seed, self.speed)
        doc = table_document(self.game, self.devices)
        self.config_path.write_text(to_toml(doc))
        self.cfg = validate_document(doc, str(self.config_path))
        mqtt = settings_for_demo(f"mqtt://{self.host}:{self.port}")
        self.daemon = TableDaemon(
            self.cfg,
            config_path=self.config_path,
            state_dir=self.tmp,
            runtime_dir=self.tmp,
            mqtt=mqtt,
        )
        self.printer = RoundPrinter(self.cfg, self.quiet)
        await self.daemon.start()
        assert self.daemon.link is not None
        await self.daemon.link.wait_subscribed(30)
        self.players = SimulatedPlayers(self.cfg, self.seed)
        self.floor = FloorClient(
            self.host,
            self.port,
            self.cfg.table_id,
            client_id=f"demo-floor-{self.seed}",
            on_message=self._on_message,
        )
        await self.floor.start()
        self.dealer = Dealer(
            self.game,
            self.daemon,
            self.floor,
            self.players,
            self.sims,
            self.speed,
            self.bets,
            self.seed,
        )

    def _on_message(self, msg: FloorMessage) -> None:
        if msg.topic == "rounds":
            r = msg.json()
            self.ids.append(r["round_id"])
            if r["round_id"] not in {x["round_id"] for x in self.rounds}:
                self.rounds.append(r)
        if self.print:
            self.printer.on_message(msg)

    async def play(self, rounds: int) -> list[JSON]:
        """Play until ``rounds`` more rounds have reached the floor."""
        target = len(self.rounds) + rounds
        while len(self.rounds) < target:
            before = len(self.rounds)
            await self.dealer.play_round()
            deadline = time.monotonic() + 30
            while len(self.rounds) == before and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            if len(self.rounds) == before:
                raise TimeoutError("no settled round arrived within 30 s")
            await self.dealer.pause(0.4)
        return self.rounds

    async def stop(self) -> None:
        with contextlib.suppress(Exception):
            await self.floor.stop()
        with contextlib.suppress(Exception):
            await self.daemon.stop("demo finished")
        for c in self.closers:
            with contextlib.suppress(Exception):
                await c()
        if self.embedded is not None:
            await self.embedded.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)


async def run_demo(
    *, game: str, rounds: int, broker: str | None, speed: float, seed: int, bets: int, quiet: bool
) -> int:
    if game not in GAME_IDS:
        print(f"error: unknown game {game!r}; games: {', '.join(GAME_IDS)}", file=sys.stderr)
        return 2
    t = DemoTable(game, broker=broker, speed=speed, seed=seed, bets=bets, quiet=quiet, printer=True)
    await t.start()
    try:
        cfg = t.cfg
        _out(f"tablectl demo: {cfg.game.title} ({cfg.game.regulation}), table {cfg.table_id}")
        _out(f"  broker: {'embedded amqtt' if t.embedded else 'external'} on {t.host}:{t.port}")
        for name, dev in t.devices.items():
            _out(f"  device {name}: {dev['driver']} simulator on {dev['port']}")
        _out(f"  configuration: {t.config_path}; journal: {t.tmp / 'journal.sqlite3'}")
        _out(f"  technician console: tablectl console --socket {t.tmp / 'console.sock'}")
        _out(
            f"  the floor's view: mosquitto_sub -h {t.host} -p {t.port} -t '{PREFIX}/tables/{cfg.table_id}/#' -v"
        )
        _out("")
        try:
            if rounds:
                await t.play(rounds)
            else:
                while True:
                    await t.play(1)
        except TimeoutError as exc:
            _out(f"   ! {exc}")
            return 1
        _out(f"\n{len(t.rounds)} rounds settled and received by the floor.")
        return 0
    finally:
        await t.stop()
