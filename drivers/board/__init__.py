"""The lit result board: the RS-485 reference protocol (reflink profile 3, ``board-ref``)
and a board of LEDs on GPIO pins (``board-gpio``).

- :mod:`.codec`: the profile's messages; :mod:`.layouts`: lamps, bitmaps, road
  entries (which areas a result lights is the game's: ``Game.display.board``);
- :mod:`.model`, :mod:`.sim`: the simulated board(s) on one bus;
- :mod:`.driver`: :class:`~drivers.board.driver.BoardDriver`,
  :class:`~drivers.board.driver.GpioBoardDriver`.

Protocol: ``docs/protocols/board.md``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..declaration import DriverDeclaration, SimDevice, SimEntry
from ..reflink import tool
from ..reflink.messages import Profile


def _serial() -> type[Any]:
    from .driver import BoardDriver

    return BoardDriver


def _gpio() -> type[Any]:
    from .driver import GpioBoardDriver

    return GpioBoardDriver


def _build(seed: int | None, opts: Mapping[str, Any]) -> SimDevice:
    from .sim import BoardSimulator

    addresses = opts.get("addresses", (1,))
    if isinstance(addresses, str):
        addresses = [int(a) for a in addresses.split(",") if a.strip()]
    return BoardSimulator(addresses)


def _profile() -> Profile:
    from .codec import PROFILE

    return PROFILE


DECLARATIONS = (
    DriverDeclaration(
        "board-ref",
        "board",
        _serial,
        SimEntry("board-ref (reflink reference protocol)", _build, news=tool.news),
        tool.decoder("board-ref", _profile),
    ),
    DriverDeclaration("board-gpio", "board", _gpio),
)
