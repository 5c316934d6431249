"""What the reflink devices' declarations share for ``tablectl sim`` and ``tablectl
decode``: the lines a served simulator prints about what its displays show
(:func:`news`), and the capture decoder of a reflink profile (:func:`decoder`).

Each device package (``drivers/shoe``, ``drivers/shaker``, ``drivers/board``,
``drivers/sign``) declares its own drivers, simulators and decoders with these
(:mod:`drivers.declaration`); :mod:`drivers.simulators` serves them all alike.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from ..base import DeviceEvent
from ..declaration import DecoderEntry
from .messages import Message, Profile

__all__ = ["decoder", "news"]


def news(sim: Any, memory: dict[Any, Any]) -> list[str]:
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


class _Tracker:
    """What a device's tracker offers a decoder: frames in, the driver's events out."""

    def apply(self, msg: Message, wire: bytes) -> Sequence[DeviceEvent]:
        return []


def decoder(
    name: str,
    profile: Callable[[], Profile],
    tracker: Callable[[str], Any] | None = None,
) -> DecoderEntry:
    """The decoder of driver ``name``'s captures: every frame of its reflink
    ``profile``; a device's events through a fresh ``tracker(device)`` per capture
    (sequence and duplicate checks apply as in the driver), none for an output device."""

    def decode(data: bytes, options: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
        from .decode import decode_capture

        device = str(options.get("device") or "")
        events = tracker(device) if tracker is not None else _Tracker()
        return decode_capture(profile(), events.apply, data, device)

    return DecoderEntry(f"{name} (reflink frames)", decode)
