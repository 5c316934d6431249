"""What the long-running commands say while they run (issue 30): ``tablectl view`` and
``tablectl floor-ingest run`` (``tablectl run`` too) log what they connect to, each
outage of the broker (one line when it starts, none while it lasts, one when it ends)
and a periodic one-line progress summary (``--progress S``), documented in their
``--help``.

The commands run as a newcomer runs them (child processes), against a mosquitto that
is down when they start, then up, then killed, then up again.
"""

from __future__ import annotations

import logging
import queue
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

import paho.mqtt.publish as publish
import pytest

from firmware_host.cli import build_parser
from firmware_host.logsetup import ProgressLine
from firmware_host.progress import LinkWatch, Since, duration


class Lines:
    """A child's standard error, line by line, as it comes."""

    def __init__(self, stream: IO[str]) -> None:
        self.q: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream: IO[str]) -> None:
        for line in stream:
            self.q.put(line.rstrip("\n"))

    def wait(self, pattern: str, timeout: float = 30.0) -> str:
        """The next line matching ``pattern`` (a regular expression)."""
        deadline = time.monotonic() + timeout
        rx = re.compile(pattern)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(
                    f"no line matching {pattern!r}; seen:\n" + "\n".join(self.seen)
                )
            try:
                line = self.q.get(timeout=left)
            except queue.Empty:
                continue
            self.seen.append(line)
            if rx.search(line):
                return line


def _child(args: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "firmware_host", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _end(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


def _outage_lines(seen: list[str], where: str) -> tuple[int, int]:
    """(lines saying the link went or could not be reached, lines saying it is back),
    progress lines aside."""
    lines = [ln for ln in seen if where in ln and "progress:" not in ln]
    down = sum(bool(re.search(r"cannot reach|lost", ln)) for ln in lines)
    back = sum("again after" in ln for ln in lines)
    return down, back


@pytest.mark.slow
def test_view_logs_the_broker_down_then_up_and_its_progress(mosquitto_broker: Any) -> None:
    b = mosquitto_broker
    b.stop()
    where = f"broker 127.0.0.1:{b.port}"
    proc = _child(
        ["view", "--broker", f"mqtt://127.0.0.1:{b.port}", "--table", "T1",
         "--listen", "127.0.0.1:0", "--progress", "1"]
    )  # fmt: skip
    assert proc.stderr is not None and proc.stdout is not None
    err = Lines(proc.stderr)
    try:
        assert "tablectl view: http://127.0.0.1:" in proc.stdout.readline()
        line = err.wait(f"cannot reach {where}: ")
        assert "Connection refused" in line and "retrying" in line and "Errno" not in line
        assert "NOT connected for" in err.wait(f"progress: {where} NOT connected")
        time.sleep(1.5)  # failed attempts meanwhile: not one more line each
        b.start()
        line = err.wait(f"connected to {where} again after .* without it")
        assert "failed attempts" in line and "following T1" in line
        publish.single("casino/tables/T1/state", b'{"table_id": "T2"}', hostname=b.host,
                       port=b.port)  # fmt: skip
        line = err.wait(rf"progress: {where} connected; .*messages received 1 \(\+1\)")
        assert "tables shown 0" in line and "ignored 1 (+1) (1 table mismatch)" in line
        b.kill()
        err.wait(f"lost {where}: ")
        err.wait(f"progress: {where} NOT connected")
        b.start()
        err.wait(f"connected to {where} again after")
        err.wait(rf"progress: {where} connected; .*received 1 \(\+0\)")
    finally:
        _end(proc)
    assert _outage_lines(err.seen, where) == (2, 2), "\n".join(err.seen)


@pytest.mark.slow
def test_floor_ingest_run_logs_the_broker_down_then_up_and_its_progress(
    mosquitto_broker: Any, tmp_path: Path
) -> None:
    b = mosquitto_broker
    b.stop()
    where = f"broker 127.0.0.1:{b.port}"
    db = tmp_path / "floor.sqlite3"
    proc = _child(
        ["floor-ingest", "run", "--broker", f"mqtt://127.0.0.1:{b.port}",
         "--db", f"sqlite:///{db}", "--progress", "1"]
    )  # fmt: skip
    assert proc.stderr is not None
    err = Lines(proc.stderr)
    try:
        err.wait(f"floor-ingest w1: connected to database sqlite:///{db}")
        line = err.wait(f"floor-ingest w1: cannot reach {where}: ")
        assert "Connection refused" in line and "Errno" not in line
        line = err.wait(f"progress: {where} NOT connected for .*; database .* connected")
        assert "rounds received 0 (+0), stored 0 (+0)" in line and "tables seen 0" in line
        time.sleep(1.5)
        b.start()
        line = err.wait(f"connected to {where} again after .* without it")
        assert "subscribed to $share/floor-ingest/casino/tables/+/rounds" in line
        publish.single("casino/tables/MO-R-07/rounds", b"{}", qos=1, hostname=b.host,
                       port=b.port)  # fmt: skip
        line = err.wait(rf"progress: {where} connected; .*rounds received 1 \(\+1\)")
        assert "quarantined 1 (+1)" in line and "tables seen 1" in line, line
        b.kill()
        err.wait(f"lost {where}: ")
        b.start()
        err.wait(f"connected to {where} again after")
        err.wait(rf"progress: {where} connected; .*rounds received 1 \(\+0\)")
    finally:
        _end(proc)
    assert _outage_lines(err.seen, where) == (2, 2), "\n".join(err.seen)
    # the empty registry is said once, not at each refresh
    assert sum("registry of 0 tables" in ln for ln in err.seen) == 1, "\n".join(err.seen)


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["view"], ["--progress", "outage", "broker", "one line", "tables shown"]),
        (["floor-ingest", "run"], ["--progress", "outage", "database", "rounds received"]),
        (["run"], ["--progress", "outage", "rounds settled", "connected or not"]),
    ],
)
def test_the_help_says_what_the_log_says(argv: list[str], words: list[str]) -> None:
    parser = build_parser()
    for name in argv:  # the subparser of each word
        sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
        parser = sub.choices[name]  # type: ignore[attr-defined]
    text = " ".join(parser.format_help().split())
    for word in words:
        assert word in text, (argv, word)


