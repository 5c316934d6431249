"""The real Cammegh SS2 capture replays to exactly the winning numbers of its README.

Fixture: ``../shared/fixtures/cammegh-ss2/real-session.log`` (63,689 serial lines of a
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

import pytest

from drivers.cammegh.codec import LineDecoder
from drivers.cammegh.driver import CammeghDriver
from drivers.cammegh.events import WinningNumber
from drivers.cammegh.tracker import WheelTracker
from drivers.transport import Connection, serve_pty

SHARED = Path(__file__).resolve().parents[2] / ".." / "shared"
FIXTURE_DIR = SHARED / "fixtures" / "cammegh-ss2"
LOG = FIXTURE_DIR / "real-session.log"
README = FIXTURE_DIR / "README.md"

pytestmark = pytest.mark.skipif(
    not LOG.exists(),
    reason=f"the shared Cammegh fixture folder is absent ({FIXTURE_DIR.resolve()})",
)


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


def test_capture_replays_through_the_tracker_to_the_readme_numbers() -> None:
    decoder = LineDecoder()
    results: list[tuple[int, WinningNumber]] = []
    tracker = WheelTracker("wheel")
    current = 0
    for session, t, line in capture_rx():
        if session != current:  # each session is a separate run of the host program
            current, tracker, decoder = session, WheelTracker("wheel"), LineDecoder()
        for frame in decoder.feed(line + b"\r\n"):
            for ev in tracker.feed(frame, t):
                if isinstance(ev, WinningNumber):
                    results.append((session, ev))
    assert [ev.pocket for _, ev in results] == readme_numbers()
    sessions = readme_sessions()
    for number, (first, last, nums) in sessions.items():
        got = [ev for s, ev in results if s == number]
        assert [ev.pocket for ev in got] == nums, f"session {number}"
        assert got[0].spin == first and got[-1].spin == last, f"session {number} spins"
    # one per spin: no (session, spin) twice
    keys = [(s, ev.spin) for s, ev in results]
    assert len(keys) == len(set(keys))
    # 186 results come with their bare line (README); the other two by a repeated status line
    assert sum(ev.confirmed_by == "line" for _, ev in results) == 186


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
