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


def readme_rule_results() -> list[tuple[int, int, str]]:
    """(session, spin, number) of every result, read from the log by the README's own rule
    (its section "Winning numbers"), written out here with a regular expression and
    nothing of the codec: within a session, a status line in state 5 whose previous status
    line of the session was not state 5 of the same spin; the number is its win field."""
    status = re.compile(r"\*X;([1-7]);(\d{3});( \d|\d{2}|  );[0-9A-F];\d{3};[01]")
    out = []
    previous: tuple[str, str] | None = None
    current = 0
    for session, _, line in capture_rx():
        if session != current:
            current, previous = session, None
        m = status.fullmatch(line.decode())
        if m is None:
            continue
        state, spin, win = m.groups()
        if state == "5" and previous != ("5", spin):
            out.append((session, int(spin), win.strip()))
        previous = (state, spin)
    return out


def test_readme_lists_agree_with_each_other() -> None:
    """Guard against a misread README: its two lists and its rule re-applied to the log
    must give the same numbers, and the rule the spin ranges of its "By session" list."""
    flat = readme_numbers()
    sessions = readme_sessions()
    by_session = [n for _, (_, _, nums) in sorted(sessions.items()) for n in nums]
    assert len(flat) == 188
    assert by_session == flat
    rule = readme_rule_results()
    assert [n for _, _, n in rule] == flat
    for number, (first, last, _) in sessions.items():
        spins = [spin for s, spin, _ in rule if s == number]
        assert (spins[0], spins[-1]) == (first, last), f"session {number}"


#: The one result of the README whose third line lies in the next session: spin 099 of
#: session 19 (17) has its bare line and one state-5 line, the session's last line; the
#: next line the wheel sent that the host logged opens session 20 (``*X;2;100;17``, 51 s
#: later: the next game, spin + 1, repeating the last winning number). A result needs
#: three lines (tracker.RESULT_LINES); the next game's first line is the third.
SPLIT = (19, 99, "17")
SPLIT_LINES = b"17\n*X;5;099;17;0;142;0\n*X;2;100;17;0;141;0"


def _replay_tracker(mode: str) -> tuple[list[tuple[int, WinningNumber]], list[Any]]:
    """Results (session where emitted, event) and the trackers' reports at the sessions'
    ends and the capture's (session, event). ``mode``: ``"stream"`` one tracker for the
    whole capture (the live driver across reconnects); ``"hand_over"`` a tracker per
    session, each handed over to the next (``tablectl decode``); ``"fresh"`` a tracker per
    session knowing nothing of the previous one."""
    decoder = LineDecoder()
    results: list[tuple[int, WinningNumber]] = []
    ends: list[tuple[int, Any]] = []
    tracker = WheelTracker("wheel")
    current = 0
    for session, t, line in capture_rx():
        if session != current:
            if mode != "stream":  # each session is a separate run of the host program
                successor = WheelTracker("wheel")
                reports = tracker.hand_over(successor) if mode == "hand_over" else tracker.end()
                ends += [(current, ev) for ev in reports]
                tracker, decoder = successor, LineDecoder()
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
    last = [line for s, _, line in rows if s == session]
    first_after = next(line for s, _, line in rows if s == session + 1)
    assert last[-2] == number.encode()  # the bare line
    assert last[-1].startswith(f"*X;5;{spin:03d};{number};".encode())
    assert first_after.startswith(f"*X;2;{spin + 1:03d};{number};".encode())
    assert readme_sessions()[session][2][-1] == number
    assert b"\n".join([*last[-2:], first_after]) == SPLIT_LINES


def test_capture_replays_session_by_session_to_all_188_results() -> None:
    """``tablectl decode``'s reading: a tracker per session, handed over to the next. Every
    result of the README, in order, on its spin (the README's rule re-applied), one per
    spin, and no report: session 19's last result is completed by session 20's first
    line, the next game's, and emitted while reading it."""
    results, ends = _replay_tracker("hand_over")
    assert ends == []
    assert [ev.pocket for _, ev in results] == readme_numbers()
    assert [(ev.spin, ev.pocket) for _, ev in results] == [
        (spin, n) for _, spin, n in readme_rule_results()
    ]
    split_session, split_spin, split_number = SPLIT
    emitted = {(s, ev.spin): ev for s, ev in results}
    split = emitted[(split_session + 1, split_spin)]
    assert (split.pocket, split.confirmed_by, split.raw) == (split_number, "line", SPLIT_LINES)
    # every other result is emitted in the session of its own lines
    sessions = readme_sessions()
    sessions[split_session][2].pop()
    sessions[split_session + 1][2].insert(0, split_number)
    for number, (_, _, nums) in sessions.items():
        assert [ev.pocket for s, ev in results if s == number] == nums, f"session {number}"
    # one per spin (spin numbers repeat only after a mains power cycle: 001, 002, 094-099)
    keys = [(s, ev.spin) for s, ev in results]
    assert len(keys) == len(set(keys))
    # 186 results come with their bare line (README); the other two by status lines alone
    assert sum(ev.confirmed_by == "line" for _, ev in results) == 186
    status_only = [(s, ev.spin, ev.pocket) for s, ev in results if ev.confirmed_by == "status"]
    assert status_only == [(12, 2, "14"), (27, 149, "21")]


def test_capture_as_one_stream_gives_the_same_188_results() -> None:
    """Read as the wheel sent it (one tracker, as the live driver across reconnects)."""
    results, ends = _replay_tracker("stream")
    by_session, _ = _replay_tracker("hand_over")
    assert [ev.pocket for _, ev in results] == readme_numbers()
    assert [(s, ev.spin, ev.raw) for s, ev in results] == [
        (s, ev.spin, ev.raw) for s, ev in by_session
    ]
    assert ends == []


def test_without_the_hand_over_two_lines_are_not_a_result() -> None:
    """A run of the host that knows nothing of the previous one sees spin 099's 17 on two
    lines only: reported unconfirmed at the session's end, never taken (the next session
    starts on the next spin and takes nothing for 099)."""
    results, ends = _replay_tracker("fresh")
    split_session, split_spin, split_number = SPLIT
    expected = readme_numbers()
    index = [i for i, (s, spin, _) in enumerate(readme_rule_results()) if s == split_session][-1]
    del expected[index]
    assert [ev.pocket for _, ev in results] == expected
    assert [(s, ev.code, ev.spin) for s, ev in ends] == [
        (split_session, "RESULT_UNCONFIRMED", split_spin)
    ]
    assert f"({split_number} on 2 of the 3 lines" in ends[0][1].message


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
