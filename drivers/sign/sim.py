"""Simulated jackpot sign speaking the reference protocol.

``sim.display()`` is what the sign shows now (amount, hit message, or the fault
message in alternation); ``sim.reboot()`` power-cycles it (blank, new session).
"""

from __future__ import annotations

from typing import Any

from ..reflink.sim import Simulator
from .model import SignModel


class SignSimulator(Simulator):
    def __init__(self, address: int = 0, **kwargs: Any) -> None:
        self.model = SignModel()
        super().__init__({address: self.model}, **kwargs)
        self.address = address

    def display(self, now: float | None = None) -> str:
        return self.model.display(now)


__all__ = ["SignSimulator"]
