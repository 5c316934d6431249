"""The jackpot sign over the reference protocol (reflink profile 4, ``sign-ref``).

- :mod:`.codec`: the profile's messages; :mod:`.model`, :mod:`.sim`: the simulated sign;
- :mod:`.driver`: :class:`~drivers.sign.driver.SignDriver`.

Protocol: ``docs/protocols/sign.md``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..declaration import DriverDeclaration, SimDevice, SimEntry
from ..reflink import tool
from ..reflink.messages import Profile


def _driver() -> type[Any]:
    from .driver import SignDriver

    return SignDriver


def _build(seed: int | None, opts: Mapping[str, Any]) -> SimDevice:
    from .sim import SignSimulator

    return SignSimulator(address=int(opts.get("address", 0)))


def _profile() -> Profile:
    from .codec import PROFILE

    return PROFILE


DECLARATIONS = (
    DriverDeclaration(
        "sign-ref",
        "sign",
        _driver,
        SimEntry("sign-ref (reflink reference protocol)", _build, news=tool.news),
        tool.decoder("sign-ref", _profile),
    ),
)
