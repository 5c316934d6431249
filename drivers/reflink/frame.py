"""Reflink frame codec (sans-I/O): COBS framing, header, CRC-32.

The wire format is specified in ``docs/protocols/reflink.md``; this module is its
executable form. Nothing here does I/O, keeps time or raises anything but
:class:`FrameError` (a :class:`drivers.base.CodecError`).

Wire: ``00 | COBS(body) | 00``. Body (little-endian)::

    0   version   0x01
    1   control   bit7 DIR (1 = sent by the device), bit6 NOACK,
                  bits1-0 KIND (0 DATA, 1 ACK), bits5-2 reserved (0)
    2   address   device address (0x00 point-to-point; 0x01-0xFE RS-485; 0xFF broadcast)
    3   session   u16, the sender's session (chosen at random on each start)
    5   seq       u8, sequence number of a DATA frame; of the DATA frame acknowledged in an ACK
    6   length    u8, N = payload length (0..240)
    7   payload   N bytes
    7+N crc       u32, CRC-32/ISO-HDLC of bytes 0 .. 6+N
"""

from __future__ import annotations

import enum
import struct
import zlib
from dataclasses import dataclass

from ..base import CodecError

VERSION = 1
DELIMITER = 0x00
HEADER_SIZE = 7
CRC_SIZE = 4
MAX_PAYLOAD = 240
MIN_BODY = HEADER_SIZE + CRC_SIZE
MAX_BODY = HEADER_SIZE + MAX_PAYLOAD + CRC_SIZE
#: Longest COBS encoding of a body: one code byte per started 254-byte block.
MAX_ENCODED = MAX_BODY + (MAX_BODY + 253) // 254
BROADCAST = 0xFF

CTL_DIR_DEVICE = 0x80
CTL_NOACK = 0x40
CTL_KIND_MASK = 0x03
CTL_RESERVED_MASK = 0x3C

_HEADER = struct.Struct("<BBBHBB")


class FrameError(CodecError):
    """A run of bytes between two delimiters that is not a valid reflink frame."""

    code = "REFLINK_BAD_FRAME"
    #: The bytes between the delimiters, when a stream decoder rejected them.
    raw: bytes = b""


class CrcError(FrameError):
    code = "REFLINK_BAD_CRC"


class UnsupportedVersion(FrameError):
    """A frame with a valid CRC but a link version this software does not speak."""

    code = "REFLINK_VERSION"

    def __init__(self, message: str, version: int) -> None:
        super().__init__(message)
        self.version = version


class FrameKind(enum.IntEnum):
    DATA = 0
    ACK = 1


def crc32(data: bytes) -> int:
    """CRC-32/ISO-HDLC (poly 0x04C11DB7 reflected, init and xorout 0xFFFFFFFF).

    The check value of ``b"123456789"`` is ``0xCBF43926``.
    """
    return zlib.crc32(data) & 0xFFFFFFFF


def cobs_encode(data: bytes) -> bytes:
    """Consistent Overhead Byte Stuffing (Cheshire & Baker 1999): no ``0x00`` in the result.

    Same output as the reference encoder: a block that fills up (254 non-zero bytes)
    at the very end of the data is not followed by an empty block.
    """
    out = bytearray(b"\x00")
    code_at: int | None = 0
    code = 1
    last = len(data) - 1
    for i, b in enumerate(data):
        if b:
            out.append(b)
            code += 1
        if not b or code == 0xFF:
            assert code_at is not None
            out[code_at] = code
            code = 1
            if not b or i < last:
                code_at = len(out)
                out.append(0)
            else:
                code_at = None
    if code_at is not None:
        out[code_at] = code
    return bytes(out)


def cobs_decode(data: bytes) -> bytes:
    """Strict inverse of :func:`cobs_encode`; non-canonical encodings are refused."""
    out = bytearray()
    i = 0
    n = len(data)
    if n == 0:
        raise FrameError("empty COBS block")
    while i < n:
        code = data[i]
        if code == 0:
            raise FrameError("zero byte inside a COBS block")
        end = i + code
        if end > n:
            raise FrameError("COBS block runs past the frame end")
        block = data[i + 1 : end]
        if 0 in block:
            raise FrameError("zero byte inside a COBS block")
        out += block
        i = end
        if code != 0xFF and i < n:
            out.append(0)
    decoded = bytes(out)
    if cobs_encode(decoded) != data:
        raise FrameError("non-canonical COBS encoding")
    return decoded


