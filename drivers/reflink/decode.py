"""``tablectl decode shoe-ref FILE`` & co.: a reflink capture as JSON-lines events.

Input is either raw bytes as read from the port, or the frame-log text format
(``time<TAB>RX|TX<TAB>frame`` per line, non-printables escaped, as
:meth:`drivers.base.FrameLog.dump` writes it). Every valid frame is decoded:
device events become the driver's typed events (through the same tracker the
driver uses, so sequence and duplicate checks apply); host requests and the
replies in ACKs are listed as ``Request`` / ``Reply``; invalid frames as
``BadFrame``. Retransmissions (same direction, address, session and seq) are
shown once, as the link layer would deliver them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ..base import DeviceEvent
from .frame import Frame, FrameDecoder, FrameKind
from .messages import Message, MessageError, Profile, Sender

_LINE = re.compile(rb"^\s*[0-9.]+\t(RX|TX)\t(.*)$")


def capture_bytes(data: bytes) -> bytes:
    """The byte stream of a capture: raw bytes as they are, frame-log lines unescaped."""
    lines = data.splitlines()
    if lines and all(_LINE.match(ln) for ln in lines if ln.strip()):
        out = bytearray()
        for ln in lines:
            m = _LINE.match(ln)
            if m is not None:
                out += (
                    m.group(2)
                    .decode("ascii")
                    .encode("latin-1")
                    .decode("unicode_escape")
                    .encode("latin-1")
                )
        return bytes(out)
    return data


def _fields(msg: Message) -> dict[str, Any]:
    return {k: (v.hex() if isinstance(v, bytes) else v) for k, v in msg.values.items()}


def decode_capture(
    profile: Profile,
    apply: Callable[[Message, bytes], Sequence[DeviceEvent]],
    data: bytes,
    device: str = "",
) -> Iterator[dict[str, Any]]:
    """JSON-ready records for every frame of a capture of one reflink profile."""
    dec = FrameDecoder()
    last: dict[tuple[bool, int], tuple[int, int]] = {}
    stream = capture_bytes(data)
    pieces = [p + b"\x00" for p in stream.split(b"\x00")]
    for piece in pieces:
        for frame, wire in dec.feed(piece):
            yield from _records(profile, apply, frame, wire, last, device)
        for err in dec.take_rejected():
            yield {"kind": "BadFrame", "code": err.code, "error": str(err), "raw": err.raw.hex()}


def _records(
    profile: Profile,
    apply: Callable[[Message, bytes], Sequence[DeviceEvent]],
    frame: Frame,
    wire: bytes,
    last: dict[tuple[bool, int], tuple[int, int]],
    device: str,
) -> Iterator[dict[str, Any]]:
    key = (frame.from_device, frame.address)
    if frame.kind is FrameKind.DATA and not frame.noack:
        if last.get(key) == (frame.session, frame.seq):
            return  # a retransmission
        last[key] = (frame.session, frame.seq)
    if not frame.payload:
        return
    sender = Sender.DEVICE if frame.from_device else Sender.HOST
    try:
        msg = profile.decode(frame.payload, sender)
    except MessageError as exc:
        yield {"kind": "BadMessage", "code": exc.code, "error": str(exc), "raw": wire.hex()}
        return
    base = {"address": frame.address, "message": msg.name, **_fields(msg)}
    if frame.kind is FrameKind.ACK:
        yield {"kind": "Reply", **base}
    elif not frame.from_device:
        yield {"kind": "Request", **base}
    else:
        try:
            events = apply(msg, wire)
        except MessageError as exc:
            yield {"kind": "BadMessage", "code": exc.code, "error": str(exc), "raw": wire.hex()}
            return
        for ev in events:
            yield ev.to_json() | ({"device": device} if device else {})
