"""Reflink application messages as declarative tables.

A DATA or ACK payload is one message: a type byte then its fields, little-endian,
in the order the table lists them. Each device profile (shoe, shaker, board, sign)
is a :class:`Profile`: the common messages below plus its own (types 0x10-0x7F);
types 0x80-0xFF are left to vendors' extensions. A receiver ignores (and counts)
message types it does not know, and answers an unknown *request* with REFUSED.

Field kinds:

=========  ===========================================================
``u8``     one byte
``u16``    two bytes, little-endian
``u32``    four bytes, little-endian
``u64``    eight bytes, little-endian
``ascii3`` three ASCII capital letters (an ISO 4217 currency code)
``text``   u8 length L then L bytes of UTF-8
``bytes``  u8 count C then C bytes (a list of small items)
``rest``   every remaining byte (only as the last field)
=========  ===========================================================
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .frame import FrameError

LINK_VERSION = 1


class MessageError(FrameError):
    """A payload that is not a valid message of the profile."""

    code = "REFLINK_BAD_MESSAGE"


class Sender(enum.Enum):
    HOST = "host"
    DEVICE = "device"


_INT = {
    "u8": struct.Struct("<B"),
    "u16": struct.Struct("<H"),
    "u32": struct.Struct("<I"),
    "u64": struct.Struct("<Q"),
}
KINDS = (*_INT, "ascii3", "text", "bytes", "rest")


@dataclass(frozen=True, slots=True)
class FieldDef:
    name: str
    kind: str
    doc: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown field kind {self.kind!r}")


@dataclass(frozen=True, slots=True)
class MessageDef:
    """One message type. ``reply`` names the message an ACK carries back, if any."""

    type_id: int
    name: str
    sender: Sender
    fields: tuple[FieldDef, ...] = ()
    doc: str = ""
    reply: str | None = None


def f(name: str, kind: str, doc: str = "") -> FieldDef:
    return FieldDef(name, kind, doc)


@dataclass(frozen=True, slots=True)
class Message:
    """A decoded message: its definition and field values (ints, str or bytes)."""

    defn: MessageDef
    values: Mapping[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.defn.name

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    def describe(self) -> str:
        parts = []
        for fd in self.defn.fields:
            v = self.values[fd.name]
            parts.append(f"{fd.name}={v.hex(' ') if isinstance(v, bytes) else v!r}")
        return " ".join([self.name, *parts])


class RefusedReason(enum.IntEnum):
    UNKNOWN_REQUEST = 1
    BAD_ARGUMENT = 2
    BUSY = 3
    FAULT = 4
    UNSUPPORTED = 5


#: Messages every profile shares (types 0x01-0x0F).
COMMON: tuple[MessageDef, ...] = (
    MessageDef(
        0x01,
        "HELLO",
        Sender.HOST,
        (f("link_version", "u8", "highest link version the host speaks"),),
        "Sent by the host after (re)connecting; answered with IDENT in the ACK.",
        reply="IDENT",
    ),
    MessageDef(
        0x02,
        "IDENT",
        Sender.DEVICE,
        (
            f("link_version", "u8", "link version the device speaks (1)"),
            f("profile", "u8", "device profile: 1 shoe, 2 shaker, 3 board, 4 sign, 0x80+ vendor"),
            f("major", "u8", "profile major version"),
            f("minor", "u8", "profile minor version"),
            f("vendor", "text"),
            f("model", "text"),
            f("firmware", "text"),
        ),
        "Who the device is; reply to HELLO.",
    ),
    MessageDef(
        0x03,
        "PING",
        Sender.HOST,
        (),
        "Keepalive poll; answered with STATUS in the ACK.",
        reply="STATUS",
    ),
    MessageDef(
        0x04,
        "STATUS",
        Sender.DEVICE,
        (
            f(
                "conditions",
                "u16",
                "bit set of the profile's active conditions (faults), 0 = all well",
            ),
        ),
        "Reply to PING.",
    ),
    MessageDef(
        0x05,
        "REFUSED",
        Sender.DEVICE,
        (
            f("request", "u8", "type of the refused request"),
            f("reason", "u8", "1 unknown request, 2 bad argument, 3 busy, 4 fault, 5 unsupported"),
            f("text", "text", "human-readable reason"),
        ),
        "Reply to a request the device will not carry out.",
    ),
)


class Profile:
    """The message table of one device protocol (common messages included)."""

    def __init__(
        self,
        name: str,
        profile_id: int,
        major: int,
        minor: int,
        messages: Iterable[MessageDef],
        conditions: Mapping[int, str] | None = None,
    ) -> None:
        self.name = name
        self.profile_id = profile_id
        self.major = major
        self.minor = minor
        #: STATUS ``conditions`` bit number -> condition code.
        self.conditions: dict[int, str] = dict(conditions or {})
        self.by_id: dict[int, MessageDef] = {}
        self.by_name: dict[str, MessageDef] = {}
        for m in (*COMMON, *messages):
            if m.type_id in self.by_id or m.name in self.by_name:
                raise ValueError(f"{name}: duplicate message {m.name} 0x{m.type_id:02X}")
            if not 0 < m.type_id <= 0xFF:
                raise ValueError(f"{name}: message type 0x{m.type_id:02X} out of range")
            self.by_id[m.type_id] = m
            self.by_name[m.name] = m

    def encode(self, name: str, **values: Any) -> bytes:
        defn = self.by_name[name]
        out = bytearray([defn.type_id])
        missing = {fd.name for fd in defn.fields} - set(values)
        extra = set(values) - {fd.name for fd in defn.fields}
        if missing or extra:
            raise ValueError(
                f"{name}: missing fields {sorted(missing)}, unknown fields {sorted(extra)}"
            )
        for fd in defn.fields:
            out += _encode_field(defn, fd, values[fd.name])
        return bytes(out)

    def decode(self, payload: bytes, sender: Sender) -> Message:
        """Decode a payload sent by ``sender``; raise :class:`MessageError` if invalid."""
        if not payload:
            raise MessageError("empty payload")
        defn = self.by_id.get(payload[0])
        if defn is None:
            raise MessageError(f"unknown message type 0x{payload[0]:02X} for profile {self.name}")
        if defn.sender is not sender:
            raise MessageError(
                f"{defn.name} is sent by the {defn.sender.value}, not the {sender.value}"
            )
        pos = 1
        values: dict[str, Any] = {}
        for fd in defn.fields:
            values[fd.name], pos = _decode_field(defn, fd, payload, pos)
        if pos != len(payload):
            raise MessageError(f"{defn.name}: {len(payload) - pos} trailing bytes")
        return Message(defn, values)

    def condition_names(self, bits: int) -> list[str]:
        return [self.conditions.get(i, f"bit{i}") for i in range(16) if bits >> i & 1]


def _encode_field(defn: MessageDef, fd: FieldDef, v: Any) -> bytes:
    where = f"{defn.name}.{fd.name}"
    if fd.kind in _INT:
        st = _INT[fd.kind]
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < 1 << (8 * st.size):
            raise ValueError(f"{where}: {v!r} does not fit {fd.kind}")
        return st.pack(v)
    if fd.kind == "ascii3":
        if (
            not isinstance(v, str)
            or len(v) != 3
            or not v.isascii()
            or not v.isupper()
            or not v.isalpha()
        ):
            raise ValueError(f"{where}: {v!r} is not three capital letters")
        return v.encode("ascii")
    if fd.kind == "text":
        if not isinstance(v, str):
            raise ValueError(f"{where}: expected text, got {v!r}")
        b = v.encode("utf-8")
        if len(b) > 255:
            raise ValueError(f"{where}: text of {len(b)} bytes is longer than 255")
        return bytes([len(b)]) + b
    if fd.kind == "bytes":
        b = bytes(v)
        if len(b) > 255:
            raise ValueError(f"{where}: {len(b)} items is more than 255")
        return bytes([len(b)]) + b
    return bytes(v)  # rest


def _decode_field(defn: MessageDef, fd: FieldDef, p: bytes, pos: int) -> tuple[Any, int]:
    where = f"{defn.name}.{fd.name}"
    if fd.kind in _INT:
        st = _INT[fd.kind]
        if pos + st.size > len(p):
            raise MessageError(f"{where}: payload too short")
        return st.unpack_from(p, pos)[0], pos + st.size
    if fd.kind == "ascii3":
        raw = p[pos : pos + 3]
        if len(raw) != 3 or not all(0x41 <= b <= 0x5A for b in raw):
            raise MessageError(f"{where}: not three capital ASCII letters")
        return raw.decode("ascii"), pos + 3
    if fd.kind in ("text", "bytes"):
        if pos >= len(p):
            raise MessageError(f"{where}: payload too short")
        n = p[pos]
        raw = p[pos + 1 : pos + 1 + n]
        if len(raw) != n:
            raise MessageError(f"{where}: length {n} runs past the payload")
        if fd.kind == "bytes":
            return bytes(raw), pos + 1 + n
        try:
            return raw.decode("utf-8"), pos + 1 + n
        except UnicodeDecodeError as exc:
            raise MessageError(f"{where}: not UTF-8 ({exc.reason})") from None
    return bytes(p[pos:]), len(p)
