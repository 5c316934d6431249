"""``tablectl sim`` and ``tablectl decode`` (drivers/cli.py)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from drivers.base import FrameLog
from drivers.cammegh.driver import CammeghDriver
from drivers.cammegh.events import WinningNumber
from drivers.cli import decoders
from drivers.simulators import run_simulator, simulated
from firmware_host.cli import main

ROOT = Path(__file__).resolve().parents[2]
FIXTURE_DIR = ROOT / "tests" / "fixtures" / "cammegh-ss2"


def _events(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def test_decode_the_real_capture(capsys: pytest.CaptureFixture[str]) -> None:
    """README's example: every one of the capture's 188 results, in order, and nothing
    left unconfirmed. Session 19's last result (spin 099, 17: its bare line and one
    state-5 line end the session) is completed by session 20's first line, the next
    game's (spin 100, still showing 17), and comes before that line's state change."""
    readme = (FIXTURE_DIR / "README.md").read_text(encoding="utf-8")
    expected = readme.split("All 188, in file order:", 1)[1].split("```", 2)[1].split()
    assert main(["decode", "cammegh-ss2", str(FIXTURE_DIR / "real-session.log")]) == 0
    events = _events(capsys.readouterr().out)
    wins = [e for e in events if e["kind"] == "WinningNumber"]
    assert [e["pocket"] for e in wins] == expected
    assert len(wins) == 188
    codes = {e.get("code") for e in events if e["kind"] == "WheelWarning"}
    assert not codes & {"RESULT_UNCONFIRMED", "RESULT_MISSING", "RESULT_DISPUTED"}
    first = wins[0]
    assert first["session"] == 7 and first["spin"] == 1 and isinstance(first["t"], float)
    at = next(i for i, e in enumerate(events) if e["kind"] == "WinningNumber" and e["spin"] == 99)
    split, after = events[at], events[at + 1]
    assert (split["session"], split["pocket"], split["confirmed_by"]) == (20, "17", "line")
    assert split["raw"] == "17\n*X;5;099;17;0;142;0\n*X;2;100;17;0;141;0"
    assert (after["kind"], after["session"], after["spin"], after["state"]) == (
        "GameStateChanged", 20, 100, 2,
    )  # fmt: skip
    assert after["line"] == split["line"]  # the same line: the result first
    assert {"GameStateChanged", "GameVoided", "WheelWarning"} <= {e["kind"] for e in events}


def test_decode_raw_bytes_from_stdin(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    raw = (
        b"*X;4;002;31;0;170;0\r\n*X;4;002;31;0;170;0\r\n28\r\n*X;5;002;28;0;172;0\r\n"
        b"*X;5;002;28;0;172;0\r\n\x00\xffgarbage\r\n*X;2;003;28;0;171;0\r\n"
    )

    class Stdin:
        buffer = __import__("io").BytesIO(raw)

    monkeypatch.setattr(sys, "stdin", Stdin)
    assert main(["decode", "cammegh-ss2", "--garbled"]) == 0
    events = _events(capsys.readouterr().out)
    kinds = [e["kind"] for e in events]
    assert kinds == [
        "GameStateChanged", "GameStateChanged", "WinningNumber", "Garbled", "GameStateChanged",
    ]  # fmt: skip
    win = events[2]
    assert (win["number"], win["spin"], win["confirmed_by"], win["t"]) == (28, 2, "line", None)


def test_decode_a_driver_frame_dump(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """What a driver dumps on a fault (FrameLog) is itself a decodable capture."""
    log = FrameLog()
    lines = (b"*X;4;009; 7;0;170;1", b" 0", b"*X;5;009; 0;0;170;1", b"*X;5;009; 0;0;170;1")
    for line in (*lines, b"*u\tOK\x00"):
        log.rx(line)
    log.tx(b"*R")
    path = tmp_path / "dump.log"
    path.write_text("\n".join(log.dump()) + "\n")
    assert main(["decode", "cammegh-ss2", str(path), "--tx", "--garbled"]) == 0
    events = _events(capsys.readouterr().out)
    assert [e["kind"] for e in events] == [
        "GameStateChanged", "GameStateChanged", "WinningNumber", "Garbled", "TX",
    ]  # fmt: skip
    assert events[2]["pocket"] == "0"
    assert events[3]["raw"] == "*u\tOK\x00"  # unescaped back to the bytes received


def test_decode_missing_file_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["decode", "cammegh-ss2", "/nonexistent/capture.log"]) == 2
    assert "/nonexistent/capture.log: no such file" in capsys.readouterr().err


def test_the_wheel_declares_its_simulator_and_decoder() -> None:
    assert "cammegh-ss2" in simulated() and "cammegh-ss2" in decoders()


def test_bad_faults_spec(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sim", "cammegh-ss2", "--faults", "garbage=2"]) == 2
    assert "between 0 and 1" in capsys.readouterr().err


async def test_sim_entry_on_tcp_plays_games_for_a_driver() -> None:
    lines: list[str] = []
    stop = asyncio.Event()
    task = asyncio.create_task(
        run_simulator(
            "cammegh-ss2",
            tcp=0,
            seed=5,
            interval=0.05,
            options={"speed": 100},
            out=lines.append,
            stop=stop,
        )
    )
    try:
        async with asyncio.timeout(10):
            while not lines:
                await asyncio.sleep(0.01)
        port = re.search(r'port = "([^"]+)"', lines[0])
        assert port is not None and port.group(1).startswith("socket://127.0.0.1:")
        driver = CammeghDriver("wheel", {"port": port.group(1), "identify_on_connect": False})
        events = driver.events()
        await driver.start()
        try:
            async with asyncio.timeout(30):
                while not isinstance(ev := await events.get(), WinningNumber):
                    pass
        finally:
            await driver.stop()
        assert any(line.startswith("spin ") for line in lines) or ev.number >= 0
    finally:
        stop.set()
        await asyncio.wait_for(task, 10)


def test_tablectl_sim_process_on_a_pty() -> None:
    """The real command: prints the pty path, serves it, exits cleanly on SIGTERM."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "firmware_host", "sim", "cammegh-ss2", "--speed", "100",
         "--interval", "0.05", "--seed", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        m = re.search(r'port = "(/dev/pts/\d+)"', first)
        assert m, first
        assert Path(m.group(1)).exists()
        spin = proc.stdout.readline()
        assert re.match(r"spin \d{3}: \d+", spin), spin
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
