"""The reflink devices' entries for ``tablectl sim`` and ``tablectl decode``.

:data:`SIMULATORS` maps a driver name to a factory of its simulator;
:func:`run_simulator` serves one on a pseudo-terminal (or a TCP port), prints
where to connect, and, when ``interval`` is given, plays the device (the shoe
deals, the shaker shakes) while printing what output devices show.
:data:`DECODERS` maps a driver name to its capture decoder (JSON-ready records).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from ..testing import Faults
from .decode import decoder_for
from .device import Refuse
from .sim import Simulator


def _shoe(seed: int | None, opts: dict[str, Any]) -> Simulator:
    from ..shoe.sim import ShoeSimulator

    return ShoeSimulator(decks=int(opts.get("decks", 8)), seed=seed)


def _shaker(seed: int | None, opts: dict[str, Any]) -> Simulator:
    from ..shaker.sim import ShakerSimulator

    return ShakerSimulator(dice=int(opts.get("dice", 3)), seed=seed)


def _board(seed: int | None, opts: dict[str, Any]) -> Simulator:
    from ..board.sim import BoardSimulator

    addresses = opts.get("addresses", (1,))
    if isinstance(addresses, str):
        addresses = [int(a) for a in addresses.split(",") if a.strip()]
    return BoardSimulator(addresses)


def _sign(seed: int | None, opts: dict[str, Any]) -> Simulator:
    from ..sign.sim import SignSimulator

    return SignSimulator(address=int(opts.get("address", 0)))


#: Driver name -> ``factory(seed, options)`` of its simulator.
SIMULATORS: dict[str, Callable[[int | None, dict[str, Any]], Simulator]] = {
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


async def run_simulator(
    name: str,
    *,
    faults: Faults | None = None,
    tcp: int | None = None,
    seed: int | None = None,
    interval: float | None = None,
    options: dict[str, Any] | None = None,
    out: Callable[[str], None] = print,
    stop: asyncio.Event | None = None,
) -> None:
    """Serve the simulator of driver ``name`` until ``stop`` is set (or cancelled)."""
    sim = SIMULATORS[name](seed, dict(options or {}))
    if faults is not None:
        sim.faults = faults
    if tcp is not None:
        server = await sim.serve_tcp(port=tcp)
        where = server.url
    else:
        pty = await sim.serve_pty()
        where = pty.path
    out(
        f'{name} simulator: connect the driver to port = "{where}" (faults: {sim.faults.describe()})'
    )
    stop = stop or asyncio.Event()
    try:
        await _play(name, sim, interval, out, stop)
    finally:
        await sim.close()


async def _play(
    name: str,
    sim: Simulator,
    interval: float | None,
    out: Callable[[str], None],
    stop: asyncio.Event,
) -> None:
    model: Any = getattr(sim, "model", None)
    shown: dict[int, Any] = {}
    if name.startswith("shoe") and interval:
        await sim.shuffle()  # type: ignore[attr-defined]
    while not stop.is_set():
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(interval or 0.5):
                await stop.wait()
        if interval and name.startswith("shoe"):
            try:
                if model.remaining == 0:
                    await sim.shuffle()  # type: ignore[attr-defined]
                out(f"dealt {await sim.deal()}")  # type: ignore[attr-defined]
            except Exception as exc:  # SimError: door open, jam
                out(f"cannot deal: {exc}")
        elif interval and name.startswith("shaker"):
            try:
                out(f"threw {await sim.throw()}")  # type: ignore[attr-defined]
            except Refuse as exc:
                out(f"cannot shake: {exc.text}")
        for addr, unit in sim.units.items():
            m: Any = unit.model
            now = (
                m.snapshot()
                if hasattr(m, "snapshot")
                else (m.display() if hasattr(m, "display") else None)
            )
            if now is not None and shown.get(addr) != now:
                shown[addr] = now
                out(f"address {addr}: {now}")
