"""Reflink link layer (sans-I/O): acknowledgement, retransmission, duplicate
suppression, restarts, multi-drop addressing, on a simulated wire in virtual time."""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, field

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from drivers.reflink.frame import BROADCAST, Frame, FrameKind, decode_frame
from drivers.reflink.link import (
    Acked,
    FrameRejected,
    LinkEndpoint,
    LinkEvent,
    LinkTimers,
    PeerRestarted,
    Received,
    Role,
    SendFailed,
)

TIMERS = LinkTimers(ack_timeout=0.1, max_retries=3, retry_max_interval=1.0)


@dataclass
class Wire:
    """One direction of a wire: whole frames dropped with ``drop``, random bytes
    inserted with ``garbage`` per byte, delivered ``chunk`` bytes at a time."""

    rng: random.Random
    drop: float = 0.0
    garbage: float = 0.0
    chunk: int = 0
    frames: int = 0

    def carry(self, frames: list[tuple[int, bytes]]) -> list[bytes]:
        out = bytearray()
        for _addr, wire in frames:
            self.frames += 1
            if self.rng.random() < self.drop:
                continue
            for b in wire:
                if self.rng.random() < self.garbage:
                    out.append(self.rng.randrange(256))
                out.append(b)
        data = bytes(out)
        if not self.chunk:
            return [data] if data else []
        return [data[i : i + self.chunk] for i in range(0, len(data), self.chunk)]


@dataclass
class Net:
    """A host and devices on one shared medium (everyone hears everyone)."""

    host: LinkEndpoint
    devices: list[LinkEndpoint]
    up: Wire  # device -> host
    down: Wire  # host -> devices
    now: float = 0.0
    host_events: list[LinkEvent] = field(default_factory=list)
    dev_events: dict[int, list[LinkEvent]] = field(default_factory=dict)

    def run(self, until: float = 60.0) -> None:
        """Move frames and fire timers until nothing is pending (or ``until``)."""
        for _ in range(100_000):
            moved = False
            out = self.host.take_output()
            if out:
                moved = True
                for chunk in self.down.carry(out):
                    for d in self.devices:
                        d.feed(chunk, self.now)
            for d in self.devices:
                dout = d.take_output()
                if dout:
                    moved = True
                    for chunk in self.up.carry(dout):
                        self.host.feed(chunk, self.now)
                        for other in self.devices:
                            if other is not d:
                                other.feed(chunk, self.now)
            self.host_events += self.host.take_events()
            for d in self.devices:
                self.dev_events.setdefault(d.address, []).extend(d.take_events())
            if moved:
                continue
            deadlines = [
                x for x in (e.next_deadline() for e in (self.host, *self.devices)) if x is not None
            ]
            if not deadlines or self.now > until:
                return
            self.now = max(self.now, min(deadlines))
            self.host.tick(self.now)
            for d in self.devices:
                d.tick(self.now)
        raise AssertionError("network did not settle")


def make_net(
    seed: int = 0,
    *,
    drop: float = 0.0,
    garbage: float = 0.0,
    chunk: int = 0,
    addresses: tuple[int, ...] = (0,),
    responder: bool = True,
) -> Net:
    rng = random.Random(seed)
    devices = [
        LinkEndpoint(
            Role.DEVICE,
            0x2000 + a,
            address=a,
            timers=TIMERS,
            responder=(lambda addr, p: b"re:" + p) if responder else None,
        )
        for a in addresses
    ]
    host = LinkEndpoint(Role.HOST, 0x1000, timers=TIMERS)
    return Net(host, devices, Wire(rng, drop, garbage, chunk), Wire(rng, drop, garbage, chunk))


def of(events: list[LinkEvent], kind: type) -> list:  # type: ignore[type-arg]
    return [e for e in events if isinstance(e, kind)]


