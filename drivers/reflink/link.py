"""Reflink link layer (sans-I/O): sequence numbers, acknowledgements, retransmission.

Stop-and-wait ARQ, one DATA frame in flight per sender (the RS-485 bus is
half-duplex, so the host keeps one in flight for the whole bus):

- every DATA frame (unless NOACK) is answered by an ACK carrying the same ``seq``;
  the ACK may carry a reply payload (the answer to a request);
- the sender retransmits the identical frame after ``ack_timeout`` with no ACK; the
  host gives up after ``max_retries`` retransmissions and reports the frame failed;
  a device never drops an event frame and keeps retrying, backing off to
  ``retry_max_interval``;
- the receiver remembers, per peer, the ``(session, seq)`` of the last DATA frame it
  accepted and the ACK it sent: a DATA frame with the same pair is a duplicate, is
  not delivered again, and gets the same ACK again (same reply);
- a change of the peer's ``session`` means the peer restarted (it picks a new random
  session on each start): reported as :class:`PeerRestarted`.

Time is passed in (``now``, seconds, any monotonic origin); nothing here sleeps.
"""

from __future__ import annotations

import collections
import enum
from collections.abc import Callable
from dataclasses import dataclass, field

from .frame import BROADCAST, Frame, FrameDecoder, FrameError, FrameKind


class Role(enum.Enum):
    HOST = "host"
    DEVICE = "device"


@dataclass(frozen=True, slots=True)
class LinkTimers:
    """Retransmission timing (documented defaults in ``docs/protocols/reflink.md``)."""

    ack_timeout: float = 0.1
    max_retries: int = 3
    retry_max_interval: float = 1.0


@dataclass(frozen=True, slots=True)
class Received:
    """A new DATA frame from the peer (never a duplicate)."""

    address: int
    payload: bytes
    frame: Frame
    wire: bytes


@dataclass(frozen=True, slots=True)
class Acked:
    """Our DATA frame ``token`` was acknowledged; ``reply`` is the ACK's payload."""

    token: int
    address: int
    reply: bytes
    wire: bytes


@dataclass(frozen=True, slots=True)
class SendFailed:
    """The host gave up on DATA frame ``token`` (no ACK after every retransmission)."""

    token: int
    address: int
    payload: bytes
    reason: str = "no acknowledgement"


@dataclass(frozen=True, slots=True)
class PeerRestarted:
    address: int
    old_session: int
    new_session: int


@dataclass(frozen=True, slots=True)
class FrameRejected:
    error: FrameError


LinkEvent = Received | Acked | SendFailed | PeerRestarted | FrameRejected

#: Computes the payload of the ACK answering a DATA frame: ``(address, payload) -> reply``.
Responder = Callable[[int, bytes], bytes]


@dataclass(slots=True)
class _Pending:
    token: int
    address: int
    payload: bytes
    noack: bool
    seq: int = -1
    attempts: int = 0
    deadline: float = 0.0
    wire: bytes = b""


@dataclass(slots=True)
class _RxState:
    session: int
    seq: int
    ack_wire: bytes


@dataclass(slots=True)
class LinkCounters:
    tx_data: int = 0
    tx_ack: int = 0
    retransmits: int = 0
    rx_data: int = 0
    rx_ack: int = 0
    duplicates: int = 0
    stale_acks: int = 0
    bad_frames: int = 0
    ignored: int = 0
    failed: int = 0

    def to_json(self) -> dict[str, int]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass(slots=True)
