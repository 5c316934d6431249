"""The Cammegh SS2 written as a line-protocol file (``drivers/lineproto/protocols/
cammegh-ss2.toml``) against the native driver (``drivers/cammegh``), on the real
capture and on captures corrupted at random.

What is compared is every event, field for field (``to_json``: device, raw lines,
numbers, spins, states, flags, actions, messages, and the capture positions): the
native decoder and the file's are two implementations (the codec's regular expressions
and the tracker in Python, against the file's patterns, conversions and tables read by
the generic trackers), and the expected winning numbers are the capture README's own
list, read from the README, not from either decoder.

The file cannot express what is not lines (docs/protocols/line-protocol.md, "The
Cammegh SS2 as a file"): the native driver's identification at connect (``*S``, ``*o``,
the ``MODE_NO_AUTO_STATUS`` warning), its self-test (``*F`` collected into a
``SelfTestResult``), the grace periods as settings (the file fixes them at the native
defaults) and its own ``WheelFault`` event for an in-play ``*F <code>`` packet (the
file's ``fault`` rule gives the wheel kind's ``WheelWarning`` ``WHEEL_FAULT_<code>``,
action fault; the capture holds none).
"""

from __future__ import annotations

import asyncio
import random
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from drivers.base import HealthState
from drivers.cammegh.decode import decode_capture as native_decode
from drivers.cammegh.events import WinningNumber
from drivers.lineproto import DEFAULT_PROTOCOL
from drivers.lineproto.decode import decode_capture
from drivers.lineproto.driver import LineWheelDriver
from drivers.lineproto.load import load_protocol
from drivers.lineproto.sim import ReplaySim
from drivers.lineproto.spec import Protocol

ROOT = Path(__file__).resolve().parents[2]
FIXTURE_DIR = ROOT / "tests" / "fixtures" / "cammegh-ss2"
CAPTURE = FIXTURE_DIR / "real-session.log"
SS2_FILE = ROOT / "drivers" / "lineproto" / "protocols" / "cammegh-ss2.toml"


def ss2() -> Protocol:
    return load_protocol(SS2_FILE)


def readme_numbers() -> list[str]:
    readme = (FIXTURE_DIR / "README.md").read_text(encoding="utf-8")
    return readme.split("All 188, in file order:", 1)[1].split("```", 2)[1].split()


def rx_lines() -> list[bytes]:
    out = []
    for line in CAPTURE.read_bytes().splitlines():
        parts = line.split(b"\t", 2)
        if len(parts) == 3 and parts[1] == b"RX":
            out.append(parts[2])
    return out


