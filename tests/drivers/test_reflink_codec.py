"""Reflink frame codec: CRC parameters, COBS, header checks, and fuzzing.

Acceptance (issue 5): arbitrary bytes never raise anything but the documented
error (here the stream decoder never raises at all; ``decode_frame`` raises only
FrameError) and never yield a frame from an invalid frame.
"""

from __future__ import annotations

import struct
import zlib

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from drivers.base import CodecError
from drivers.reflink.frame import (
    MAX_PAYLOAD,
    CrcError,
    Frame,
    FrameDecoder,
    FrameError,
    FrameKind,
    UnsupportedVersion,
    cobs_decode,
    cobs_encode,
    crc32,
    decode_body,
    decode_frame,
)

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def crc32_bitwise(data: bytes) -> int:
    """CRC-32/ISO-HDLC straight from its parameters (poly 0x04C11DB7 reflected = 0xEDB88320,
    init 0xFFFFFFFF, refin/refout true, xorout 0xFFFFFFFF), one bit at a time."""
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0xEDB88320 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def test_crc_check_value() -> None:
    # The catalogue check value of CRC-32/ISO-HDLC.
    assert crc32(b"123456789") == 0xCBF43926
    assert crc32_bitwise(b"123456789") == 0xCBF43926


@given(st.binary(max_size=300))
def test_crc_matches_its_parameters(data: bytes) -> None:
    assert crc32(data) == crc32_bitwise(data)


# Examples from the COBS paper / the usual reference tables (input, encoded without delimiter).
COBS_VECTORS = [
    ("00", "0101"),
    ("0000", "010101"),
    ("11220033", "0311220233"),
    ("11223344", "0511223344"),
    ("11000000", "0211010101"),
    (bytes(range(1, 255)).hex(), "ff" + bytes(range(1, 255)).hex()),
    (bytes(range(0, 255)).hex(), "01ff" + bytes(range(1, 255)).hex()),
    (bytes(range(1, 256)).hex(), "ff" + bytes(range(1, 255)).hex() + "02ff"),
    (bytes(range(2, 256)).hex() + "00", "ff" + bytes(range(2, 256)).hex() + "0101"),
    (bytes(range(3, 256)).hex() + "0001", "fe" + bytes(range(3, 256)).hex() + "0201"),
]


@pytest.mark.parametrize(("plain", "encoded"), COBS_VECTORS)
def test_cobs_reference_vectors(plain: str, encoded: str) -> None:
    assert cobs_encode(bytes.fromhex(plain)) == bytes.fromhex(encoded)
    assert cobs_decode(bytes.fromhex(encoded)) == bytes.fromhex(plain)


@given(st.binary(max_size=700))
def test_cobs_round_trip_and_no_zero(data: bytes) -> None:
    enc = cobs_encode(data)
    assert 0 not in enc
    assert len(enc) <= len(data) + 1 + len(data) // 254
    assert cobs_decode(enc) == data


@given(st.binary(max_size=300))
def test_cobs_decode_raises_only_frame_error(data: bytes) -> None:
    try:
        out = cobs_decode(data)
    except FrameError:
        return
    assert cobs_encode(out) == data  # only canonical encodings are accepted


frames = st.builds(
    Frame,
    kind=st.sampled_from(list(FrameKind)),
    from_device=st.booleans(),
    address=st.integers(0, 255),
    session=st.integers(0, 0xFFFF),
    seq=st.integers(0, 255),
    payload=st.binary(max_size=MAX_PAYLOAD),
    noack=st.booleans(),
)


@given(frames)
def test_frame_round_trip(frame: Frame) -> None:
    wire = frame.to_wire()
    assert wire[0] == 0 and wire[-1] == 0 and 0 not in wire[1:-1]
    assert decode_frame(wire) == frame
    got = FrameDecoder().feed(wire)
    assert got == [(frame, wire)]


def _body(
    version: int,
    control: int,
    address: int,
    session: int,
    seq: int,
    payload: bytes,
    length: int | None = None,
) -> bytes:
    """A frame body built by hand from the layout in docs/protocols/reflink.md."""
    head = struct.pack(
        "<BBBHBB",
        version,
        control,
        address,
        session,
        seq,
        len(payload) if length is None else length,
    )
    return head + payload + struct.pack("<I", zlib.crc32(head + payload))


