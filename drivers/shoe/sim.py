"""Simulated card shoe / shuffler-dealer speaking the reference protocol.

``ShoeSimulator(decks=8, seed=1)``: deals from a seeded shuffle; ``inject`` any
fault of the protocol; serve it on a pty/TCP port (``tablectl sim shoe-ref``) or
on a pipe in tests. The seeded ``random.Random`` lives here, never in the rules core.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ..reflink.sim import Simulator
from .model import INJECTABLE, ShoeModel, SimError


class ShoeSimulator(Simulator):
    def __init__(
        self, decks: int = 8, seed: int | None = None, *, deck_check: bool = True, **kwargs: Any
    ) -> None:
        self.model = ShoeModel(decks, seed, deck_check=deck_check)
        super().__init__(self.model, **kwargs)

    async def shuffle(self, decks: int | None = None) -> None:
        self.model.shuffle(decks)
        await asyncio.sleep(0)

    async def deal(self, position: int = 0, card: str | None = None) -> str:
        """Deal the next card (or force ``card``); returns what was dealt."""
        out = self.model.deal(position, card)
        await asyncio.sleep(0)
        return out

    async def check_deck(self) -> None:
        self.model.check_deck()
        await asyncio.sleep(0)

    async def inject(self, fault: str, card: str | None = None) -> None:
        self.model.inject(fault, card)
        await asyncio.sleep(0)

    @property
    def sent_cards(self) -> list[tuple[int, str]]:
        return self.model.sent_cards


__all__ = ["INJECTABLE", "ShoeSimulator", "SimError"]