class LinkEndpoint:
    """One end of a reflink link.

    ``role`` HOST talks to one or more devices (by address); DEVICE answers at its
    ``address`` (0x00 point-to-point) and hears broadcasts.
    """

    role: Role
    session: int
    address: int = 0
    timers: LinkTimers = field(default_factory=LinkTimers)
    responder: Responder | None = None
    counters: LinkCounters = field(default_factory=LinkCounters)
    _decoder: FrameDecoder = field(default_factory=FrameDecoder)
    _queue: collections.deque[_Pending] = field(default_factory=collections.deque)
    _inflight: _Pending | None = None
    _next_seq: dict[int, int] = field(default_factory=dict)
    _next_token: int = 1
    _rx: dict[int, _RxState] = field(default_factory=dict)
    _sessions: dict[int, int] = field(default_factory=dict)
    _out: list[tuple[int, bytes]] = field(default_factory=list)
    _events: list[LinkEvent] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not 0 <= self.session <= 0xFFFF:
            raise ValueError(f"session {self.session} outside 0..65535")
        if not 0 <= self.address < BROADCAST:
            raise ValueError(f"address {self.address} outside 0..254")

    # -- outputs -----------------------------------------------------------------
    def take_output(self) -> list[tuple[int, bytes]]:
        """``(address, wire frame)`` to write, in order (each frame complete, delimiters included)."""
        out, self._out = self._out, []
        return out

    def take_events(self) -> list[LinkEvent]:
        out, self._events = self._events, []
        return out

    def next_deadline(self) -> float | None:
        return self._inflight.deadline if self._inflight is not None else None

    @property
    def pending(self) -> int:
        return len(self._queue) + (self._inflight is not None)

    @property
    def peer_sessions(self) -> dict[int, int]:
        return dict(self._sessions)

    # -- inputs ------------------------------------------------------------------
    def send(
        self, payload: bytes, now: float, *, address: int | None = None, noack: bool = False
    ) -> int:
        """Queue a DATA frame; return its token (reported back in Acked/SendFailed)."""
        if self.role is Role.DEVICE:
            address = self.address
        elif address is None:
            raise ValueError("the host must name the device address")
        if address == BROADCAST:
            noack = True
        token = self._next_token
        self._next_token += 1
        Frame(FrameKind.DATA, False, address, 0, 0, payload)  # validate sizes now
        self._queue.append(_Pending(token, address, bytes(payload), noack))
        self._pump(now)
        return token

    def feed(self, data: bytes, now: float) -> None:
        for frame, wire in self._decoder.feed(data):
            self._on_frame(frame, wire, now)
        for err in self._decoder.take_rejected():
            self.counters.bad_frames += 1
            self._events.append(FrameRejected(err))
        self._pump(now)

    def tick(self, now: float) -> None:
        p = self._inflight
        if p is not None and now >= p.deadline:
            if self.role is Role.HOST and p.attempts > self.timers.max_retries:
                self._inflight = None
                self.counters.failed += 1
                self._events.append(SendFailed(p.token, p.address, p.payload))
            else:
                self.counters.retransmits += 1
                self._transmit(p, now)
        self._pump(now)

    def abort_all(self, reason: str) -> None:
        """Fail every queued and in-flight frame (the host's port went away)."""
        pending = ([self._inflight] if self._inflight is not None else []) + list(self._queue)
        self._inflight = None
        self._queue.clear()
        for p in pending:
            self.counters.failed += 1
            self._events.append(SendFailed(p.token, p.address, p.payload, reason))

    # -- internals ---------------------------------------------------------------
    def _pump(self, now: float) -> None:
        while self._inflight is None and self._queue:
            p = self._queue.popleft()
            if p.noack:
                frame = Frame(
                    FrameKind.DATA,
                    self.role is Role.DEVICE,
                    p.address,
                    self.session,
                    0,
                    p.payload,
                    noack=True,
                )
                self._out.append((p.address, frame.to_wire()))
                self.counters.tx_data += 1
                continue
            seq = self._next_seq.get(p.address, 0)
            self._next_seq[p.address] = (seq + 1) & 0xFF
            p.seq = seq
            p.wire = Frame(
                FrameKind.DATA, self.role is Role.DEVICE, p.address, self.session, seq, p.payload
            ).to_wire()
            self._inflight = p
            self._transmit(p, now)

    def _transmit(self, p: _Pending, now: float) -> None:
        p.attempts += 1
        interval = self.timers.ack_timeout
        if self.role is Role.DEVICE:
            interval = min(
                self.timers.ack_timeout
                * 2 ** min(30, max(0, p.attempts - 1 - self.timers.max_retries)),
                self.timers.retry_max_interval,
            )
        p.deadline = now + interval
        self._out.append((p.address, p.wire))
        self.counters.tx_data += 1

    def _on_frame(self, frame: Frame, wire: bytes, now: float) -> None:
        if self.role is Role.HOST:
            if not frame.from_device:
                self.counters.ignored += 1  # our own echo on a half-duplex bus
                return
            peer = frame.address
        else:
            if frame.from_device or frame.address not in (self.address, BROADCAST):
                self.counters.ignored += 1  # another device's traffic
                return
            peer = 0
        old = self._sessions.get(peer)
        if old is not None and old != frame.session:
            self._events.append(PeerRestarted(peer, old, frame.session))
        self._sessions[peer] = frame.session
        if frame.kind is FrameKind.DATA:
            self._on_data(frame, wire, peer)
        else:
            self._on_ack(frame, wire)

    def _on_data(self, frame: Frame, wire: bytes, peer: int) -> None:
        if frame.noack or frame.address == BROADCAST:
            self.counters.rx_data += 1
            if self.responder is not None:
                self.responder(frame.address, frame.payload)
            self._events.append(Received(frame.address, frame.payload, frame, wire))
            return
        st = self._rx.get(peer)
        if st is not None and st.session == frame.session and st.seq == frame.seq:
            self.counters.duplicates += 1
            self.counters.tx_ack += 1
            self._out.append((frame.address, st.ack_wire))
            return
        self.counters.rx_data += 1
        reply = self.responder(frame.address, frame.payload) if self.responder is not None else b""
        ack = Frame(
            FrameKind.ACK, self.role is Role.DEVICE, frame.address, self.session, frame.seq, reply
        )
        ack_wire = ack.to_wire()
        self._rx[peer] = _RxState(frame.session, frame.seq, ack_wire)
        self.counters.tx_ack += 1
        self._out.append((frame.address, ack_wire))
        self._events.append(Received(frame.address, frame.payload, frame, wire))

    def _on_ack(self, frame: Frame, wire: bytes) -> None:
        p = self._inflight
        if p is None or p.address != frame.address or p.seq != frame.seq:
            self.counters.stale_acks += 1
            return
        self.counters.rx_ack += 1
        self._inflight = None
        self._events.append(Acked(p.token, p.address, frame.payload, wire))
