"""``tablectl decode`` for reflink captures: a frame log taken on a faulty link decodes
to exactly the events the device sent (retransmissions once, garbage as BadFrame)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from drivers.cli import decoders
from drivers.reflink.bench import FAST, SIM_TIMERS, Bench, collect, driver_kwargs, wait_online
from drivers.reflink.decode import capture_bytes
from drivers.reflink.frame import Frame, FrameDecoder, FrameKind
from drivers.shaker.model import ShakerModel
from drivers.shoe.driver import ShoeDriver
from drivers.shoe.model import ShoeModel
from drivers.shoe.sim import ShoeSimulator
from drivers.testing import Faults
from tablecommon.events.shoe import CardDealt

#: The reflink drivers' decoders (``tablectl decode``), as they declare them.
REFLINK = ("shoe-ref", "shoe-ref-usb", "shaker-ref", "board-ref", "sign-ref")


def decode(driver: str, data: bytes, device: str = "") -> Iterator[dict[str, Any]]:
    return decoders()[driver].decode(data, {"device": device})


async def test_a_device_side_frame_log_decodes_to_the_cards_dealt() -> None:
    sim = ShoeSimulator(decks=1, seed=4, timers=SIM_TIMERS)
    bench = Bench(sim, rx=Faults(drop_rate=0.3, seed=1))  # the host misses frames: retransmissions
    drv = ShoeDriver("shoe", {"port": "unused", "decks": 1, **FAST}, **driver_kwargs(bench))
    sub = drv.events()
    await drv.start()
    try:
        await wait_online(drv)
        await sim.shuffle()
        for _ in range(12):
            await sim.deal()
        await collect(sub, CardDealt, 12)
    finally:
        await drv.stop()
        await bench.close()
    log = "\n".join(sim.unit().frames.dump()).encode()
    assert sim.unit().endpoint.counters.retransmits > 0
    records = list(decode("shoe-ref", log, device="shoe"))
    cards = [(r["seq"], r["card"]) for r in records if r["kind"] == "CardDealt"]
    assert cards == sim.sent_cards
    assert any(r["kind"] == "Request" and r["message"] == "HELLO" for r in records)
    assert any(r["kind"] == "Reply" and r["message"] == "IDENT" for r in records)
    for r in records:
        json.dumps(r)


def test_raw_bytes_with_garbage() -> None:
    good = Frame(FrameKind.DATA, True, 0, 9, 0, bytes([0x10, 1, 0, 0x10, 0])).to_wire()
    records = list(decode("shoe-ref", b"\x00junk\x00" + good + good))  # sent twice: shown once
    assert [r["kind"] for r in records] == ["BadFrame", "CardDealt"]
    assert records[1]["card"] == "AS"


def test_frame_log_lines_are_unescaped() -> None:
    raw = Frame(FrameKind.ACK, False, 3, 1, 2).to_wire()
    line = "12.5\tTX\t" + raw.decode("latin-1").encode("unicode_escape").decode("ascii")
    assert capture_bytes(line.encode()) == raw
    assert capture_bytes(b"\x00\x01plain") == b"\x00\x01plain"


def test_board_and_sign_captures_list_requests() -> None:
    from drivers.board.codec import PROFILE

    wire = Frame(
        FrameKind.DATA, False, 3, 1, 0, PROFILE.encode("NUMBER", game=1, number=17, history=b"\x00")
    ).to_wire()
    (rec,) = decode("board-ref", wire)
    assert rec == {
        "kind": "Request",
        "address": 3,
        "message": "NUMBER",
        "game": 1,
        "number": 17,
        "history": "00",
    }


# -- fuzzing at the event level ------------------------------------------------------------


FUZZ = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(data=st.binary(max_size=600), name=st.sampled_from(sorted(REFLINK)))
def test_arbitrary_bytes_yield_no_event(data: bytes, name: str) -> None:
    valid = FrameDecoder().feed(data + b"\x00")
    records = list(decode(name, data))
    if not valid:
        assert {r["kind"] for r in records} <= {"BadFrame"}


def _event_frames() -> list[bytes]:
    shoe = ShoeModel(decks=1, seed=1)
    shoe.shuffle()
    for _ in range(3):
        shoe.deal()
    shoe.inject("jam")
    shaker = ShakerModel(seed=1)
    shaker.shake()
    return [
        Frame(FrameKind.DATA, True, 0, 77, i, p).to_wire() for i, p in enumerate(shoe.take_outbox())
    ] + [
        Frame(FrameKind.DATA, True, 0, 78, i, p).to_wire()
        for i, p in enumerate(shaker.take_outbox())
    ]


EVENT_FRAMES = _event_frames()


@FUZZ
@given(
    index=st.integers(0, len(EVENT_FRAMES) - 1),
    pos=st.integers(0, 10_000),
    kind=st.sampled_from(["flip", "insert", "delete"]),
    val=st.integers(1, 255),
)
def test_a_damaged_event_frame_yields_no_event(index: int, pos: int, kind: str, val: int) -> None:
    wire = bytearray(EVENT_FRAMES[index])
    i = 1 + pos % (len(wire) - 2)
    if kind == "flip":
        wire[i] ^= val
    elif kind == "insert":
        wire.insert(i, val)
    else:
        del wire[i]
    for name in ("shoe-ref", "shaker-ref"):
        kinds = {r["kind"] for r in decode(name, bytes(wire))}
        assert kinds <= {"BadFrame"}, kinds
