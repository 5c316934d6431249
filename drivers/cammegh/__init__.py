"""Cammegh SS2 ("Slingshot 2") automatic roulette wheel: codec, rules, driver, simulator.

- :mod:`.codec`: sans-I/O line codec and host commands.
- :mod:`.policy`: the vendor's exception-handling guidance as a table.
- :mod:`.tracker`: lines -> events (states, one result per spin, voids, warnings).
- :mod:`.driver`: :class:`~drivers.cammegh.driver.CammeghDriver` (``cammegh-ss2``).
- :mod:`.sim`: :class:`~drivers.cammegh.sim.CammeghSim`, the wheel on a pty/TCP/pipe.
- :mod:`.decode`: a capture -> the driver's events (``tablectl decode cammegh-ss2``).

Its events are the wheel kind's (:mod:`tablecommon.events.wheel`), with the SS2's fault
packets and self-test results beside them (:mod:`.events`). Protocol notes:
``docs/protocols/cammegh-ss2.md``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any

from ..declaration import DecoderEntry, DriverDeclaration, Out, SimDevice, SimEntry


def _driver() -> type[Any]:
    from .driver import CammeghDriver

    return CammeghDriver


def _build(seed: int | None, opts: Mapping[str, Any]) -> SimDevice:
    from .sim import CammeghSim, SimTiming

    timing = opts.get("timing")
    if not isinstance(timing, SimTiming):
        timing = SimTiming().scaled(1 / float(opts.get("speed", 1.0)))
    return CammeghSim(
        seed=seed,
        timing=timing,
        mode=int(opts.get("mode", 1159)),
        spin=int(opts.get("spin", 1)),
    )


async def _start(sim: Any, opts: Mapping[str, Any], playing: bool) -> None:
    """The wheel idles in state 6 until ``*P 1``, ``power=on`` or being played."""
    if str(opts.get("power", "")).lower() in ("1", "on", "true") or playing:
        await sim.power_on()


async def _play(sim: Any, interval: float, opts: Mapping[str, Any], out: Out) -> None:
    """The croupier's start key: one game (its number is reported by :func:`_news`)."""
    speed = float(opts.get("speed", 1.0))
    with contextlib.suppress(RuntimeError, TimeoutError):
        await sim.spin(timeout=interval + 120 / speed)


def _news(sim: Any, memory: dict[Any, Any]) -> list[str]:
    seen = memory.get("results", 0)
    memory["results"] = len(sim.results)
    return [f"spin {spin:03d}: {number}" for spin, number in sim.results[seen:]]


def _decode(data: bytes, options: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    from .decode import decode_capture

    return decode_capture(
        data,
        pockets=int(options.get("pockets") or 37),
        include_tx=bool(options.get("tx")),
        include_garbled=bool(options.get("garbled")),
    )


DECLARATIONS = (
    DriverDeclaration(
        "cammegh-ss2",
        "wheel",
        _driver,
        SimEntry(
            "Cammegh SS2 roulette wheel (RS-232, 9600 8N1)",
            _build,
            _start,
            _play,
            _news,
            flags=frozenset({"speed"}),
        ),
        DecoderEntry(
            "Cammegh SS2 status/result lines -> wheel events",
            _decode,
            frozenset({"tx", "garbled", "pockets"}),
        ),
    ),
)
