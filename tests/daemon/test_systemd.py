"""The daemon as systemd runs it: Type=notify READY, WATCHDOG from the event loop,
STOPPING and a clean exit on SIGTERM; a blocked loop stops the WATCHDOG pings."""

from __future__ import annotations

import asyncio
import itertools
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from firmware_host.config import validate_document
from firmware_host.daemon import TableDaemon
from firmware_host.mqtt import MqttSettings
from firmware_host.sdnotify import Notifier
from tablesim.principals import make_principals
from tablesim.tables import to_toml

CONFIG = """\
version = 1
[table]
id = "sd-1"
game = "fantan"
result_source = "manual"
[mqtt]
host = "127.0.0.1"
port = {port}
protocol = "{protocol}"
reconnect_min_ms = 50
"""


class NotifyListener:
    """What systemd's NOTIFY_SOCKET would receive, with arrival times."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(path))
        self.sock.settimeout(0.2)
        self.messages: list[tuple[float, str]] = []
        self._stop = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self._stop:
            try:
                data = self.sock.recv(4096)
            except TimeoutError:
                continue
            except OSError:
                return
            for line in data.decode().splitlines():
                self.messages.append((time.monotonic(), line))

    def wait_for(self, text: str, timeout: float = 20.0) -> float:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for t, m in self.messages:
                if m == text:
                    return t
            time.sleep(0.02)
        raise AssertionError(f"{text!r} not received; got {[m for _, m in self.messages]}")

    def times(self, text: str) -> list[float]:
        return [t for t, m in self.messages if m == text]

    def close(self) -> None:
        self._stop = True
        self.sock.close()


def test_started_as_systemd_would(tmp_path: Path, broker) -> None:
    cfg = tmp_path / "table.toml"
    auth = to_toml({"auth": make_principals(tmp_path / "keys").auth_section()})
    cfg.write_text(CONFIG.format(port=broker.port, protocol=broker.protocol) + auth)
    listener = NotifyListener(tmp_path / "notify.sock")
    env = dict(os.environ, NOTIFY_SOCKET=str(tmp_path / "notify.sock"), WATCHDOG_USEC="400000")
    t0 = time.monotonic()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "firmware_host",
            "run",
            "--config",
            str(cfg),
            "--state-dir",
            str(tmp_path / "state"),
            "--runtime-dir",
            str(tmp_path),
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        ready = listener.wait_for("READY=1")
        print(f"\n  start to READY: {ready - t0:.2f} s (process start included)")
        time.sleep(1.2)
        pings = [t for t in listener.times("WATCHDOG=1") if t > ready]
        assert len(pings) >= 3, pings  # every 0.2 s (half of WATCHDOG_USEC)
        gaps = [b - a for a, b in itertools.pairwise(pings)]
        assert max(gaps) < 0.6, gaps
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
        listener.wait_for("STOPPING=1", timeout=1)
    finally:
        if proc.poll() is None:
            proc.kill()
        listener.close()
    # the journal records the power cycle
    from firmware_host.journal import Journal

    with Journal(tmp_path / "state" / "journal.sqlite3", readonly=True) as j:
        kinds = [e.kind for e in j.chain.events(50)]
    assert "power_up" in kinds and kinds[-1] == "power_down"


async def test_a_blocked_event_loop_stops_the_watchdog(tmp_path: Path, amqtt_broker) -> None:
    listener = NotifyListener(tmp_path / "notify.sock")
    notifier = Notifier({"NOTIFY_SOCKET": str(tmp_path / "notify.sock"), "WATCHDOG_USEC": "200000"})
    cfg = validate_document(
        {
            "table": {"id": "sd-2", "game": "fantan", "result_source": "manual"},
            "auth": make_principals(tmp_path / "keys").auth_section(),
        }
    )
    d = TableDaemon(
        cfg,
        state_dir=tmp_path,
        runtime_dir=tmp_path,
        notifier=notifier,
        mqtt=MqttSettings(
            host=amqtt_broker.host, port=amqtt_broker.port, protocol=amqtt_broker.protocol
        ),
    )
    await d.start()
    try:
        await asyncio.sleep(0.6)
        before = len(listener.times("WATCHDOG=1"))
        assert before >= 2
        t_block = time.monotonic()
        time.sleep(1.0)  # a stuck handler: the event loop cannot run
        t_unblock = time.monotonic()
        await asyncio.sleep(0.5)
        during = [t for t in listener.times("WATCHDOG=1") if t_block + 0.05 < t < t_unblock]
        assert during == [], "watchdog pinged while the loop was blocked"
        assert [t for t in listener.times("WATCHDOG=1") if t > t_unblock], (
            "pings resume after the loop runs"
        )
    finally:
        await d.stop()
        listener.close()


def test_notifier_is_a_no_op_outside_systemd() -> None:
    n = Notifier({})
    assert not n.enabled and n.ready() is False and n.watchdog() is False


@pytest.mark.parametrize("addr", ["@tablectl-test-abstract"])
def test_abstract_socket_address(addr: str) -> None:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind("\0" + addr[1:])
    s.settimeout(2)
    try:
        assert Notifier({"NOTIFY_SOCKET": addr}).ready("up")
        assert s.recv(100) == b"READY=1\nSTATUS=up"
    finally:
        s.close()
