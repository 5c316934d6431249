"""What a driver says of itself: one :class:`DriverDeclaration` per driver.

A driver package declares its drivers in its ``__init__.py`` as ``DECLARATIONS``: for
each, the name a ``[devices.<name>]`` section gives as ``driver =``, the kind of device
it serves (``wheel``, ``shoe``, ``shaker``, ``keypad``, ``board``, ``sign``: the kind
chooses the procedure, and its events are ``tablecommon.events.<kind>``), how to load
its class, and, where it has them, its simulator (``tablectl sim``, ``tablectl demo``,
tests: :class:`SimEntry`) and its capture decoder (``tablectl decode``:
:class:`DecoderEntry`). :mod:`drivers.registry` is built from the declarations; a
driver from outside the packages (a test's toy driver, a vendor's plug-in) is added
with :func:`drivers.registry.register`.

Everything a declaration names is loaded when it is first used: declaring costs an
import of the package's ``__init__`` only.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from .testing import Faults
    from .transport import PtyServer, TcpServer

__all__ = ["DecoderEntry", "DriverDeclaration", "Out", "SimDevice", "SimEntry"]

#: Where a simulator's runner prints a line (``print``, a test's list).
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
    #: be played every interval by :func:`drivers.simulators.run_simulator`).
    start: Callable[[Any, Mapping[str, Any], bool], Awaitable[None]] | None = None
    #: ``play(sim, interval, options, out)``: one game, for ``tablectl sim --interval``.
    play: Callable[[Any, float, Mapping[str, Any], Out], Awaitable[None]] | None = None
    #: ``news(sim, memory)``: lines about what it announced or shows since the last
    #: call (``memory`` is the caller's, one per served simulator).
    news: Callable[[Any, dict[Any, Any]], list[str]] | None = None
    #: The ``tablectl sim`` flags beyond the common ones that it reads (``speed``).
    flags: frozenset[str] = frozenset()


@dataclass(frozen=True)
class DecoderEntry:
    """How to decode one protocol's capture into JSON-ready records."""

    description: str
    #: ``decode(capture, options)``: one record per event; ``options`` are the
    #: ``tablectl decode`` flags given (``tx``, ``garbled``, ``pockets``) and ``device``,
    #: the device name the records carry.
    decode: Callable[[bytes, Mapping[str, Any]], Iterator[dict[str, Any]]]
    #: The ``tablectl decode`` flags it reads; any other given is refused.
    options: frozenset[str] = frozenset()


@dataclass(frozen=True)
class DriverDeclaration:
    """One driver, as its package declares it."""

    #: The ``driver =`` of a ``[devices.<name>]`` section (``cammegh-ss2``).
    name: str
    #: The kind of device it serves (``wheel``...).
    kind: str
    #: The driver class (its ``SETTINGS``, ``check_settings``, ``used_pins``...),
    #: imported when first asked for.
    load: Callable[[], type[Any]]
    simulator: SimEntry | None = None
    decoder: DecoderEntry | None = None