@dataclass(frozen=True, slots=True)
class Frame:
    """One decoded reflink frame."""

    kind: FrameKind
    from_device: bool
    address: int
    session: int
    seq: int
    payload: bytes = b""
    noack: bool = False
    version: int = VERSION

    def __post_init__(self) -> None:
        if not 0 <= self.address <= 0xFF:
            raise FrameError(f"address {self.address} outside 0..255")
        if not 0 <= self.session <= 0xFFFF:
            raise FrameError(f"session {self.session} outside 0..65535")
        if not 0 <= self.seq <= 0xFF:
            raise FrameError(f"seq {self.seq} outside 0..255")
        if len(self.payload) > MAX_PAYLOAD:
            raise FrameError(f"payload of {len(self.payload)} bytes exceeds {MAX_PAYLOAD}")

    @property
    def control(self) -> int:
        return (
            (CTL_DIR_DEVICE if self.from_device else 0)
            | (CTL_NOACK if self.noack else 0)
            | int(self.kind)
        )

    def body(self) -> bytes:
        head = _HEADER.pack(
            self.version, self.control, self.address, self.session, self.seq, len(self.payload)
        )
        unsigned = head + self.payload
        return unsigned + struct.pack("<I", crc32(unsigned))

    def to_wire(self) -> bytes:
        """``00 COBS(body) 00``: the leading delimiter ends any line noise before it."""
        return b"\x00" + cobs_encode(self.body()) + b"\x00"

    def describe(self) -> str:
        who = "device" if self.from_device else "host"
        flags = " NOACK" if self.noack else ""
        return (
            f"{self.kind.name} from {who} addr 0x{self.address:02X} session 0x{self.session:04X} "
            f"seq {self.seq}{flags} payload {self.payload.hex(' ') or '-'}"
        )


def decode_body(body: bytes) -> Frame:
    """Decode a frame body (after COBS); raise :class:`FrameError` if it is not valid."""
    if len(body) < MIN_BODY:
        raise FrameError(f"frame of {len(body)} bytes is shorter than the minimum {MIN_BODY}")
    if len(body) > MAX_BODY:
        raise FrameError(f"frame of {len(body)} bytes is longer than the maximum {MAX_BODY}")
    (want,) = struct.unpack_from("<I", body, len(body) - CRC_SIZE)
    got = crc32(body[:-CRC_SIZE])
    if want != got:
        raise CrcError(f"CRC mismatch: frame says 0x{want:08X}, bytes give 0x{got:08X}")
    version, control, address, session, seq, length = _HEADER.unpack_from(body)
    if version != VERSION:
        raise UnsupportedVersion(
            f"link version {version} (this software speaks {VERSION})", version
        )
    if length != len(body) - MIN_BODY:
        raise FrameError(
            f"length field {length} but the frame carries {len(body) - MIN_BODY} bytes"
        )
    if control & CTL_RESERVED_MASK:
        raise FrameError(f"reserved control bits set: 0x{control:02X}")
    kind = control & CTL_KIND_MASK
    if kind not in (FrameKind.DATA, FrameKind.ACK):
        raise FrameError(f"reserved frame kind {kind}")
    return Frame(
        kind=FrameKind(kind),
        from_device=bool(control & CTL_DIR_DEVICE),
        noack=bool(control & CTL_NOACK),
        address=address,
        session=session,
        seq=seq,
        payload=bytes(body[HEADER_SIZE:-CRC_SIZE]),
    )


def decode_frame(wire: bytes) -> Frame:
    """Decode one complete frame, with or without its ``00`` delimiters."""
    inner = wire.strip(b"\x00")
    if b"\x00" in inner:
        raise FrameError("more than one frame")
    if len(inner) > MAX_ENCODED:
        raise FrameError(f"frame of {len(inner)} bytes is longer than the maximum {MAX_ENCODED}")
    return decode_body(cobs_decode(inner))


class FrameDecoder:
    """Split a byte stream fed in arbitrary chunks into frames.

    ``feed`` never raises: runs of bytes that are not valid frames are counted and
    kept in :attr:`rejected` (the caller drains it), and decoding resumes at the
    next delimiter.
    """

    def __init__(self) -> None:
        self._buf = bytearray()
        self._overflow = False
        self.rejected: list[FrameError] = []
        self.frames_ok = 0
        self.frames_bad = 0

    def feed(self, data: bytes) -> list[tuple[Frame, bytes]]:
        """Return ``(frame, wire bytes)`` for each valid frame completed by ``data``."""
        out: list[tuple[Frame, bytes]] = []
        for b in data:
            if b != DELIMITER:
                if len(self._buf) >= MAX_ENCODED:
                    self._overflow = True
                else:
                    self._buf.append(b)
                continue
            if self._overflow:
                self._reject(FrameError(f"frame longer than the maximum {MAX_ENCODED} bytes"))
            elif self._buf:
                raw = bytes(self._buf)
                try:
                    frame = decode_body(cobs_decode(raw))
                except FrameError as exc:
                    exc.raw = raw
                    self._reject(exc)
                else:
                    self.frames_ok += 1
                    out.append((frame, b"\x00" + raw + b"\x00"))
            self._buf.clear()
            self._overflow = False
        return out

    def _reject(self, exc: FrameError) -> None:
        self.frames_bad += 1
        self.rejected.append(exc)
        if len(self.rejected) > 64:
            del self.rejected[:-64]

    def take_rejected(self) -> list[FrameError]:
        out, self.rejected = self.rejected, []
        return out