def test_request_is_acknowledged_with_the_reply() -> None:
    net = make_net()
    token = net.host.send(b"hello", net.now, address=0)
    net.run()
    acks = of(net.host_events, Acked)
    assert [(a.token, a.reply) for a in acks] == [(token, b"re:hello")]
    assert [r.payload for r in of(net.dev_events[0], Received)] == [b"hello"]


def test_host_gives_up_after_max_retries() -> None:
    net = make_net(drop=1.0)
    token = net.host.send(b"x", 0.0, address=0)
    net.run()
    assert net.down.frames == 1 + TIMERS.max_retries  # first try + retransmissions
    assert [f.token for f in of(net.host_events, SendFailed)] == [token]
    assert net.now == (1 + TIMERS.max_retries) * TIMERS.ack_timeout


def test_device_never_gives_up_and_backs_off() -> None:
    dev = LinkEndpoint(Role.DEVICE, 7, timers=TIMERS)
    dev.send(b"card", 0.0)
    sends, now = [], 0.0
    for _ in range(12):
        assert dev.take_output()
        sends.append(now)
        now = dev.next_deadline() or 0.0
        dev.tick(now)
    gaps = [round(b - a, 6) for a, b in itertools.pairwise(sends)]
    # ack_timeout for the first max_retries retries, then doubling, capped
    assert gaps == [0.1, 0.1, 0.1, 0.1, 0.2, 0.4, 0.8, 1.0, 1.0, 1.0, 1.0]
    assert not dev.take_events()  # no SendFailed from a device


def test_lost_ack_gives_a_duplicate_that_is_not_delivered_twice() -> None:
    host = LinkEndpoint(Role.HOST, 1, timers=TIMERS)
    calls: list[bytes] = []

    def responder(address: int, payload: bytes) -> bytes:
        calls.append(payload)
        return b"R"

    dev = LinkEndpoint(Role.DEVICE, 2, timers=TIMERS, responder=responder)
    host.send(b"cmd", 0.0, address=0)
    ((_, data),) = host.take_output()
    dev.feed(data, 0.0)
    ((_, ack1),) = dev.take_output()  # this ACK is lost
    host.tick(0.1)
    ((_, again),) = host.take_output()
    assert again == data  # a retransmission is the identical frame
    dev.feed(again, 0.1)
    ((_, ack2),) = dev.take_output()
    assert ack2 == ack1  # the same ACK, same reply, again
    assert calls == [b"cmd"]  # carried out once
    assert len(of(dev.take_events(), Received)) == 1
    assert dev.counters.duplicates == 1
    host.feed(ack2, 0.1)
    assert [a.reply for a in of(host.take_events(), Acked)] == [b"R"]


def test_restarted_peer_is_reported_and_its_first_frame_is_not_taken_for_a_duplicate() -> None:
    host = LinkEndpoint(Role.HOST, 1, timers=TIMERS)
    old = LinkEndpoint(Role.DEVICE, 0x1111, timers=TIMERS)
    old.send(b"a", 0.0)
    host.feed(old.take_output()[0][1], 0.0)
    new = LinkEndpoint(Role.DEVICE, 0x2222, timers=TIMERS)  # rebooted: seq restarts at 0 too
    new.send(b"b", 1.0)
    host.feed(new.take_output()[0][1], 1.0)
    evs = host.take_events()
    assert [r.payload for r in of(evs, Received)] == [b"a", b"b"]
    assert of(evs, PeerRestarted) == [PeerRestarted(0, 0x1111, 0x2222)]


def test_stale_ack_is_ignored() -> None:
    host = LinkEndpoint(Role.HOST, 1, timers=TIMERS)
    host.send(b"x", 0.0, address=0)
    host.take_output()
    wrong = Frame(FrameKind.ACK, True, 0, 9, seq=5).to_wire()
    host.feed(wrong, 0.0)
    assert not of(host.take_events(), Acked)
    assert host.counters.stale_acks == 1


