"""Every device simulator by driver name, and the one way to serve and run one.

A driver declares its simulator (:class:`~drivers.declaration.SimEntry`, in its
:class:`~drivers.declaration.DriverDeclaration`): how to build it from a seed and
options, what it does once served (the wheel powers on), how to play it once (the
wheel spins, the shoe deals, the shaker shakes) and what to report of what it
announced or shows. :func:`simulated` lists the drivers that have one.

- :func:`serve_simulator` builds one and serves it on a pseudo-terminal (or a TCP
  port): ``tablectl demo`` starts its devices with it, so do tests;
- :func:`run_simulator` is ``tablectl sim``: serve, print where to connect, play
  every ``interval`` seconds and print what happens, until ``stop`` is set.

Options come as strings from ``tablectl sim --option KEY=VALUE`` and as values from
programs: ``speed`` and ``mode``, ``spin``, ``power`` (``on``), ``timing`` (a
:class:`~drivers.cammegh.sim.SimTiming`) for the wheel; ``decks`` (shoe); ``dice``
(shaker); ``addresses`` (board, ``1,2``); ``address`` (sign); ``link`` (also a symlink
at this path to the pseudo-terminal).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from . import registry
from .declaration import Out, SimDevice, SimEntry
from .testing import Faults

__all__ = [
    "ServedSim",
    "SimDevice",
    "SimEntry",
    "run_simulator",
    "serve_simulator",
    "simulated",
    "simulator_of",
]


def simulated() -> dict[str, SimEntry]:
    """Driver name -> its simulator, for every declared driver that has one."""
    return {n: d.simulator for n, d in registry.declarations().items() if d.simulator}


def simulator_of(name: str) -> SimEntry:
    """The simulator of driver ``name`` (ValueError naming the drivers that have one)."""
    entry = simulated().get(name)
    if entry is None:
        raise ValueError(f"no simulator for driver {name!r}; known: {', '.join(simulated())}")
    return entry


@dataclass
class ServedSim:
    """A simulator being served; a driver connects to :attr:`where`."""

    name: str
    entry: SimEntry
    sim: Any
    #: The ``port`` setting of the driver: the pseudo-terminal's path or ``socket://``.
    where: str
    options: Mapping[str, Any]
    _memory: dict[Any, Any] = field(default_factory=dict)

    async def start(self, *, playing: bool = False) -> None:
        if self.entry.start is not None:
            await self.entry.start(self.sim, self.options, playing)

    async def play(self, interval: float, out: Out) -> None:
        if self.entry.play is not None:
            await self.entry.play(self.sim, interval, self.options, out)

    def news(self) -> list[str]:
        return [] if self.entry.news is None else self.entry.news(self.sim, self._memory)

    async def close(self) -> None:
        await self.sim.close()


async def serve_simulator(
    name: str,
    *,
    seed: int | None = None,
    options: Mapping[str, Any] | None = None,
    faults: Faults | None = None,
    tcp: int | None = None,
) -> ServedSim:
    """Build the simulator of driver ``name`` and serve it (pty, or TCP when ``tcp`` is
    a port, 0 for any free one). Call :meth:`ServedSim.start` to set it going."""
    entry = simulator_of(name)
    opts = dict(options or {})
    sim = entry.build(seed, opts)
    if faults is not None:
        sim.faults = faults
    try:
        if tcp is not None:
            where = (await sim.serve_tcp(port=tcp)).url
        else:
            link = opts.get("link")
            where = (await sim.serve_pty(str(link) if link else None)).path
    except BaseException:
        await sim.close()
        raise
    return ServedSim(name, entry, sim, where, opts)


async def run_simulator(
    name: str,
    *,
    faults: Faults | None = None,
    tcp: int | None = None,
    seed: int | None = None,
    interval: float | None = None,
    options: Mapping[str, Any] | None = None,
    out: Out = print,
    stop: asyncio.Event | None = None,
) -> None:
    """``tablectl sim``: serve until ``stop`` is set (or cancelled); with ``interval``,
    play the device every so many seconds. Prints where to connect first."""
    served = await serve_simulator(name, seed=seed, options=options, faults=faults, tcp=tcp)
    stop = stop or asyncio.Event()
    try:
        out(
            f'{name} simulator: connect the driver to port = "{served.where}" '
            f"(faults: {served.sim.faults.describe()})"
        )
        await served.start(playing=bool(interval))
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(interval or 0.5):
                    await stop.wait()
            if interval and not stop.is_set():
                await served.play(interval, out)
            for line in served.news():
                out(line)
    finally:
        await served.close()