def test_hand_built_body_decodes() -> None:
    body = _body(1, 0x80, 0x00, 0x1234, 7, b"\x10\x01\x00")
    f = decode_body(body)
    assert (f.kind, f.from_device, f.address, f.session, f.seq, f.payload) == (
        FrameKind.DATA,
        True,
        0,
        0x1234,
        7,
        b"\x10\x01\x00",
    )


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (_body(2, 0x00, 0, 1, 0, b""), UnsupportedVersion),
        (_body(1, 0x04, 0, 1, 0, b""), FrameError),  # reserved control bit
        (_body(1, 0x02, 0, 1, 0, b""), FrameError),  # reserved kind
        (_body(1, 0x00, 0, 1, 0, b"abc", length=2), FrameError),  # length disagrees
        (_body(1, 0x00, 0, 1, 0, b"")[:-1] + b"\x00", CrcError),
        (b"\x01\x00\x00", FrameError),  # too short
    ],
)
def test_invalid_bodies_are_refused(body: bytes, error: type[Exception]) -> None:
    with pytest.raises(error):
        decode_body(body)
    with pytest.raises(CodecError):  # the documented base class
        decode_frame(b"\x00" + cobs_encode(body) + b"\x00")
    dec = FrameDecoder()
    assert dec.feed(b"\x00" + cobs_encode(body) + b"\x00") == []
    assert dec.frames_bad == 1


def test_unsupported_version_keeps_the_version() -> None:
    with pytest.raises(UnsupportedVersion) as info:
        decode_body(_body(3, 0x00, 0, 1, 0, b""))
    assert info.value.version == 3


def test_overlong_run_is_dropped_and_decoding_resumes() -> None:
    good = Frame(FrameKind.ACK, True, 0, 5, 9).to_wire()
    dec = FrameDecoder()
    assert dec.feed(b"\x01" * 5000 + good) == [(decode_frame(good), good)]
    assert dec.frames_bad == 1


def _chunks(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    out, prev = [], 0
    for p in points:
        out.append(data[prev:p])
        prev = p
    out.append(data[prev:])
    return out


@FUZZ
@given(st.binary(max_size=2000), st.lists(st.integers(0, 5000), max_size=20))
def test_arbitrary_bytes_never_raise_and_never_invent_frames(data: bytes, cuts: list[int]) -> None:
    dec = FrameDecoder()
    got = []
    for chunk in _chunks(data, cuts):
        got += dec.feed(chunk)  # must not raise
    for frame, wire in got:
        # every frame yielded was really, complete and valid, in the input
        assert wire[1:-1] in data
        assert frame.to_wire() == wire


@FUZZ
@given(frames, frames, st.binary(max_size=40), st.lists(st.integers(0, 600), max_size=10))
def test_frames_survive_any_chunking_and_garbage_between(
    a: Frame, b: Frame, garbage: bytes, cuts: list[int]
) -> None:
    stream = a.to_wire() + garbage + b.to_wire()
    dec = FrameDecoder()
    got = []
    for chunk in _chunks(stream, cuts):
        got += [f for f, _ in dec.feed(chunk)]
    # the leading delimiter of b ends any garbage, so b always survives; a always does
    assert got[0] == a
    assert got[-1] == b
    for f in got[1:-1]:  # anything in between came from a valid frame inside the garbage
        assert f.to_wire()[1:-1] in garbage


mutations = st.one_of(
    st.tuples(st.just("flip"), st.integers(0, 10_000), st.integers(1, 255)),
    st.tuples(st.just("insert"), st.integers(0, 10_000), st.integers(0, 255)),
    st.tuples(st.just("delete"), st.integers(0, 10_000), st.just(0)),
    st.tuples(st.just("truncate"), st.integers(0, 10_000), st.just(0)),
)


def _mutate(wire: bytes, m: tuple[str, int, int]) -> bytes:
    kind, pos, val = m
    inner = bytearray(wire[1:-1])
    if not inner:
        return wire
    i = pos % len(inner)
    if kind == "flip":
        inner[i] ^= val
    elif kind == "insert":
        inner.insert(i, val)
    elif kind == "delete":
        del inner[i]
    else:
        del inner[i:]
    return b"\x00" + bytes(inner) + b"\x00"


@FUZZ
@given(frames, st.lists(mutations, min_size=1, max_size=3))
def test_a_damaged_frame_never_yields_a_frame(frame: Frame, ms: list[tuple[str, int, int]]) -> None:
    wire = frame.to_wire()
    bad = wire
    for m in ms:
        bad = _mutate(bad, m)
    assume(bad.strip(b"\x00") != wire.strip(b"\x00"))  # an extra delimiter is no damage
    got = FrameDecoder().feed(bad)
    assert got == [], f"a damaged frame decoded as {got}"
