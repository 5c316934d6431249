"""The reflink devices' entries for ``tablectl sim`` and ``tablectl decode``.

:data:`SIMULATORS` maps a driver name to a factory of its simulator (served, started
and played by :mod:`drivers.simulators`, the one runner of every simulator);
:data:`DECODERS` maps a driver name to its capture decoder (JSON-ready records).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from .decode import decoder_for
from .sim import Simulator


def _shoe(seed: int | None, opts: Mapping[str, Any]) -> Simulator:
    from ..shoe.sim import ShoeSimulator

    return ShoeSimulator(decks=int(opts.get("decks", 8)), seed=seed)


def _shaker(seed: int | None, opts: Mapping[str, Any]) -> Simulator:
    from ..shaker.sim import ShakerSimulator

    return ShakerSimulator(dice=int(opts.get("dice", 3)), seed=seed)


def _board(seed: int | None, opts: Mapping[str, Any]) -> Simulator:
    from ..board.sim import BoardSimulator

    addresses = opts.get("addresses", (1,))
    if isinstance(addresses, str):
        addresses = [int(a) for a in addresses.split(",") if a.strip()]
    return BoardSimulator(addresses)


def _sign(seed: int | None, opts: Mapping[str, Any]) -> Simulator:
    from ..sign.sim import SignSimulator

    return SignSimulator(address=int(opts.get("address", 0)))


#: Driver name -> ``factory(seed, options)`` of its simulator.
SIMULATORS: dict[str, Callable[[int | None, Mapping[str, Any]], Simulator]] = {
    "shoe-ref": _shoe,
    "shoe-ref-usb": _shoe,  # the same protocol, served on a pty or TCP port
    "shaker-ref": _shaker,
    "board-ref": _board,
    "sign-ref": _sign,
}


def _decoder(name: str) -> Callable[[bytes], Iterator[dict[str, Any]]]:
    def decode(data: bytes) -> Iterator[dict[str, Any]]:
        return decoder_for(name)(data)

    return decode


#: Driver name -> ``decode(bytes) -> records`` (a fresh decoder per call).
DECODERS: dict[str, Callable[[bytes], Iterator[dict[str, Any]]]] = {
    name: _decoder(name)
    for name in ("shoe-ref", "shoe-ref-usb", "shaker-ref", "board-ref", "sign-ref")
}
