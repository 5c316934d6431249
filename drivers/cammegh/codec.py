"""Cammegh SS2 wire codec (sans-I/O): lines in, typed frames out, and host commands.

Reference: ``docs/protocols/cammegh-ss2.md`` (ours) and the vendor guide as restated
in ``docs/protocols/cammegh-ss2-reference.md`` (cited here as [ref §N]).

ASCII lines ending in CR and/or LF [ref §2]. What the wheel sends:

- the status line ``*X;<state>;<spin>;<win>;<flags>;<speed>;<dir>`` [ref §4.1] —
  fixed field widths, which is what lets us reject a line with a byte lost or
  inserted (the protocol has no checksum). ``:`` is accepted as the separator too
  (one separator per line), as some host code and documents write it;
- the bare winning-number line (``" 7"``, ``"17"``, ``"00"``; no ``*``) [ref §4.2],
  with or without its leading space (host logs strip it);
- replies ``*<letter> <text>`` (``*P OK``, ``*S V2.50``, ``*T h 161``, ``*o BUSY``,
  ``*  NO``) [ref §6, §7]; fault packets ``*F <code>`` [ref §4.4]; bonus lines
  ``*Y;k;nnn[;dd]`` [ref §4.3]; sensor debug events ``*bs n``/``*bn n`` [ref §4.5].

:func:`parse_line` raises :class:`LineError` (a :class:`~drivers.base.CodecError`)
for anything else; :class:`LineDecoder` never raises: it yields a :class:`Garbled`
item for each bad line, so the caller can count it and keep going.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field

from tablecommon.events.wheel import STATE_NAMES

from ..base import CodecError

__all__ = [
    "FAULT_CODES",
    "MAX_LINE",
    "SPIN_MAX",
    "STATE_NAMES",
    "BonusLine",
    "Direction",
    "FaultPacket",
    "Frame",
    "GameState",
    "Garbled",
    "LineDecoder",
    "LineError",
    "ModeBit",
    "Reply",
    "SensorEvent",
    "Status",
    "WarningFlag",
    "WinningLine",
    "cmd_extra_params",
    "cmd_full_version",
    "cmd_manufacturer",
    "cmd_mode",
    "cmd_poll_status",
    "cmd_power",
    "cmd_quiet",
    "cmd_restart",
    "cmd_self_test",
    "cmd_setup_query",
    "cmd_setup_set",
    "cmd_start_game",
    "cmd_version",
    "encode_fault",
    "encode_reply",
    "encode_status",
    "encode_winning_line",
    "next_spin",
    "parse_line",
    "pocket_text",
    "spins_between",
]

#: Longest line we accept (the longest documented reply, ``*s r`` with 256 data
#: bytes, is about 270 characters). Longer runs without CR/LF are garbage.
MAX_LINE = 300

#: Spin numbers count 1..256 since mains power-on and wrap [ref §4.1].
SPIN_MAX = 256


class LineError(CodecError):
    """A line that is none of the SS2 messages (the codec's only error)."""

    code = "SS2_BAD_LINE"


class GameState(enum.IntEnum):
    """Status field 1 [ref §3]."""

    BEFORE_GAME = 1
    PLACE_BETS = 2
    BALL_IN_RIM = 3
    NO_MORE_BETS = 4
    WINNING_NUMBER = 5
    CLOSE_TABLE = 6
    NO_BALL_IN_TRACK = 7  # firmware 2.52+, enabled by *T g +32


class WarningFlag(enum.IntFlag):
    """Status field 4: one hex digit, the sum of these bits [ref §5]."""

    NO_BALL = 1
    MISS_SPIN = 2
    COMPONENT_FAULT = 4
    LAUNCH_FAILURE = 8


def flag_names(flags: int) -> tuple[str, ...]:
    return tuple(f.name.lower() for f in WarningFlag if flags & f and f.name)


class Direction(enum.IntEnum):
    """Status field 6, rotor direction [ref §4.1]."""

    CLOCKWISE = 0
    ANTICLOCKWISE = 1

    @property
    def label(self) -> str:
        return self.name.lower()


class ModeBit(enum.IntFlag):
    """Operating mode bits, ``*o <mode>`` [ref §6.2]."""

    REVERSE_EACH_GAME = 1
    USER_START = 2
    RANDOM_SPEED_CHANGE = 4
    NO_WINNING_LINE = 16
    AUTO_STATUS = 128
    FAULT_PACKETS = 256
    GPH_IN_STATE_1 = 1024
    GPH_IN_STATE_2 = 2048
    DRAGON = 4096
    DRAGON_SEQUENTIAL = 8192
    BONUS_NUMBERS = 32768


#: ``*F <code>`` meanings: self-test results and in-play fault packets [ref §4.4].
FAULT_CODES: dict[int, str] = {
    0: "no errors detected",
    1: "hardware fault",
    2: "no ball detected",
    3: "no ball position detected",
    4: "detected ball direction is not correct",
    5: "motor is not driving the wheel correctly",
    6: "encoder has failed (or the wheel is not calibrated)",
    7: "cannot play a clockwise game (no air jets, or not calibrated)",
    8: "cannot play an anti-clockwise game (no air jets, or not calibrated)",
    11: "sensor 1 broken on",
    12: "sensor 2 broken on",
    13: "sensor 3 broken on",
    21: "sensor 1 broken off",
    22: "sensor 2 broken off",
    23: "sensor 3 broken off",
    100: "test has timed out",
}

# Pocket numbers: 0..36, then the extra zeros as internal pockets 37 ("00"),
# 38 ("000"), 39 ("0000") [ref §4.2, ⚠ 3].
_EXTRA_ZEROS = {"00": 37, "000": 38, "0000": 39}
_EXTRA_TEXT = {v: k for k, v in _EXTRA_ZEROS.items()}


def pocket_text(number: int) -> str:
    """Display form without padding: ``"7"``, ``"17"``, ``"00"``."""
    if number in _EXTRA_TEXT:
        return _EXTRA_TEXT[number]
    if not 0 <= number <= 36:
        raise ValueError(f"no pocket {number}")
    return str(number)


def _wire_number(number: int) -> str:
    text = pocket_text(number)
    return text.rjust(2) if number <= 36 else text


def _parse_number(text: str) -> int:
    if text in _EXTRA_ZEROS:
        return _EXTRA_ZEROS[text]
    return int(text)


def next_spin(spin: int) -> int:
    """The spin number after ``spin`` (256 wraps to 1)."""
    return spin % SPIN_MAX + 1


def spins_between(earlier: int, later: int) -> int:
    """How many spins ``later`` is after ``earlier`` on the 1..256 wrapping counter."""
    return (later - earlier) % SPIN_MAX


# --------------------------------------------------------------------------- frames


@dataclass(frozen=True, slots=True)
class Status:
    """One ``*X`` status line."""

    state: GameState
    spin: int
    win: int | None  # None before the first result since power-on ("  ")
    flags: WarningFlag
    speed: int  # rotor rpm x 10
    direction: Direction
    separator: str = ";"
    raw: bytes = field(default=b"", compare=False)

    @property
    def rpm(self) -> float:  # display only
        return self.speed / 10


@dataclass(frozen=True, slots=True)
class WinningLine:
    """The bare winning-number line (port 1, unless mode bit 16)."""

    number: int
    raw: bytes = field(default=b"", compare=False)


@dataclass(frozen=True, slots=True)
class Reply:
    """``*<letter>[ <text>]``: a reply to a host command."""

    letter: str
    text: str
    raw: bytes = field(default=b"", compare=False)


@dataclass(frozen=True, slots=True)
class FaultPacket:
    """``*F <code>``: a self-test result or an in-play fault (mode bit 256)."""

    code: int
    raw: bytes = field(default=b"", compare=False)

    @property
    def meaning(self) -> str:
        return FAULT_CODES.get(self.code, f"unknown fault code {self.code}")


@dataclass(frozen=True, slots=True)
class BonusLine:
    """``*Y;<k>;<nnn>[;<days>]`` (firmware 1.22+ licensed option)."""

    index: int
    value: int
    days: int | None
    raw: bytes = field(default=b"", compare=False)


@dataclass(frozen=True, slots=True)
class SensorEvent:
    """``bs <n>`` / ``bn <nn>`` after ``*I 4`` (sensor ``n`` saw the ball / ball in pocket)."""

    kind: str  # "s" sensor, "n" pocket
    value: int
    raw: bytes = field(default=b"", compare=False)


@dataclass(frozen=True, slots=True)
class Garbled:
    """A line that did not decode (kept for counting and the frame log)."""

    reason: str
    raw: bytes = field(default=b"", compare=False)


Frame = Status | WinningLine | Reply | FaultPacket | BonusLine | SensorEvent

_WIN = r"( \d|[12]\d|3[0-6]|00|000|0000|  )"
_STATUS = re.compile(r"\*X([;:])([1-7])\1(\d{3})\1" + _WIN + r"\1([0-9A-F])\1(\d{3})\1([01])")
_BARE = re.compile(r" ?\d|[12]\d|3[0-6]|00|000|0000")
_FAULT = re.compile(r"\*F (\d{1,3})")
_BONUS = re.compile(r"\*Y;([1-6]);(\d{3})(?:;(\d{2}))?")
_SENSOR = re.compile(r"\*?b([sn]) ?(\d{1,2})")
_REPLY = re.compile(r"\*([ -~])(?: ([ -~]*))?")


def parse_line(line: bytes) -> Frame:
    """Decode one line (without its CR/LF). Raises :class:`LineError`."""
    if not line:
        raise LineError("empty line")
    if len(line) > MAX_LINE:
        raise LineError(f"line of {len(line)} bytes is longer than {MAX_LINE}")
    if any(b < 0x20 or b > 0x7E for b in line):
        raise LineError("non-printable byte in line")
    text = line.decode("ascii")
    raw = bytes(line)
    if text.startswith("*X"):
        m = _STATUS.fullmatch(text)
        if m is None:
            raise LineError(f"malformed status line {text!r}")
        _, state, spin, win, flags, speed, direction = m.groups()
        spin_n = int(spin)
        if spin_n > SPIN_MAX:
            raise LineError(f"spin number {spin_n} above {SPIN_MAX}")
        return Status(
            GameState(int(state)),
            spin_n,
            None if win == "  " else _parse_number(win.strip()),
            WarningFlag(int(flags, 16)),
            int(speed),
            Direction(int(direction)),
            m.group(1),
            raw,
        )
    if _BARE.fullmatch(text):
        return WinningLine(_parse_number(text.strip()), raw)
    m = _FAULT.fullmatch(text)
    if m is not None:
        return FaultPacket(int(m.group(1)), raw)
    m = _BONUS.fullmatch(text)
    if m is not None:
        days = m.group(3)
        return BonusLine(int(m.group(1)), int(m.group(2)), int(days) if days else None, raw)
    m = _SENSOR.fullmatch(text)
    if m is not None:
        return SensorEvent(m.group(1), int(m.group(2)), raw)
    m = _REPLY.fullmatch(text)
    if m is not None and text[1] != "Y":
        return Reply(m.group(1), (m.group(2) or "").strip(), raw)
    raise LineError(f"unrecognised line {text[:40]!r}")


class LineDecoder:
    """Split a byte stream (any chunking) into lines and decode them.

    ``feed()`` returns frames and :class:`Garbled` items in arrival order and never
    raises. Empty lines (CR LF pairs) are skipped; a run longer than
    :data:`MAX_LINE` without CR/LF is reported once as garbled and discarded up to
    the next line end.
    """

    def __init__(self) -> None:
        self._buf = bytearray()
        self._overflow = False
        self.lines = 0
        self.garbled = 0

    def feed(self, data: bytes) -> list[Frame | Garbled]:
        out: list[Frame | Garbled] = []
        for byte in data:
            if byte in (0x0D, 0x0A):
                if self._overflow:
                    self._overflow = False
                elif self._buf:
                    out.append(self._decode(bytes(self._buf)))
                self._buf.clear()
                continue
            if self._overflow:
                continue
            self._buf.append(byte)
            if len(self._buf) > MAX_LINE:
                out.append(Garbled(f"no line end within {MAX_LINE} bytes", bytes(self._buf[:64])))
                self.garbled += 1
                self._buf.clear()
                self._overflow = True
        return out

    def _decode(self, line: bytes) -> Frame | Garbled:
        self.lines += 1
        try:
            return parse_line(line)
        except LineError as exc:
            self.garbled += 1
            return Garbled(str(exc), line)

    def reset(self) -> None:
        """Forget a partial line (after a reconnect: its start is from another session)."""
        self._buf.clear()
        self._overflow = False


# --------------------------------------------------------------------------- host commands
# Every command is ``*<text>`` + CR LF [ref §2, §6].


def _cmd(text: str) -> bytes:
    return b"*" + text.encode("ascii") + b"\r\n"


def cmd_poll_status() -> bytes:
    """``*X``: ask for a status line (no faster than every 100 ms) [ref §4.1]."""
    return _cmd("X")


def cmd_power(on: bool) -> bytes:
    """``*P 1`` power on (6 -> 1) / ``*P 0`` power off (-> 6) [ref §6.1]."""
    return _cmd(f"P {1 if on else 0}")


def cmd_restart() -> bytes:
    """``*R``: restart the game; acknowledges a void miss-spin [ref §6.1, §9]."""
    return _cmd("R")


def cmd_start_game(direction: Direction | None = None) -> bytes:
    """``*u 1`` (start; clockwise on 2.52 with ``*T g`` +16) or ``*u 3`` (anticlockwise, 2.52)."""
    return _cmd("u 3" if direction is Direction.ANTICLOCKWISE else "u 1")


def cmd_version() -> bytes:
    """``*S``: firmware version (``*S V2.50``)."""
    return _cmd("S")


def cmd_full_version() -> bytes:
    """``*V``: full firmware identification."""
    return _cmd("V")


def cmd_manufacturer() -> bytes:
    """``*K``: manufacturer code (``*K CAM`` when idle) [ref §6.1 ⚠]."""
    return _cmd("K")


def cmd_self_test() -> bytes:
    """``*F``: self-test, state 6 only, up to 5 minutes [ref §6.4]."""
    return _cmd("F")


def cmd_mode(mode: int | None = None) -> bytes:
    """``*o`` reads the operating mode, ``*o <mode>`` sets it (state 6 only) [ref §6.2]."""
    if mode is None:
        return _cmd("o")
    if not 0 <= mode <= 65535:
        raise ValueError(f"operating mode {mode} outside 0..65535")
    return _cmd(f"o {mode}")


def cmd_quiet(quiet: bool) -> bytes:
    """``*q 0`` stops all ``*X`` output, ``*q 1`` restores it [ref §6.7]."""
    return _cmd(f"q {0 if quiet else 1}")


def cmd_extra_params() -> bytes:
    """``*O``: state, protocol enabled, games per hour, mode [ref §6.7]."""
    return _cmd("O")


#: ``*T`` parameters [ref §6.3] (set with the lower-case letter, read with the capital).
SETUP_LETTERS = "dcpqkijrstnmhzg"


def cmd_setup_query(letter: str) -> bytes:
    """``*T <LETTER>``: read a setup parameter; the reply is ``*T <letter> <values>``."""
    if len(letter) != 1 or letter.lower() not in SETUP_LETTERS:
        raise ValueError(f"unknown *T parameter {letter!r} (one of {SETUP_LETTERS})")
    return _cmd(f"T {letter.upper()}")


def cmd_setup_set(letter: str, *values: int | str) -> bytes:
    """``*T <letter> <values>``: set (RAM only until ``*T f``); always read it back."""
    if letter == "f" and not values:
        return _cmd("T f")
    if len(letter) != 1 or letter.lower() not in SETUP_LETTERS or not values:
        raise ValueError(f"bad *T setting {letter!r} {values!r}")
    text = " ".join(str(v) for v in values)
    if not re.fullmatch(r"[0-9. ]+", text):
        raise ValueError(f"*T values must be numbers, got {text!r}")
    return _cmd(f"T {letter.lower()} {text}")


# --------------------------------------------------------------------------- wheel side
# Used by the simulator and by round-trip tests.


def encode_status(status: Status) -> bytes:
    sep = status.separator
    win = "  " if status.win is None else _wire_number(status.win)
    fields_ = (
        "*X",
        str(int(status.state)),
        f"{status.spin:03d}",
        win,
        f"{int(status.flags):X}",
        f"{status.speed:03d}",
        str(int(status.direction)),
    )
    return sep.join(fields_).encode("ascii") + b"\r\n"


def encode_winning_line(number: int) -> bytes:
    return _wire_number(number).encode("ascii") + b"\r\n"


def encode_reply(letter: str, text: str = "") -> bytes:
    return (f"*{letter} {text}" if text else f"*{letter}").encode("ascii") + b"\r\n"


def encode_fault(code: int) -> bytes:
    return f"*F {code}".encode("ascii") + b"\r\n"
