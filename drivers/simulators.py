"""Every device simulator by driver name, and the one way to serve and run one.

:data:`SIMULATORS` maps a driver name (the ``driver =`` of ``[devices.<name>]``) to a
:class:`SimEntry`: how to build its simulator from a seed and options, what it does
once served (the wheel powers on), how to play it once (the wheel spins, the shoe
deals, the shaker shakes) and what to report of what it announced or shows. Add a
device by adding an entry.

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
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from .reflink import tool as reflink_tool
from .reflink.device import Refuse
from .reflink.sim import Simulator
from .testing import Faults
from .transport import PtyServer, TcpServer

__all__ = ["SIMULATORS", "ServedSim", "SimDevice", "SimEntry", "run_simulator", "serve_simulator"]

Out = Callable[[str], None]


class SimDevice(Protocol):
    """What every simulator offers: fault knobs, serving, closing."""

    faults: Faults

    async def serve_pty(self, link: str | Path | None = None) -> PtyServer: ...

    async def serve_tcp(self, *, host: str = ..., port: int = ...) -> TcpServer: ...

    async def close(self) -> None: ...


@dataclass(frozen=True)
class SimEntry:
    """How to build, start, play and watch one driver's simulator."""

    description: str
    #: ``build(seed, options)``: a new simulator, not yet served.
    build: Callable[[int | None, Mapping[str, Any]], SimDevice]
    #: ``start(sim, options, playing)``: what it does once served (``playing``: it will
    #: be played every interval by :func:`run_simulator`).
    start: Callable[[Any, Mapping[str, Any], bool], Awaitable[None]] | None = None
    #: ``play(sim, interval, options, out)``: one game, for ``tablectl sim --interval``.
    play: Callable[[Any, float, Mapping[str, Any], Out], Awaitable[None]] | None = None
    #: ``news(sim, memory)``: lines about what it announced or shows since the last
    #: call (``memory`` is the caller's, one per served simulator).
    news: Callable[[Any, dict[Any, Any]], list[str]] | None = None


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
    entry = SIMULATORS.get(name)
    if entry is None:
        raise ValueError(f"no simulator for driver {name!r}; known: {', '.join(SIMULATORS)}")
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


# --------------------------------------------------------------------------- cammegh-ss2


def _build_cammegh(seed: int | None, opts: Mapping[str, Any]) -> SimDevice:
    from .cammegh.sim import CammeghSim, SimTiming

    timing = opts.get("timing")
    if not isinstance(timing, SimTiming):
        timing = SimTiming().scaled(1 / float(opts.get("speed", 1.0)))
    return CammeghSim(
        seed=seed,
        timing=timing,
        mode=int(opts.get("mode", 1159)),
        spin=int(opts.get("spin", 1)),
    )


async def _start_cammegh(sim: Any, opts: Mapping[str, Any], playing: bool) -> None:
    """The wheel idles in state 6 until ``*P 1``, ``power=on`` or being played."""
    if str(opts.get("power", "")).lower() in ("1", "on", "true") or playing:
        await sim.power_on()


async def _play_cammegh(sim: Any, interval: float, opts: Mapping[str, Any], out: Out) -> None:
    """The croupier's start key: one game (its number is reported by :func:`_news_cammegh`)."""
    speed = float(opts.get("speed", 1.0))
    with contextlib.suppress(RuntimeError, TimeoutError):
        await sim.spin(timeout=interval + 120 / speed)


def _news_cammegh(sim: Any, memory: dict[Any, Any]) -> list[str]:
    seen = memory.get("results", 0)
    memory["results"] = len(sim.results)
    return [f"spin {spin:03d}: {number}" for spin, number in sim.results[seen:]]


# --------------------------------------------------------------------------- reflink devices


async def _start_shoe(sim: Any, opts: Mapping[str, Any], playing: bool) -> None:
    if playing:
        await sim.shuffle()


async def _play_shoe(sim: Any, interval: float, opts: Mapping[str, Any], out: Out) -> None:
    try:
        if sim.model.remaining == 0:
            await sim.shuffle()
        out(f"dealt {await sim.deal()}")
    except Exception as exc:  # SimError: door open, jam
        out(f"cannot deal: {exc}")


async def _play_shaker(sim: Any, interval: float, opts: Mapping[str, Any], out: Out) -> None:
    try:
        out(f"threw {await sim.throw()}")
    except Refuse as exc:
        out(f"cannot shake: {exc.text}")


def _news_reflink(sim: Simulator, memory: dict[Any, Any]) -> list[str]:
    """What each device's display shows, when it changed (boards, signs)."""
    lines = []
    for addr, unit in sim.units.items():
        m: Any = unit.model
        now = (
            m.snapshot()
            if hasattr(m, "snapshot")
            else (m.display() if hasattr(m, "display") else None)
        )
        if now is not None and memory.get(addr) != now:
            memory[addr] = now
            lines.append(f"address {addr}: {now}")
    return lines


def _reflink_entry(name: str) -> SimEntry:
    kind = name.split("-", 1)[0]
    return SimEntry(
        f"{name} (reflink reference protocol)",
        reflink_tool.SIMULATORS[name],
        start=_start_shoe if kind == "shoe" else None,
        play={"shoe": _play_shoe, "shaker": _play_shaker}.get(kind),
        news=_news_reflink,
    )


#: Driver name -> simulator entry. Append yours.
SIMULATORS: dict[str, SimEntry] = {
    "cammegh-ss2": SimEntry(
        "Cammegh SS2 roulette wheel (RS-232, 9600 8N1)",
        _build_cammegh,
        start=_start_cammegh,
        play=_play_cammegh,
        news=_news_cammegh,
    ),
    **{name: _reflink_entry(name) for name in reflink_tool.SIMULATORS},
}
