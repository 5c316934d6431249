"""The demo's croupier: plays each game's procedure on the simulated devices and
enters, over MQTT ``commands/request``, what a croupier or an inspector enters.

It knows the table only from outside, as a floor system does: the retained
``state`` (phase, round in flight) and the ``rounds`` received, through the
:class:`~tablesim.floor_client.FloorClient`, and the answers to its commands; and it
plays the simulators it was handed (spins the wheel, presses the shaker's button,
deals from the shoe). It knows no game by its id: a round is played as the kind of
device the demo serves for the game's result says (``wheel``, ``shaker``, ``shoe``), or
declared by command, and what the game says of its demo (``Game.demo``) gives the bets
made at the seats, the players' decisions and what people declare. A game dealt from
the shoe is dealt through the deal interface (``Game.start_deal``, ``Deal.expect``,
``Deal.deal``, ``Game.decide``): the croupier keeps its own count of the deal, as a
croupier knows the drawing rules, and checks it against the table's answer to every
decision.

Seeded: the same seed plays the same rounds (``tests/e2e/test_demo_golden.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Mapping
from typing import Any

from firmware_host.config import TableConfig
from firmware_host.games.cards import Card
from firmware_host.games.describe import DemoRound, sample_outcome
from firmware_host.games.errors import RulesError
from firmware_host.jsonio import JSON

from .floor_client import FloorClient
from .players import SimulatedPlayers
from .printer import out

#: Seconds the croupier insists on a decision the table refuses (it may not have
#: taken the last card yet: cards reach it over the shoe's link, decisions over MQTT).
DECISION_PATIENCE = 5.0


class Dealer:
    """The simulated croupier of one table."""

    def __init__(
        self,
        cfg: TableConfig,
        floor: FloorClient,
        players: SimulatedPlayers,
        sims: Mapping[str, Any],
        speed: float,
        bets: int,
        seed: int,
    ) -> None:
        self.cfg = cfg
        self.floor = floor
        self.players = players
        #: The simulators by device kind (``wheel``, ``shaker``, ``shoe``).
        self.sims = sims
        self.speed = speed
        self.bets = bets
        self.rng = random.Random(seed)
        self.round_no = 0

    async def pause(self, seconds: float) -> None:
        await asyncio.sleep(seconds / self.speed)

    async def place_bets(self, bets: list[dict[str, JSON]] | None = None) -> list[dict[str, JSON]]:
        """Send ``bets`` (or the simulated players' bets); returns those accepted."""
        self.round_no += 1
        accepted = []
        for bet in bets if bets is not None else self.players.many(self.bets, f"r{self.round_no}"):
            resp = await self.floor.place(bet)
            if resp.get("status") == "accepted":
                accepted.append(bet)
            else:
                out(f"   ! bet {bet['bet_id']} rejected: {resp.get('code')} {resp.get('message')}")
        return accepted

    async def command(self, command: str, **args: JSON) -> JSON:
        resp = await self.floor.command(command, **args)
        if resp.get("status") != "ok":
            out(f"   ! {command}: {resp.get('code')} {resp.get('message')}")
        return resp

    async def play_round(self) -> None:
        """One round: declared by command when the game's demo declares its rounds (no
        device reads them in the demo), else played on the simulated device of the
        kind that carries its result, else declared (its sample outcomes)."""
        kind = self.cfg.game.result_device or ""
        by_device = {
            "wheel": self._round_wheel,
            "shaker": self._round_shaker,
            "shoe": self._round_shoe,
        }.get(kind)
        if self.cfg.game.demo.declared is None and kind in self.sims and by_device is not None:
            await by_device()
        else:
            await self._round_declared()

    # the wheel: its states open and close betting; the croupier starts each game.
    async def _round_wheel(self) -> None:
        await self.floor.wait_phase("open", new_round=True)
        await self.place_bets()
        await self.pause(0.3)
        await self.sims["wheel"].spin()

    # dice: the shaker's button (shaken: betting opens), bets, the bell (close); the
    # table takes the dice read under the dome when betting closes.
    async def _round_shaker(self) -> None:
        await self.floor.wait_phase("idle")
        await self.sims["shaker"].press_button()
        rid = await self.floor.wait_phase("open", new_round=True)
        await self.place_bets()
        await self.pause(0.3)
        await self.command("close_betting")  # the bell
        deadline = time.monotonic() + 20
        while rid not in self.floor.finished and time.monotonic() < deadline:
            await asyncio.sleep(0.3)
            if self.floor.phase == "open" and self.floor.round_id == rid:
                # a void throw (57/2004 art. 3 3)): shaken again, the bets stay
                await self.pause(0.2)
                await self.command("close_betting")

    # declared: the croupier opens, the bets are made, betting closes and the result is
    # entered (fantan's count of the buttons, the banker games' dealt hands, a declared
    # mah-jong win).
    async def _round_declared(self) -> None:
        game, rules = self.cfg.game, self.cfg.rules
        rnd = self._next_round()
        bets: list[dict[str, JSON]] | None = None if game.bet_types(rules) else []
        if game.demo.declared is not None:
            bets, outcome = game.demo.declared(rules, self.rng, rnd)
        else:
            outcome = sample_outcome(game, rules, rnd.index)
        await self.command("open_betting")
        if bets is None or bets:
            await self.place_bets(bets)
        else:
            self.round_no += 1  # a round without bets (mah-jong: the payments are the results)
        await self.pause(0.3)
        await self.command("close_betting")
        await self.pause(0.3)
        await self.command("result", outcome=outcome)

    def _next_round(self) -> DemoRound:
        return DemoRound(self.round_no, f"r{self.round_no + 1}", self.bets)

    # the shoe: the bets (at the seats when the game seats its players), then the deal.
    async def _round_shoe(self) -> None:
        seated = self.cfg.game.demo.seated
        rnd = self._next_round()
        bets = (
            self.players.many(self.bets, rnd.tag)
            if seated is None
            else seated(self.cfg.rules, self.rng, rnd)
        )
        await self._round_cards(bets)

    # cards from the shoe: betting closes at the first card; decisions by the players.
    async def _round_cards(self, bets: list[dict[str, JSON]]) -> None:
        shoe = self.sims["shoe"]
        game, rules = self.cfg.game, self.cfg.rules
        # A game dealt from a fresh deck every round (stud poker's one deck) is shuffled
        # before each; the others when about a quarter of the shoe is left (the cut card).
        if game.fresh_deck_each_round(rules) or shoe.model.remaining < max(
            40, len(shoe.model.order) // 4
        ):
            await shoe.shuffle()
            await self.pause(0.1)
        await self.command("open_betting")
        accepted = await self.place_bets(bets)
        await self.pause(0.3)
        # the deal as the table starts it at the first card, from the bets it accepted
        deal = game.start_deal(rules, game.parse_bets(rules, accepted))
        deadline = time.monotonic() + 60
        while (exp := deal.expect()).kind != "complete":
            if time.monotonic() > deadline:
                await self.command("void_round", reason="demo dealer timed out")
                return
            if exp.kind == "card":
                card = await shoe.deal()
                # A misdeal: the table refuses the card too, and the deal goes on without it.
                with contextlib.suppress(RulesError):
                    deal = deal.deal(Card.parse(card))
                await self.pause(0.05)
            elif exp.kind == "decision":
                decide = game.demo.decide
                if decide is None:
                    await self.command("void_round", reason="demo dealer: no player decides")
                    return
                choice = decide(rules, self.rng, exp, deal)
                resp = await self._decide(choice)
                if resp is None:
                    await self.command("void_round", reason="demo dealer: decision refused")
                    return
                deal = game.decide(rules, deal, choice)
                table_expects = (resp.get("data") or {}).get("expect")
                if table_expects != deal.expect().to_json():
                    out(f"   ! the table expects {table_expects}, the croupier's count differs")
                    await self.command("void_round", reason="demo dealer lost count of the deal")
                    return
                await self.pause(0.05)
            else:  # "void": the deal cannot go on
                await self.command("void_round", reason=f"demo dealer: {exp.reason}")
                return

    async def _decide(self, choice: Mapping[str, JSON]) -> JSON:
        """Send a player's decision, again while the table refuses it for a moment (it
        has not taken the last card yet); None if it still refuses."""
        deadline = time.monotonic() + DECISION_PATIENCE
        while True:
            resp = await self.floor.command("decide", **choice)
            if resp.get("status") == "ok":
                return resp
            if time.monotonic() > deadline:
                out(f"   ! decide: {resp.get('code')} {resp.get('message')}")
                return None
            await asyncio.sleep(0.01)
