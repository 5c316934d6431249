"""``tablectl decode --protocol FILE CAPTURE``: a capture read through a line-protocol
file, as the driver would read it: the kind's events as JSON-ready dicts.

As ``tablectl decode cammegh-ss2`` does (``drivers/cammegh/decode.py``): a frame log's
lines carry their times (grace periods are measured as they happened); a raw capture
has none, and its state lines are then ``[framing] status_every_ms`` apart. Each
``# session`` of a frame log is a new run of the host: what the host measured starts
again (the previous line, states, warning bits), what the device carries on stays
(:meth:`~.wheel.LineWheel.new_session`). A result still gathering its lines when the
capture ends is reported, never taken.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..capture import is_frame_log, read_capture
from .framing import LineSplitter
from .rules import Line, Matcher, Unmatched
from .spec import Protocol
from .tracker import make_tracker

__all__ = ["decode_capture"]


def decode_capture(
    data: bytes,
    protocol: Protocol,
    *,
    device: str = "",
    include_tx: bool = False,
    include_garbled: bool = False,
    **tracker_options: Any,
) -> Iterator[dict[str, Any]]:
    """Yield one dict per event (``kind`` names the event class)."""
    device = device or protocol.kind
    framed = is_frame_log(data)
    tracker = make_tracker(protocol, device, **tracker_options)
    matcher = Matcher(protocol)
    splitter = LineSplitter(protocol.framing)
    end = protocol.framing.end or b"\n"
    clock = 0.0
    last: dict[str, Any] = {"t": None, "session": None}
    for rec in read_capture(data):
        where: dict[str, Any] = {"t": rec.time, "session": rec.session}
        if rec.line_no:
            where["line"] = rec.line_no
        if rec.direction == "SESSION":
            for event in tracker.new_session():
                yield {**event.to_json(), **last}
            splitter.reset()
            continue
        last = where
        if rec.direction == "TX":
            if include_tx:
                yield {"kind": "TX", "device": device, "raw": rec.data.decode("latin-1"), **where}
            continue
        for piece in splitter.feed(rec.data + end if framed else rec.data):
            item = piece if isinstance(piece, Unmatched) else matcher.match(piece)
            if isinstance(item, Unmatched):
                if include_garbled:
                    yield {"kind": "Garbled", "device": device, "raw": item.raw.decode("latin-1"),
                           "reason": item.reason, **where}  # fmt: skip
                continue
            now = rec.time
            if now is None:
                if item.event == "game_state":
                    clock += protocol.framing.status_every
                now = clock
            yield from _records(tracker.feed(item, now), where)
    for event in tracker.end():
        yield {**event.to_json(), **last}


def _records(events: list[Any], where: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for event in events:
        yield {**event.to_json(), **where}


def lines_of(data: bytes, protocol: Protocol) -> Iterator[Line | Unmatched]:
    """Every RX line of a capture, read by the file's rules (tests, the simulator)."""
    framed = is_frame_log(data)
    matcher = Matcher(protocol)
    splitter = LineSplitter(protocol.framing)
    end = protocol.framing.end or b"\n"
    for rec in read_capture(data):
        if rec.direction != "RX":
            continue
        for piece in splitter.feed(rec.data + end if framed else rec.data):
            yield piece if isinstance(piece, Unmatched) else matcher.match(piece)
