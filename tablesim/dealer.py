"""The demo's croupier: plays each game's procedure on the simulated devices and
enters, over MQTT ``commands/request``, what a croupier or an inspector enters.

It knows the table only from outside, as a floor system does: the retained
``state`` (phase, round in flight) and the ``rounds`` received, through the
:class:`~tablesim.floor_client.FloorClient`, and the answers to its commands; and it
plays the simulators it was handed (spins the wheel, presses the shaker's button,
deals from the shoe). For the card games it keeps its own count of the deal with the
rules core's pure deal state, as a croupier knows the drawing rules, and checks it
against the table's answer to every decision.

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
        self.game = cfg.game_id
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
        rounds = {
            "roulette": self._round_roulette,
            "sicbo": self._round_dice,
            "fish-prawn-crab": self._round_dice,
            "fantan": self._round_fantan,
            "baccarat": self._round_baccarat,
            "blackjack": self._round_blackjack,
            "stud-poker": self._round_stud_poker,
            "super-pan-9": self._round_super_pan_9,
            "paikao": self._round_paikao,
            "mahjong": self._round_mahjong,
        }
        await rounds[self.game]()

    # roulette: the wheel's states open and close betting; the croupier starts each game.
    async def _round_roulette(self) -> None:
        await self.floor.wait_phase("open", new_round=True)
        await self.place_bets()
        await self.pause(0.3)
        await self.sims["wheel"].spin()

    # dice: the shaker's button (shaken: betting opens), bets, the bell (close); the
    # table takes the dice read under the dome when betting closes.
    async def _round_dice(self) -> None:
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

    # fantan: the croupier opens, counts the buttons four by four, enters the number.
    async def _round_fantan(self) -> None:
        await self.command("open_betting")
        await self.place_bets()
        await self.pause(0.3)
        await self.command("close_betting")
        await self.pause(0.3)
        await self.command("result", outcome={"buttons": self.rng.randint(20, 120)})

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
                choice = self.choose(exp, deal)
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

    def choose(self, exp: Any, deal: Any) -> dict[str, JSON]:
        """The player's decision on what the deal expects (``exp.allowed``)."""
        allowed = tuple(exp.allowed)
        if "raise" in allowed:  # stud poker: raise twice the ante, or fold
            return {"seat": exp.seat, "action": "raise" if self.rng.random() < 0.7 else "fold"}
        total = blackjack_total(deal, exp.seat, exp.hand)
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
        from firmware_host.games.cards import deck

        places = self.cfg.rules.places
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
        from firmware_host.games.paikao import FULL_SET

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
        game: Any = self.cfg.game
        samples = [game.outcome_json(o) for o in game.sample_outcomes(self.cfg.rules)]
        await self.command("open_betting")
        await self.pause(0.3)
        await self.command("close_betting")
        await self.command("result", outcome=samples[self.round_no % len(samples)])
        self.round_no += 1


def blackjack_total(deal: Any, seat: int | None, hand: int | None) -> int:
    """A blackjack hand's total as the deal state reports it (the demo's strategy only)."""
    for place in deal.summary_json().get("places", []):
        if place.get("seat") == seat:
            return int(place["hands"][hand or 0]["total"])
    return 12
