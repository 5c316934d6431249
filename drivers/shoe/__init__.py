"""Card shoe / shuffler-dealer over the reference protocol (reflink profile 1):
``shoe-ref`` on a serial line and ``shoe-ref-usb`` over USB bulk.

- :mod:`.codec`: the profile's messages and the tracker (frames -> events);
- :mod:`.model`, :mod:`.sim`: the simulated shoe (seeded shuffles, faults);
- :mod:`.driver`: :class:`~drivers.shoe.driver.ShoeDriver`,
  :class:`~drivers.shoe.driver.UsbShoeDriver`.

Its events are the shoe kind's (:mod:`tablecommon.events.shoe`). Protocol:
``docs/protocols/shoe.md``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..declaration import DriverDeclaration, Out, SimDevice, SimEntry
from ..reflink import tool
from ..reflink.messages import Profile


def _serial() -> type[Any]:
    from .driver import ShoeDriver

    return ShoeDriver


def _usb() -> type[Any]:
    from .driver import UsbShoeDriver

    return UsbShoeDriver


def _build(seed: int | None, opts: Mapping[str, Any]) -> SimDevice:
    from .sim import ShoeSimulator

    return ShoeSimulator(decks=int(opts.get("decks", 8)), seed=seed)


async def _start(sim: Any, opts: Mapping[str, Any], playing: bool) -> None:
    if playing:
        await sim.shuffle()


async def _play(sim: Any, interval: float, opts: Mapping[str, Any], out: Out) -> None:
    try:
        if sim.model.remaining == 0:
            await sim.shuffle()
        out(f"dealt {await sim.deal()}")
    except Exception as exc:  # SimError: door open, jam
        out(f"cannot deal: {exc}")


def _profile() -> Profile:
    from .codec import PROFILE

    return PROFILE


def _tracker(device: str) -> Any:
    from .codec import ShoeTracker

    return ShoeTracker(device)


def _declare(name: str, load: Any) -> DriverDeclaration:
    # the USB shoe's simulator serves the same protocol on a pty or a TCP port
    sim = SimEntry(f"{name} (reflink reference protocol)", _build, _start, _play, news=tool.news)
    return DriverDeclaration(name, "shoe", load, sim, tool.decoder(name, _profile, _tracker))


DECLARATIONS = (_declare("shoe-ref", _serial), _declare("shoe-ref-usb", _usb))
