"""``tablectl decode cammegh-ss2``: a capture -> the driver's events as JSON-ready dicts.

The same :class:`~drivers.cammegh.tracker.WheelTracker` as the live driver, fed with
the capture's own timestamps (so grace periods are measured as they happened).
A raw byte capture has no times: status lines are then assumed 500 ms apart (the
wheel's automatic status cadence), which is what the grace periods count in.
Each ``# session`` of a frame log starts a fresh tracker (a new run of the host: its
states, flags and timers start again), handed what the wheel itself carries on
(:meth:`~drivers.cammegh.tracker.WheelTracker.hand_over`): a number still gathering
its lines at the end of a session is completed by the next session's first status
line if that line is the next game's showing it (spin + 1: the wheel repeats the last
winning number until the next result), as on one stream. A number still waiting when
the capture ends is reported (``RESULT_UNCONFIRMED``), not taken.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..capture import is_frame_log, read_capture
from .codec import Garbled, LineDecoder, Status
from .tracker import WheelTracker

__all__ = ["decode_capture"]

STATUS_PERIOD = 0.5


def decode_capture(
    data: bytes,
    *,
    device: str = "wheel",
    pockets: int = 37,
    include_tx: bool = False,
    include_garbled: bool = False,
) -> Iterator[dict[str, Any]]:
    """Yield one dict per event (``kind`` names the event class)."""
    framed = is_frame_log(data)
    tracker = WheelTracker(device, pockets=pockets)
    decoder = LineDecoder()
    synthetic = 0.0
    last: dict[str, Any] = {"t": None, "session": None}  # where the previous record was
    for rec in read_capture(data):
        where: dict[str, Any] = {"t": rec.time, "session": rec.session}
        if rec.line_no:
            where["line"] = rec.line_no
        if rec.direction == "SESSION":
            successor = WheelTracker(device, pockets=pockets)
            for event in tracker.hand_over(successor):  # a number given up in the session
                yield {**event.to_json(), **last}
            tracker, decoder = successor, LineDecoder()
            continue
        last = where
        if rec.direction == "TX":
            if include_tx:
                yield {"kind": "TX", "device": device, "raw": rec.data.decode("latin-1"), **where}
            continue
        for item in decoder.feed(rec.data + b"\r\n" if framed else rec.data):
            if isinstance(item, Garbled):
                if include_garbled:
                    yield {
                        "kind": "Garbled",
                        "device": device,
                        "raw": item.raw.decode("latin-1"),
                        "reason": item.reason,
                        **where,
                    }
                continue
            if rec.time is not None:
                now = rec.time
            else:
                if isinstance(item, Status):
                    synthetic += STATUS_PERIOD
                now = synthetic
            for event in tracker.feed(item, now):
                yield {**event.to_json(), **where}
    for event in tracker.end():
        yield {**event.to_json(), **last}
