"""Devices described, not coded: a device that speaks text lines (serial, USB serial,
TCP), its protocol written as a file (``docs/protocols/line-protocol.md``).

- :mod:`.spec`, :mod:`.load`: the file's model, read and checked (every problem with
  its line); :mod:`.rules` (patterns -> events, the matcher, the examples' check),
  :mod:`.fields` (conversions), :mod:`.patterns` (compiled with limits),
  :mod:`.commands` (what the host sends), :mod:`.flags` (a wheel's warning bits),
  :mod:`.kinds` (the events of each kind and their fields);
- :mod:`.framing` (bytes -> lines), the trackers (lines -> the kind's events:
  :mod:`.wheel` with :mod:`.results`, :mod:`.counted`), :mod:`.tracker`;
- :mod:`.driver` (``line-wheel``, ``line-shoe``, ``line-shaker``), :mod:`.desk` (its
  commands), :mod:`.decode` (``tablectl decode --protocol``), :mod:`.sim` (a capture
  replayed as a device: ``tablectl sim --protocol --capture``);
- ``protocols/``: the Cammegh SS2 as a file (``cammegh-ss2.toml``), and example files
  of a shoe and a shaker (the simulators' defaults).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ..declaration import DecoderEntry, DriverDeclaration, Out, SimDevice, SimEntry

#: The files shipped with the package (``protocols/``).
PROTOCOLS = Path(__file__).resolve().parent / "protocols"

#: The file each kind's simulator and decoder read when none is given.
DEFAULT_PROTOCOL = {
    "wheel": PROTOCOLS / "cammegh-ss2.toml",
    "shoe": PROTOCOLS / "example-shoe.toml",
    "shaker": PROTOCOLS / "example-shaker.toml",
}

_CLASSES = {"wheel": "LineWheelDriver", "shoe": "LineShoeDriver", "shaker": "LineShakerDriver"}


def _loader(kind: str) -> Any:
    def load() -> type[Any]:
        from . import driver

        cls: type[Any] = getattr(driver, _CLASSES[kind])
        return cls

    return load


def _protocol(kind: str, options: Mapping[str, Any]) -> Any:
    from .load import load_protocol
    from .spec import ProtocolInvalid

    protocol = load_protocol(str(options.get("protocol") or DEFAULT_PROTOCOL[kind]))
    if protocol.kind != kind:
        raise ProtocolInvalid(protocol.source, [
            f"{protocol.source}: it describes a {protocol.kind}, and line-{kind} serves a "
            f"{kind}: use line-{protocol.kind}"
        ])  # fmt: skip
    return protocol


def _builder(kind: str) -> Any:
    def build(seed: int | None, options: Mapping[str, Any]) -> SimDevice:
        from .sim import build as build_sim

        return build_sim(_protocol(kind, options), options)

    return build


async def _play(sim: Any, interval: float, options: Mapping[str, Any], out: Out) -> None:
    """A replay plays by itself: nothing to start."""


def _news(sim: Any, memory: dict[Any, Any]) -> list[str]:
    seen_r, seen_h = memory.get("results", 0), memory.get("heard", 0)
    memory["results"], memory["heard"] = len(sim.results), len(sim.heard)
    heard = [
        f"host sent {name if name != '?' else 'a line no command of the file makes'}: "
        f"{line.decode('latin-1')!r}"
        for name, line in sim.heard[seen_h:]
    ]
    return [*sim.results[seen_r:], *heard]


def _decoder(kind: str) -> Any:
    def decode(data: bytes, options: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
        from .decode import decode_capture

        extra = {"pockets": int(options["pockets"])} if options.get("pockets") else {}
        return decode_capture(
            data, _protocol(kind, options), device=kind,
            include_tx=bool(options.get("tx")), include_garbled=bool(options.get("garbled")),
            **extra,
        )  # fmt: skip

    return decode


def _declare(kind: str) -> DriverDeclaration:
    name = f"line-{kind}"
    return DriverDeclaration(
        name,
        kind,
        _loader(kind),
        SimEntry(
            f"a capture replayed as a {kind} speaking text lines (--protocol FILE, --capture FILE)",
            _builder(kind),
            play=_play,
            news=_news,
            flags=frozenset({"speed", "protocol", "capture"}),
        ),
        DecoderEntry(
            f"text lines read by a line-protocol file (--protocol FILE) -> {kind} events",
            _decoder(kind),
            frozenset({"tx", "garbled", "protocol", *(("pockets",) if kind == "wheel" else ())}),
        ),
    )


DECLARATIONS = tuple(_declare(kind) for kind in ("wheel", "shoe", "shaker"))
