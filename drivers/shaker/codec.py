"""Reference dice-shaker protocol (profile 2 over reflink), sans-I/O.

``docs/protocols/shaker.md`` is the specification. A die is one byte: the high
nibble its lie (0 flat, 1 tilted, 2 stacked), the low nibble its face (1..6, or 0
"not readable", allowed only for a die that is not flat).
"""

from __future__ import annotations

from tablecommon.events.shaker import (
    DIE_FLAGS,
    FLAT,
    DiceRead,
    DiceUnreadable,
    NoShake,
    ShakeFinished,
    ShakeRequested,
    ShakerEvent,
    ShakerFault,
    ShakeStarted,
)

from ..reflink.messages import Message, MessageDef, MessageError, Profile, Sender, f

PROFILE_ID = 2

SOURCES = {0: "host", 1: "button"}
NO_SHAKE_REASONS = {1: "motor", 2: "dice_still"}
UNREADABLE_REASONS = {1: "dice_missing", 2: "image", 3: "camera"}

PROFILE = Profile(
    "shaker",
    PROFILE_ID,
    1,
    0,
    (
        MessageDef(
            0x10,
            "SHAKE_REQUESTED",
            Sender.DEVICE,
            (
                f("shake", "u16", "shake number, +1 on each request (wraps)"),
                f("source", "u8", "0 host command, 1 the shaker's own button"),
            ),
        ),
        MessageDef(0x11, "SHAKE_STARTED", Sender.DEVICE, (f("shake", "u16"),)),
        MessageDef(0x12, "SHAKE_FINISHED", Sender.DEVICE, (f("shake", "u16"),)),
        MessageDef(
            0x13,
            "DICE",
            Sender.DEVICE,
            (
                f("shake", "u16"),
                f("dice", "bytes", "3 or 4 dice, each lie << 4 | face"),
            ),
            "The dice as read.",
        ),
        MessageDef(
            0x14,
            "NO_SHAKE",
            Sender.DEVICE,
            (
                f("shake", "u16"),
                f("reason", "u8", "1 motor did not run, 2 dice did not move"),
            ),
        ),
        MessageDef(
            0x15,
            "UNREADABLE",
            Sender.DEVICE,
            (
                f("shake", "u16"),
                f("reason", "u8", "1 dice missing, 2 image unclear, 3 camera fault"),
                f("text", "text"),
            ),
        ),
        MessageDef(
            0x40, "SHAKE", Sender.HOST, (), "Shake the dice; answered by an empty ACK or REFUSED."
        ),
        MessageDef(0x41, "READ", Sender.HOST, (), "Read the dice again without shaking."),
    ),
    conditions={0: "DOME_OPEN", 1: "MOTOR_FAULT", 2: "CAMERA_FAULT", 3: "SHAKING"},
)


def die_to_byte(face: int, flag: str = FLAT) -> int:
    if not 0 <= face <= 6 or (face == 0 and flag == FLAT):
        raise ValueError(f"die face {face} with lie {flag}")
    return DIE_FLAGS.index(flag) << 4 | face


def die_from_byte(b: int) -> tuple[int, str]:
    lie, face = b >> 4, b & 0x0F
    if lie >= len(DIE_FLAGS) or face > 6 or (face == 0 and lie == 0):
        raise MessageError(f"0x{b:02X} is not a die byte")
    return face, DIE_FLAGS[lie]


def _reason(table: dict[int, str], code: int) -> str:
    return table.get(code, f"code{code}")


class ShakerTracker:
    """Host-side meaning of the shaker's messages."""

    def __init__(self, device: str = "", dice: int = 3) -> None:
        self.device = device
        self.dice = dice
        self.last: DiceRead | None = None

    def apply(self, msg: Message, raw: bytes = b"") -> list[ShakerEvent]:
        d, n = self.device, msg.name
        if n == "SHAKE_REQUESTED":
            return [
                ShakeRequested(
                    device=d, raw=raw, shake=msg["shake"], source=_reason(SOURCES, msg["source"])
                )
            ]
        if n == "SHAKE_STARTED":
            return [ShakeStarted(device=d, raw=raw, shake=msg["shake"])]
        if n == "SHAKE_FINISHED":
            return [ShakeFinished(device=d, raw=raw, shake=msg["shake"])]
        if n == "DICE":
            if len(msg["dice"]) not in (3, 4):
                raise MessageError(f"DICE carries {len(msg['dice'])} dice (3 or 4)")
            read = [die_from_byte(b) for b in msg["dice"]]
            if len(read) != self.dice:
                return [
                    ShakerFault(
                        device=d,
                        raw=raw,
                        fault="DICE_COUNT",
                        message=f"{len(read)} dice read, the table uses {self.dice}",
                    )
                ]
            ev = DiceRead(
                device=d,
                raw=raw,
                shake=msg["shake"],
                dice=tuple(x for x, _ in read),
                flags=tuple(fl for _, fl in read),
            )
            self.last = ev
            return [ev]
        if n == "NO_SHAKE":
            return [
                NoShake(
                    device=d,
                    raw=raw,
                    shake=msg["shake"],
                    reason=_reason(NO_SHAKE_REASONS, msg["reason"]),
                )
            ]
        if n == "UNREADABLE":
            return [
                DiceUnreadable(
                    device=d,
                    raw=raw,
                    shake=msg["shake"],
                    reason=_reason(UNREADABLE_REASONS, msg["reason"]),
                    message=msg["text"],
                )
            ]
        return []
