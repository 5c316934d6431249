"""The tracker of a file's kind: lines -> events (:class:`~.wheel.LineWheel`,
:class:`~.counted.LineShoe`, :class:`~.counted.LineShaker`), all sans-I/O."""

from __future__ import annotations

from typing import Any
from typing import Protocol as TypingProtocol

from .counted import LineShaker, LineShoe
from .rules import Line
from .spec import Protocol
from .wheel import LineWheel

__all__ = ["Tracker", "make_tracker"]


class Tracker(TypingProtocol):
    """What the driver and the decoder ask of a kind's tracker."""

    @property
    def fault(self) -> tuple[str, str] | None: ...

    def feed(self, line: Line, now: float) -> list[Any]: ...

    def new_session(self) -> list[Any]: ...

    def end(self) -> list[Any]: ...

    def snapshot(self) -> dict[str, Any]: ...


def make_tracker(
    protocol: Protocol, device: str = "", *, pockets: int = 37, decks: int = 8, dice: int = 3
) -> Tracker:
    if protocol.kind == "wheel":
        return LineWheel(protocol, device, pockets=pockets)
    if protocol.kind == "shoe":
        return LineShoe(protocol, device, decks=decks)
    if protocol.kind == "shaker":
        return LineShaker(protocol, device, dice=dice)
    raise ValueError(f"no tracker for a {protocol.kind}")
