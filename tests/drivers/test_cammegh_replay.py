"""The real Cammegh SS2 capture replays to exactly the winning numbers of its README.

Fixture: ``tests/fixtures/cammegh-ss2/real-session.log`` (63,689 serial lines of a
real Slingshot 2, firmware V2.50). The expected numbers are read from the README's
own lists ("All 188, in file order" and "By session"), which were produced by the
fixture author's script, not by this code.

Two paths: the sans-I/O tracker fed line by line with the capture's timestamps
(what ``tablectl decode`` does), and the real driver reading the RX lines through
a pseudo-terminal (pyserial on the slave side, like a USB-serial adapter).
"""

from __future__ import annotations

import asyncio
import itertools
import re
import time
from pathlib import Path
from typing import Any

import pytest

from drivers.cammegh.codec import LineDecoder
from drivers.cammegh.driver import CammeghDriver
from drivers.cammegh.events import WinningNumber
from drivers.cammegh.tracker import WheelTracker
from drivers.transport import Connection, serve_pty

FIXTURE_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "cammegh-ss2"
LOG = FIXTURE_DIR / "real-session.log"
README = FIXTURE_DIR / "README.md"


def _code_block_after(text: str, heading: str) -> str:
    after = text.split(heading, 1)[1]
    return after.split("```", 2)[1]


def readme_numbers() -> list[str]:
    block = _code_block_after(README.read_text(encoding="utf-8"), "All 188, in file order:")
    return block.split()


def readme_sessions() -> dict[int, tuple[int, int, list[str]]]:
    """session -> (first spin, last spin, numbers), from the README's "By session" block."""
    block = _code_block_after(README.read_text(encoding="utf-8"), "By session")
    out = {}
    for m in re.finditer(r"session (\d+) \(spins (\d+)–(\d+)\): ([\d ]+)", block):
        out[int(m.group(1))] = (int(m.group(2)), int(m.group(3)), m.group(4).split())
    return out


def capture_rx() -> list[tuple[int, float, bytes]]:
    """(session, time, line) of every RX line, in file order."""
    rows = []
    session = 0
    for line in LOG.read_text(encoding="ascii").splitlines():
        if line.startswith("# session"):
            session = int(line.split()[2])
            continue
        t, direction, text = line.split("\t", 2)
        if direction == "RX":
            rows.append((session, float(t), text.encode("ascii")))
    return rows


def test_readme_lists_agree_with_each_other() -> None:
    """Guard against a misread README: the two lists must be the same numbers."""
    flat = readme_numbers()
    by_session = [n for _, (_, _, nums) in sorted(readme_sessions().items()) for n in nums]
    assert len(flat) == 188
    assert by_session == flat


#: The one result of the README whose confirming line lies in the next session: spin 099
#: of session 19 (17) has its bare line and one state-5 line, the session's last line; the
#: next line the wheel sent that the host logged opens session 20 (``*X;2;100;17``). A
#: result needs three lines (tracker.RESULT_LINES), so a replay that starts a fresh
#: tracker per session reports it unconfirmed; one continuous stream takes it.
SPLIT = (19, 99, "17")


def _replay_tracker(*, per_session: bool) -> tuple[list[tuple[int, WinningNumber]], list[Any]]:
    """Results (session, event) and the tracker's end-of-input reports (session, event)."""
    decoder = LineDecoder()
    results: list[tuple[int, WinningNumber]] = []
    ends: list[tuple[int, Any]] = []
    tracker = WheelTracker("wheel")
    current = 0
    for session, t, line in capture_rx():
        if session != current:
            if per_session:  # each session is a separate run of the host program
                ends += [(current, ev) for ev in tracker.end()]
                tracker, decoder = WheelTracker("wheel"), LineDecoder()
            current = session
        for frame in decoder.feed(line + b"\r\n"):
            for ev in tracker.feed(frame, t):
                if isinstance(ev, WinningNumber):
                    results.append((session, ev))
    ends += [(current, ev) for ev in tracker.end()]
    return results, ends


