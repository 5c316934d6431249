"""Electronic dice shaker over the reference protocol (reflink profile 2, ``shaker-ref``),
with its dome and bell on GPIO.

- :mod:`.codec`: the profile's messages and the tracker (frames -> events);
- :mod:`.model`, :mod:`.sim`: the simulated shaker (seeded dice, lies, faults);
- :mod:`.driver`: :class:`~drivers.shaker.driver.ShakerDriver`.

Its events are the shaker kind's (:mod:`tablecommon.events.shaker`). Protocol:
``docs/protocols/shaker.md``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..declaration import DriverDeclaration, Out, SimDevice, SimEntry
from ..reflink import tool
from ..reflink.messages import Profile


def _driver() -> type[Any]:
    from .driver import ShakerDriver

    return ShakerDriver


def _build(seed: int | None, opts: Mapping[str, Any]) -> SimDevice:
    from .sim import ShakerSimulator

    return ShakerSimulator(dice=int(opts.get("dice", 3)), seed=seed)


async def _play(sim: Any, interval: float, opts: Mapping[str, Any], out: Out) -> None:
    from ..reflink.device import Refuse

    try:
        out(f"threw {await sim.throw()}")
    except Refuse as exc:
        out(f"cannot shake: {exc.text}")


def _profile() -> Profile:
    from .codec import PROFILE

    return PROFILE


def _tracker(device: str) -> Any:
    from .codec import ShakerTracker

    return ShakerTracker(device)


DECLARATIONS = (
    DriverDeclaration(
        "shaker-ref",
        "shaker",
        _driver,
        SimEntry("shaker-ref (reflink reference protocol)", _build, play=_play, news=tool.news),
        tool.decoder("shaker-ref", _profile, _tracker),
    ),
)
