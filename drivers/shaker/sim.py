"""Simulated electronic dice shaker speaking the reference protocol.

``ShakerSimulator(dice=3, seed=1)``: ``await sim.throw()`` shakes and reads seeded
dice (or the dice named), ``sim.inject("stacked")`` & co. set the fault knobs of
the next shakes; ``press_button()`` is the shaker's own shake button.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from ..reflink.sim import Simulator
from .model import INJECTABLE, ShakerModel


class ShakerSimulator(Simulator):
    def __init__(
        self,
        dice: int = 3,
        seed: int | None = None,
        bias: Sequence[float] | None = None,
        **kwargs: Any,
    ) -> None:
        self.model = ShakerModel(dice, seed, bias)
        super().__init__(self.model, **kwargs)

    async def throw(
        self,
        dice: Sequence[int] | None = None,
        flags: Sequence[str] | None = None,
        source: str = "host",
    ) -> tuple[int, ...] | None:
        out = self.model.shake(dice, flags, source)
        await asyncio.sleep(0)
        return out

    async def press_button(self) -> tuple[int, ...] | None:
        return await self.throw(source="button")

    def inject(self, fault: str, count: int = 1) -> None:
        self.model.inject(fault, count)

    @property
    def sent_dice(self) -> list[tuple[int, tuple[int, ...], tuple[str, ...]]]:
        return self.model.sent_dice


__all__ = ["INJECTABLE", "ShakerSimulator"]