def normalised(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The native ``WheelFault`` (the SS2's own event for ``*F <code>``) as the wheel
    kind's warning the file gives for it; everything else as it is."""
    out = []
    for e in events:
        if e["kind"] == "WheelFault":
            e = {"kind": "WheelWarning", "code": f"WHEEL_FAULT_{e['code']}",
                 "message": e["meaning"], "raw": e["raw"]}  # fmt: skip
        elif e["kind"] == "WheelWarning" and e["code"].startswith("WHEEL_FAULT_"):
            e = {k: e[k] for k in ("kind", "code", "message", "raw")}
        out.append(e)
    return out


def test_the_file_is_the_default_of_a_line_wheel() -> None:
    assert DEFAULT_PROTOCOL["wheel"] == SS2_FILE
    p = ss2()
    assert (p.kind, p.results.lines, p.results.wrap) == ("wheel", 3, 256)


def test_the_real_capture_decodes_to_the_readmes_188_results_event_for_event() -> None:
    """Session by session (tablectl decode's reading: a new run of the host at each
    ``# session``), every event of the native decoder, equal field for field, and its
    188 winning numbers those of the README."""
    data = CAPTURE.read_bytes()
    native = list(native_decode(data, device="wheel"))
    mine = list(decode_capture(data, ss2(), device="wheel"))
    wins = [e for e in mine if e["kind"] == "WinningNumber"]
    assert [e["pocket"] for e in wins] == readme_numbers()
    assert len(wins) == 188
    assert [e for e in native if e["kind"] == "WinningNumber"] == wins
    assert len(mine) == len(native) == 1198
    assert mine == native
    kinds = {e["kind"] for e in mine}
    assert kinds == {"GameStateChanged", "WinningNumber", "WheelWarning", "GameVoided", "WarningCleared"}
    voids = sorted({e["reason"] for e in mine if e["kind"] == "GameVoided"})
    assert voids == ["COMPONENT_FAULT", "WHEEL_STOPPED"]
    # the result whose third line is the next session's first line (docs/protocols/cammegh-ss2.md §2.1)
    split = next(e for e in wins if e["spin"] == 99 and e["session"] == 20)
    assert split["raw"] == "17\n*X;5;099;17;0;142;0\n*X;2;100;17;0;141;0"
    assert sum(e["confirmed_by"] == "status" for e in wins) == 2


def _one_stream(data: bytes, protocol: Protocol | None) -> list[dict[str, Any]]:
    """The capture's RX lines as one stream of raw bytes (the live driver across
    reconnects: no session, no times)."""
    if protocol is None:
        return list(native_decode(data, device="wheel"))
    return list(decode_capture(data, protocol, device="wheel"))


def test_the_capture_as_one_raw_stream_gives_the_same_events() -> None:
    raw = b"\r\n".join(rx_lines()) + b"\r\n"
    native = _one_stream(raw, None)
    mine = _one_stream(raw, ss2())
    assert mine == native
    assert [e["pocket"] for e in mine if e["kind"] == "WinningNumber"] == readme_numbers()


def test_any_chunking_gives_the_same_events() -> None:
    """Raw bytes cut anywhere (1 to 40 bytes a chunk) read the same (the splitter)."""
    from drivers.lineproto.framing import LineSplitter

    raw = b"\r\n".join(rx_lines()[:3000]) + b"\r\n"
    protocol = ss2()
    whole = LineSplitter(protocol.framing).feed(raw)
    rng = random.Random(4)
    splitter = LineSplitter(protocol.framing)
    pieces: list[Any] = []
    at = 0
    while at < len(raw):
        n = rng.randint(1, 40)
        pieces += splitter.feed(raw[at : at + n])
        at += n
    assert pieces == whole and len(whole) == 3000


# ------------------------------------------------------------------ differential fuzz
_LINES = rx_lines()
#: Bytes that make near-valid lines, and anything.
_NEAR = b"*X;:0123456789ABCDEF \r\nPuOKNF"


@st.composite
def corrupted_segment(draw: st.DrawFn) -> bytes:
    """A stretch of the real capture (60-400 lines, raw, CR LF) with bytes substituted,
    inserted, deleted and lines cut, dropped or doubled."""
    start = draw(st.integers(0, len(_LINES) - 400))
    n = draw(st.integers(60, 400))
    lines = list(_LINES[start : start + n])
    rng = random.Random(draw(st.integers(0, 2**32)))
    for _ in range(draw(st.integers(0, 30))):
        i = rng.randrange(len(lines))
        line = bytearray(lines[i])
        op = rng.randrange(6)
        pos = rng.randrange(len(line) + 1)
        byte = rng.choice(_NEAR) if rng.random() < 0.8 else rng.randrange(256)
        if op == 0 and line:
            line[min(pos, len(line) - 1)] = byte
        elif op == 1:
            line.insert(pos, byte)
        elif op == 2 and line:
            del line[min(pos, len(line) - 1)]
        elif op == 3:
            line = line[:pos]
        elif op == 4:
            lines.insert(i, lines[i])
        else:
            lines.pop(i)
            continue
        lines[i] = bytes(line)
    return b"\r\n".join(lines) + b"\r\n"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(corrupted_segment())
def test_on_corrupted_captures_the_file_and_the_native_driver_agree(data: bytes) -> None:
    """Whatever the corruption, the file's events are the native decoder's: the same
    results (or the same refusal to take one), the same states, voids and warnings."""
    assert normalised(_one_stream(data, ss2())) == normalised(_one_stream(data, None))


# ------------------------------------------------------------------ the live driver
async def test_a_line_wheel_reads_the_capture_replayed_on_a_pty() -> None:
    """The capture's RX lines replayed by ``tablectl sim``'s simulator on a real
    pseudo-terminal, read by ``line-wheel`` through pyserial: the README's 188 numbers."""
    sim = ReplaySim(ss2(), CAPTURE.read_bytes(), speed=1e9, max_gap=0.0, loop=False)
    server = await sim.serve_pty()
    driver = LineWheelDriver("wheel", {"protocol": str(SS2_FILE), "port": server.path})
    sub = driver.events()
    numbers: list[str] = []

    async def pump() -> None:
        async for ev in sub:
            if isinstance(ev, WinningNumber):
                numbers.append(ev.pocket)

    task = asyncio.create_task(pump())
    await driver.start()
    try:
        async with asyncio.timeout(120):
            while sim.sent < len(sim.lines) or len(numbers) < 188:
                await asyncio.sleep(0.05)
        await asyncio.sleep(0.1)
    finally:
        await driver.stop()
        await sim.close()
        sub.close()
        await asyncio.wait_for(task, 5)
    assert numbers == readme_numbers()
    assert driver.health.state is HealthState.OFFLINE  # stopped
    assert len(sim.results) == 188  # what the simulator replayed, read back


def test_the_file_reads_the_same_lines_the_native_codec_reads() -> None:
    """Line by line on the capture: a line the native codec parses, the file reads (by
    the rule of the same kind of line), and a line it refuses, the file refuses."""
    from drivers.cammegh.codec import LineError, parse_line
    from drivers.lineproto.rules import Matcher, Unmatched

    kinds = {"Status": "status", "WinningLine": "winning_line", "Reply": "reply",
             "FaultPacket": "fault_packet", "BonusLine": "bonus", "SensorEvent": "sensor"}  # fmt: skip
    matcher = Matcher(ss2())
    seen = set()
    for line in set(_LINES):
        got = matcher.match(line)
        try:
            frame = parse_line(line)
        except LineError:
            assert isinstance(got, Unmatched), line
            seen.add("garbled")
            continue
        assert not isinstance(got, Unmatched), (line, got.reason)
        assert got.rule.name == kinds[type(frame).__name__], line
        seen.add(got.rule.name)
    assert {"status", "winning_line", "reply", "garbled"} <= seen


def test_the_files_exception_table_is_the_native_policy() -> None:
    """Cell for cell: every (bit, state) of drivers/cammegh/policy.py, its action, grace
    (at the native defaults), what follows it, restart, void, source and text."""
    from drivers.cammegh.policy import RULES, PolicySettings

    grace = PolicySettings()
    table = {f.bit: f for f in ss2().flags.flags}
    assert sorted(table) == sorted({int(bit) for bit, _ in RULES})
    for (bit, state), rule in RULES.items():
        mine = table[int(bit)].rule(state)
        assert mine.action == rule.action.value, (bit, state)
        assert mine.text == rule.text and mine.source == rule.source
        assert mine.grace == (getattr(grace, rule.grace) if rule.grace else None)
        assert mine.grace_from == rule.grace_from
        assert mine.after_grace == (rule.after_grace.value if rule.after_grace else None)
        assert (mine.restart, mine.void) == (rule.restart, rule.void)
        assert table[int(bit)].code == bit.name


@pytest.mark.parametrize(
    "line",
    ["*X;5;099;17;0;142;0", "*X:2:100: 0:8:141:1", " 7", "00", "*F 6", "*T h 161"],
)
def test_a_line_reads_as_in_the_protocol_reference(line: str) -> None:
    """The fields, as [ref §4.1] defines them, written out here."""
    from drivers.lineproto.rules import Line, Matcher

    got = Matcher(ss2()).match(line.encode())
    assert isinstance(got, Line)
    expected = {
        "*X;5;099;17;0;142;0": {"state": 5, "spin": 99, "number": 17, "flags": 0, "speed": 142, "direction": "clockwise"},
        "*X:2:100: 0:8:141:1": {"state": 2, "spin": 100, "number": 0, "flags": 8, "speed": 141, "direction": "anticlockwise"},
        " 7": {"number": 7},
        "00": {"number": 37},
        "*F 6": {"code": 6, "message": "encoder has failed (or the wheel is not calibrated)"},
        "*T h 161": {"letter": "T", "text": "h 161"},
    }[line]  # fmt: skip
    assert dict(got.fields) == expected


def test_the_capture_has_no_fault_packet() -> None:
    """What the comparison cannot show on the capture (the ``*F`` mapping) is shown on
    a line of its own (above): the capture holds no ``*F <code>``."""
    assert not any(re.fullmatch(rb"\*F \d{1,3}", line) for line in _LINES)