def test_a_link_watch_writes_one_line_per_change(caplog: pytest.LogCaptureFixture) -> None:
    now = [100.0]
    w = LinkWatch(logging.getLogger("t"), "me", "database D", clock=lambda: now[0])
    with caplog.at_level(logging.INFO, logger="t"):
        w.down("[Errno 111] Connection refused")
        for _ in range(5):
            now[0] += 10
            w.down("[Errno 111] Connection refused")
        assert w.state() == "database D NOT connected for 50 s (Connection refused)"
        w.up()
        w.up()
        now[0] += 3600
        w.down("timeout")
        now[0] += 185
        w.up("again")
    assert [r.getMessage() for r in caplog.records] == [
        "me: cannot reach database D: Connection refused; retrying (one line when it answers)",
        "me: connected to database D again after 50 s without it (6 failed attempts)",
        "me: lost database D: timeout; retrying (one line when it answers)",
        "me: connected to database D again after 3 min 05 s without it (0 failed attempts; again)",
    ]
    assert w.state() == "database D connected" and w.outages == 1
    assert duration(7300) == "2 h 01 min"


def test_the_tables_progress_line() -> None:
    class Backend:
        def __init__(self, connected: bool) -> None:
            self.connected = connected

        def status(self) -> dict[str, Any]:
            return {
                "table_id": "R1", "phase": "betting_open", "round_id": "R1-000007-ab",
                "journal": {"outbox_pending": 2}, "faults": ["JOURNAL_UNCHECKED"],
                "mqtt": {"broker": "b:1883", "connected": self.connected,
                         "last_error": "MqttError: [Errno 111] Connection refused"},
            }  # fmt: skip

    class Rounds:
        settled, voided = 12, 1

    line = ProgressLine(Backend(False), Rounds())  # type: ignore[arg-type]
    assert line() == (
        "table R1: progress: phase betting_open (round R1-000007-ab); rounds settled 12 (+12), "
        "voided 1 (+1) since start; 2 to publish; broker b:1883 NOT connected (MqttError: "
        "Connection refused); faults JOURNAL_UNCHECKED"
    )
    Rounds.settled = 15
    line.backend = Backend(True)
    assert "rounds settled 15 (+3), voided 1 (+0)" in line() and "b:1883 connected;" in line()
    assert Since().text("x", 4) == "4 (+4)"


async def test_run_logs_its_progress(
    tmp_path: Path, amqtt_broker: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """``tablectl run --progress S``: the daemon's progress line, every S seconds."""
    import asyncio

    from firmware_host.config import validate_document
    from firmware_host.console import hash_pin
    from firmware_host.daemon import TableDaemon
    from firmware_host.mqtt import MqttSettings

    cfg = validate_document(
        {
            "table": {"id": "p-1", "game": "fantan", "result_source": "manual"},
            "console": {"operators": {"tech1": {"pin_hash": hash_pin("8642")}}},
        }
    )
    b = amqtt_broker
    d = TableDaemon(
        cfg, state_dir=tmp_path, runtime_dir=tmp_path,
        mqtt=MqttSettings(host=b.host, port=b.port, protocol=b.protocol),
    )  # fmt: skip
    d.progress_s = 0.3
    with caplog.at_level(logging.INFO, logger="firmware_host.daemon"):
        await d.start()
        try:
            await asyncio.sleep(1.2)
        finally:
            await d.stop()
    lines = [r.getMessage() for r in caplog.records if "progress:" in r.getMessage()]
    assert len(lines) >= 2, lines
    assert lines[-1].startswith("table p-1: progress: phase ")
    assert "rounds settled 0 (+0), voided 0 (+0) since start" in lines[-1]
    assert f"broker {b.host}:{b.port} connected" in lines[-1]
