"""Simulated lit result board(s) on an RS-485 bus, speaking the reference protocol.

``BoardSimulator()`` is one board at address 1; ``BoardSimulator(addresses=(1, 2))``
several boards on one bus (one connection). ``sim.board(1)`` is a board's model:
what it shows (``snapshot()``), ``lamp_failure`` knob; ``sim.reboot(1)`` power-cycles
it (it comes back blank, with a new session).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..reflink.sim import Simulator
from .model import BoardModel


class BoardSimulator(Simulator):
    def __init__(self, addresses: Iterable[int] = (1,), **kwargs: Any) -> None:
        self.models = {a: BoardModel() for a in addresses}
        super().__init__(dict(self.models), **kwargs)

    def board(self, address: int = 1) -> BoardModel:
        return self.models[address]


__all__ = ["BoardSimulator"]