def test_multidrop_addresses_echo_and_broadcast() -> None:
    net = make_net(addresses=(1, 2))
    net.host.send(b"to1", 0.0, address=1)
    net.host.send(b"to2", 0.0, address=2)
    net.host.send(b"all", 0.0, address=BROADCAST)
    net.run()
    assert [r.payload for r in of(net.dev_events[1], Received)] == [b"to1", b"all"]
    assert [r.payload for r in of(net.dev_events[2], Received)] == [b"to2", b"all"]
    assert [a.reply for a in of(net.host_events, Acked)] == [
        b"re:to1",
        b"re:to2",
    ]  # broadcast: no ACK
    # each device heard the other's traffic and ignored it
    assert net.devices[0].counters.ignored >= 2 and net.devices[1].counters.ignored >= 2


def test_host_ignores_its_own_echo() -> None:
    host = LinkEndpoint(Role.HOST, 1, timers=TIMERS)
    host.send(b"x", 0.0, address=3)
    ((_, wire),) = host.take_output()
    host.feed(wire, 0.0)  # half-duplex transceivers hear themselves
    assert host.counters.ignored == 1 and not host.take_events()


def test_one_frame_in_flight_at_a_time_in_order() -> None:
    host = LinkEndpoint(Role.HOST, 1, timers=TIMERS)
    for i in range(3):
        host.send(bytes([i]), 0.0, address=0)
    out = host.take_output()
    assert len(out) == 1 and decode_frame(out[0][1]).payload == b"\x00"
    assert host.pending == 3


def test_abort_all_fails_everything() -> None:
    host = LinkEndpoint(Role.HOST, 1, timers=TIMERS)
    toks = [host.send(b"x", 0.0, address=0) for _ in range(3)]
    host.abort_all("link down")
    assert [f.token for f in of(host.take_events(), SendFailed)] == toks
    assert host.pending == 0 and host.next_deadline() is None


def test_garbage_is_reported_as_rejected_frames() -> None:
    host = LinkEndpoint(Role.HOST, 1, timers=TIMERS)
    host.feed(b"\x00\x05garbage\x00", 0.0)
    assert len(of(host.take_events(), FrameRejected)) == 1
    assert host.counters.bad_frames == 1


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    drop=st.sampled_from([0.0, 0.1, 0.3]),
    garbage=st.sampled_from([0.0, 0.01, 0.03]),
    chunk=st.sampled_from([0, 1, 7]),
    n_dev=st.integers(0, 25),
    n_host=st.integers(0, 10),
)
def test_exactly_once_in_order_under_loss_and_garbage(
    seed: int, drop: float, garbage: float, chunk: int, n_dev: int, n_host: int
) -> None:
    """Every device message arrives once, in order; every host request is either
    acknowledged with the right reply or reported failed, never both."""
    net = make_net(seed, drop=drop, garbage=garbage, chunk=chunk)
    dev = net.devices[0]
    sent_dev = [f"ev{i}".encode() for i in range(n_dev)]
    for p in sent_dev:
        dev.send(p, net.now)
    tokens = {
        net.host.send(f"rq{i}".encode(), net.now, address=0): f"rq{i}".encode()
        for i in range(n_host)
    }
    net.run(until=600)
    assert [r.payload for r in of(net.host_events, Received)] == sent_dev
    acked = {a.token: a.reply for a in of(net.host_events, Acked)}
    failed = {f.token for f in of(net.host_events, SendFailed)}
    assert not set(acked) & failed
    assert set(acked) | failed == set(tokens)
    for tok, reply in acked.items():
        assert reply == b"re:" + tokens[tok]
    delivered = [r.payload for r in of(net.dev_events[0], Received)]
    # requests reached the device at most once each, in order
    assert delivered == sorted(set(delivered), key=delivered.index)
    assert all(tokens[t] in delivered for t in acked)
    if drop == 0.0 and garbage == 0.0:
        assert not failed