def test_the_split_result_is_what_the_capture_shows() -> None:
    """The fixture itself shows SPLIT: session 19 ends on spin 099's only state-5 line."""
    session, spin, number = SPLIT
    rows = capture_rx()
    last = [line for s, _, line in rows if s == session][-1]
    first_after = next(line for s, _, line in rows if s == session + 1)
    assert last.startswith(f"*X;5;{spin:03d};{number};".encode())
    assert first_after.startswith(f"*X;2;{spin + 1:03d};{number};".encode())
    assert readme_sessions()[session][2][-1] == number


def test_capture_replays_through_the_tracker_to_the_readme_numbers() -> None:
    results, ends = _replay_tracker(per_session=True)
    sessions = readme_sessions()
    split_session, split_spin, split_number = SPLIT
    sessions[split_session][2].pop()  # confirmed only by the next session's first line
    expected = [n for _, (_, _, nums) in sorted(sessions.items()) for n in nums]
    assert [ev.pocket for _, ev in results] == expected
    for number, (first, last, nums) in sessions.items():
        got = [ev for s, ev in results if s == number]
        assert [ev.pocket for ev in got] == nums, f"session {number}"
        last = last - 1 if number == split_session else last
        assert got[0].spin == first and got[-1].spin == last, f"session {number} spins"
    # one per spin: no (session, spin) twice
    keys = [(s, ev.spin) for s, ev in results]
    assert len(keys) == len(set(keys))
    # 186 results come with their bare line (README), the split one among them; the other
    # two by status lines alone
    assert sum(ev.confirmed_by == "line" for _, ev in results) == 186 - 1
    # the split result is reported at the end of its session, not taken, not lost
    assert [(s, ev.code, ev.spin) for s, ev in ends] == [
        (split_session, "RESULT_UNCONFIRMED", split_spin)
    ]
    assert f"({split_number} on 2 of the 3 lines" in ends[0][1].message


def test_capture_as_one_stream_gives_all_188_numbers() -> None:
    """Read as the wheel sent it (one tracker, as the live driver across reconnects)."""
    results, ends = _replay_tracker(per_session=False)
    assert [ev.pocket for _, ev in results] == readme_numbers()
    assert sum(ev.confirmed_by == "line" for _, ev in results) == 186
    assert ends == []


async def test_capture_replays_through_a_pty_to_the_readme_numbers(tmp_path: Path) -> None:
    rx = capture_rx()
    stream = b"".join(line + b"\r\n" for _, _, line in rx)
    done = asyncio.Event()
    go = asyncio.Event()  # bytes written before the port is opened are flushed by the open

    async def replay(conn: Connection) -> None:
        await go.wait()
        view = memoryview(stream)
        for i in range(0, len(view), 4096):
            await conn.write(bytes(view[i : i + 4096]))
        done.set()
        await asyncio.sleep(3600)  # keep the master open until the test ends

    server = await serve_pty(replay, link=tmp_path / "ttySS2")
    driver = CammeghDriver(
        "wheel",
        {"port": server.path, "identify_on_connect": False, "status_timeout_ms": 60000},
    )
    events = driver.events()
    t0 = time.monotonic()
    await driver.start()
    try:
        while not driver.link.connected:
            await asyncio.sleep(0.01)
        go.set()
        await asyncio.wait_for(done.wait(), 120)
        deadline = time.monotonic() + 120
        while driver.decoder.lines < len(rx):
            assert time.monotonic() < deadline, f"only {driver.decoder.lines}/{len(rx)} lines read"
            await asyncio.sleep(0.05)
    finally:
        elapsed = time.monotonic() - t0
        await driver.stop()
        await server.close()
    numbers = []
    spins = []
    while (ev := events.get_nowait()) is not None:
        if isinstance(ev, WinningNumber):
            numbers.append(ev.pocket)
            spins.append(ev.spin)
    assert numbers == readme_numbers()
    # consecutive results never share a spin number (one per spin)
    assert all(a != b for a, b in itertools.pairwise(spins))
    assert driver.decoder.garbled == 4  # the capture's torn lines (README: 5, one of them "1")
    print(f"pty replay of {len(rx)} lines took {elapsed:.2f} s")
