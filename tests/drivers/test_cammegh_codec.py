"""Cammegh SS2 line codec: every example of the protocol reference, and its edges.

Citations: [ref §N] = ``docs/protocols/cammegh-ss2-reference.md`` section N (which cites
the vendor guide pages as [G p.N] and the real capture as [obs]).
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from drivers.base import CodecError
from drivers.cammegh import codec
from drivers.cammegh.codec import (
    BonusLine,
    Direction,
    FaultPacket,
    GameState,
    Garbled,
    LineDecoder,
    LineError,
    Reply,
    SensorEvent,
    Status,
    WarningFlag,
    WinningLine,
    parse_line,
)


def status(line: str) -> Status:
    frame = parse_line(line.encode())
    assert isinstance(frame, Status)
    return frame


@pytest.mark.parametrize(
    ("line", "state", "spin", "win", "flags", "speed", "direction"),
    [
        # [ref §4.1] examples from the guide [G p.20] and the real wheel [obs]
        ("*X;2;011;23;0;154;0", 2, 11, 23, 0, 154, 0),
        ("*X;5;011;25;0;165;1", 5, 11, 25, 0, 165, 1),
        ("*X;6;001;  ;0;000;0", 6, 1, None, 0, 0, 0),
        ("*X;5;011; 4;0;175;0", 5, 11, 4, 0, 175, 0),
        ("*X;2;183;18;8;166;1", 2, 183, 18, 8, 166, 1),
        ("*X;5;037; 0;0;170;1", 5, 37, 0, 0, 170, 1),
        ("*X;7;256;36;F;953;1", 7, 256, 36, 15, 953, 1),  # state 7, spin 256, all flags
    ],
)
def test_status_fields(
    line: str, state: int, spin: int, win: int | None, flags: int, speed: int, direction: int
) -> None:
    s = status(line)
    assert (int(s.state), s.spin, s.win, int(s.flags), s.speed, int(s.direction)) == (
        state,
        spin,
        win,
        flags,
        speed,
        direction,
    )
    assert s.separator == ";"
    # and back to the same bytes
    assert codec.encode_status(s) == line.encode() + b"\r\n"


def test_colon_separator_is_accepted_and_kept() -> None:
    s = status("*X:4:012:17:0:168:1")
    assert (s.state, s.spin, s.win, s.separator) == (GameState.NO_MORE_BETS, 12, 17, ":")
    assert codec.encode_status(s) == b"*X:4:012:17:0:168:1\r\n"


@pytest.mark.parametrize(
    "line",
    [
        "*X;4:012;17;0;168;1",  # mixed separators
        "*X;8;012;17;0;168;1",  # no state 8
        "*X;0;012;17;0;168;1",  # no state 0
        "*X;4;257;17;0;168;1",  # spin counts 1..256 [ref §4.1]
        "*X;4;12;17;0;168;1",  # spin is 3 digits
        "*X;4;012;05;0;168;1",  # 0-9 are space padded, "05" is not a number form
        "*X;4;012;37;0;168;1",  # no pocket 37 ("00" is written "00")
        "*X;4;012;4 ;0;168;1",  # right-justified, not left
        "*X;4;012;17;a;168;1",  # flags are an upper-case hex digit
        "*X;4;012;17;10;168;1",  # one hex digit
        "*X;4;012;17;0;16;1",  # speed is 3 digits
        "*X;4;012;17;0;168;2",  # direction 0/1
        "*X;4;012;17;0;168;1;",  # trailing field
        " *X;4;012;17;0;168;1",  # leading space
        "*X",  # a bare *X is a command, never a wheel line
    ],
)
def test_malformed_status_lines_are_rejected(line: str) -> None:
    with pytest.raises(LineError):
        parse_line(line.encode())


def test_extra_zero_pockets() -> None:
    # [ref §4.2]: "00" (pocket 37), "000" (38), "0000" (39); fields are 2-4 characters
    assert status("*X;5;003;00;0;165;1").win == 37
    assert status("*X;5;003;000;0;165;1").win == 38
    assert status("*X;5;003;0000;0;165;1").win == 39
    assert codec.pocket_text(37) == "00"
    assert codec.encode_winning_line(37) == b"00\r\n"
    assert codec.encode_winning_line(7) == b" 7\r\n"


def test_warning_flags_are_a_hex_bit_sum() -> None:
    # [ref §5]: 8 + 2 = "A"
    s = status("*X;3;010;12;A;170;0")
    assert s.flags == WarningFlag.LAUNCH_FAILURE | WarningFlag.MISS_SPIN
    assert codec.flag_names(int(s.flags)) == ("miss_spin", "launch_failure")
    for digit in "0123456789ABCDEF":
        assert int(status(f"*X;3;010;12;{digit};170;0").flags) == int(digit, 16)


@pytest.mark.parametrize("state", range(1, 8))
def test_all_seven_states(state: int) -> None:
    s = status(f"*X;{state};001;  ;0;000;0")
    assert int(s.state) == state
    assert codec.STATE_NAMES[state]


def test_spin_number_wraps_at_256() -> None:
    # [ref §4.1]: range 1-256, wraps
    assert codec.next_spin(255) == 256
    assert codec.next_spin(256) == 1
    assert codec.spins_between(255, 2) == 3
    assert codec.spins_between(10, 10) == 0


@pytest.mark.parametrize(
    ("line", "number"),
    [(" 7", 7), ("7", 7), (" 0", 0), ("0", 0), ("17", 17), ("36", 36), ("00", 37)],
)
def test_bare_winning_number_line(line: str, number: int) -> None:
    # [ref §4.2]: with or without its leading space (the capture's host stripped it)
    frame = parse_line(line.encode())
    assert isinstance(frame, WinningLine)
    assert frame.number == number


@pytest.mark.parametrize("line", ["37", "99", "  7", "7 ", "-1", "05"])
def test_not_a_winning_number_line(line: str) -> None:
    with pytest.raises(LineError):
        parse_line(line.encode())


@pytest.mark.parametrize(
    ("line", "letter", "text"),
    [
        ("*P OK", "P", "OK"),
        ("*P NO", "P", "NO"),
        ("*u OK", "u", "OK"),
        ("*o BUSY", "o", "BUSY"),
        ("*o 1159", "o", "1159"),
        ("*T h 161", "T", "h 161"),
        ("*T s 14.0 17.50000", "T", "s 14.0 17.50000"),
        ("*S V2.50", "S", "V2.50"),
        ("*V V2.50 Cammegh / Syoptic - SlingShot 2 Roulette Wheel (c) 03/12/18", "V",
         "V2.50 Cammegh / Syoptic - SlingShot 2 Roulette Wheel (c) 03/12/18"),
        ("*  NO", " ", "NO"),  # [ref §6.1 obs]: "* u1" is answered "*  NO"
        ("*) NO", ")", "NO"),
        ("*F BUSY", "F", "BUSY"),
        ("*O 6 1 161 1159", "O", "6 1 161 1159"),
        ("*K CAM", "K", "CAM"),
    ],
)  # fmt: skip
def test_replies(line: str, letter: str, text: str) -> None:
    frame = parse_line(line.encode())
    assert isinstance(frame, Reply)
    assert (frame.letter, frame.text) == (letter, text)


def test_fault_packets_and_self_test_codes() -> None:
    # [ref §4.4]
    for code, words in [(0, "no errors"), (2, "no ball"), (13, "sensor 3 broken on"),
                        (21, "sensor 1 broken off"), (100, "timed out")]:  # fmt: skip
        frame = parse_line(f"*F {code}".encode())
        assert isinstance(frame, FaultPacket)
        assert frame.code == code
        assert words in frame.meaning
    unknown = parse_line(b"*F 9")
    assert isinstance(unknown, FaultPacket) and "unknown" in unknown.meaning


def test_bonus_and_sensor_lines() -> None:
    # [ref §4.3, §4.5]
    assert parse_line(b"*Y;1;123") == BonusLine(1, 123, None)
    assert parse_line(b"*Y;1;999;00") == BonusLine(1, 999, 0)
    assert parse_line(b"*bs 2") == SensorEvent("s", 2)
    assert parse_line(b"bn 17") == SensorEvent("n", 17)
    with pytest.raises(LineError):
        parse_line(b"*Y;7;123")


@pytest.mark.parametrize(
    "line",
    # [ref §12.7] the capture's damaged lines (except "1", which is a valid bare line)
    ["00;0", "6; 9;0;158;0", "4;146; 9;0;159;0", "*X;4;14*X;*X;4;146; 9;0;158;0"],
)
def test_damaged_capture_lines_are_rejected(line: str) -> None:
    with pytest.raises(CodecError):
        parse_line(line.encode())


def test_non_ascii_and_control_bytes_are_rejected() -> None:
    for line in (b"*X;2;011;23;0;154;0\x00", b"*P \xffOK", b"\x1b[A", b""):
        with pytest.raises(LineError):
            parse_line(line)


def test_host_commands_bytes() -> None:
    # [ref §6]: every command is *<text> CR LF
    assert codec.cmd_start_game() == b"*u 1\r\n"
    assert codec.cmd_start_game(Direction.CLOCKWISE) == b"*u 1\r\n"
    assert codec.cmd_start_game(Direction.ANTICLOCKWISE) == b"*u 3\r\n"
    assert codec.cmd_restart() == b"*R\r\n"
    assert codec.cmd_power(True) == b"*P 1\r\n"
    assert codec.cmd_power(False) == b"*P 0\r\n"
    assert codec.cmd_version() == b"*S\r\n"
    assert codec.cmd_full_version() == b"*V\r\n"
    assert codec.cmd_self_test() == b"*F\r\n"
    assert codec.cmd_mode() == b"*o\r\n"
    assert codec.cmd_mode(1159) == b"*o 1159\r\n"
    assert codec.cmd_poll_status() == b"*X\r\n"
    assert codec.cmd_quiet(True) == b"*q 0\r\n"
    assert codec.cmd_setup_query("h") == b"*T H\r\n"
    assert codec.cmd_setup_set("h", 161) == b"*T h 161\r\n"
    assert codec.cmd_setup_set("s", "16.0", "18.0") == b"*T s 16.0 18.0\r\n"
    assert codec.cmd_setup_set("f") == b"*T f\r\n"
    with pytest.raises(ValueError):
        codec.cmd_mode(70000)
    with pytest.raises(ValueError):
        codec.cmd_setup_query("x")
    with pytest.raises(ValueError):
        codec.cmd_setup_set("h", "1; *P 0")


STREAM = (
    b"*X;4;002;31;0;170;0\r\n28\r\n*X;5;002;28;0;172;0\r\n*u OK\r\n\r\n"
    b"*X;5;002;28;0;172;0\n*X;2;003;28;0;171;0\r*F 0\r\n"
)


@given(st.lists(st.integers(min_value=1, max_value=len(STREAM) - 1), max_size=12))
def test_decoder_is_independent_of_chunking(cuts: list[int]) -> None:
    whole = LineDecoder().feed(STREAM)
    dec = LineDecoder()
    got = []
    points = [0, *sorted(set(cuts)), len(STREAM)]
    for a, b in itertools.pairwise(points):
        got += dec.feed(STREAM[a:b])
    assert got == whole
    assert [type(f).__name__ for f in whole] == [
        "Status", "WinningLine", "Status", "Reply", "Status", "Status", "FaultPacket",
    ]  # fmt: skip


def test_overlong_line_is_reported_once_then_the_decoder_recovers() -> None:
    dec = LineDecoder()
    out = dec.feed(b"x" * 1000)
    out += dec.feed(b"yyy\r\n*X;2;003;28;0;171;0\r\n")
    assert [type(f) for f in out] == [Garbled, Status]
    assert dec.garbled == 1
