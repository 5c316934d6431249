"""Daemons as child processes (``python -m firmware_host run``), brokers, cleanup.

Each daemon gets a TOML configuration written by the bench, its own state and
runtime directories on disk, and ``NOTIFY_SOCKET`` pointing at a datagram socket of
the bench, exactly as systemd does for a ``Type=notify`` unit: the time from the
spawn to ``READY=1`` is the start-up figure. Every process started here is
registered and stopped (SIGTERM, then SIGKILL) however the bench ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import signal
import socket
import sys
import time
from pathlib import Path
from typing import Any

from tablesim.tables import to_toml

from .common import REPO

JSON = Any

_LIVE: set[DaemonProcess] = set()


@functools.cache
def broker_protocol(host: str, port: int) -> str:
    """The MQTT version a table uses on the broker at ``host:port``: 5, the table's
    default, unless the broker refuses an MQTT 5 connection (CONNACK 0x84: the amqtt
    fallback, which speaks 3.1.1 only)."""
    import paho.mqtt.client as mqtt
    from paho.mqtt.enums import CallbackAPIVersion

    client = mqtt.Client(
        CallbackAPIVersion.VERSION2, client_id=f"bench-probe-{os.getpid()}", protocol=mqtt.MQTTv5
    )
    answers: list[Any] = []
    client.on_connect = lambda c, u, flags, rc, props: answers.append(rc)
    try:
        client.connect(host, port, keepalive=10)
        deadline = time.monotonic() + 5
        while not answers and time.monotonic() < deadline:
            client.loop(0.1)
    except OSError:
        return "5"
    finally:
        with contextlib.suppress(Exception):
            client.disconnect()
    return "3.1.1" if answers and getattr(answers[0], "value", None) == 0x84 else "5"


def mqtt_section(host: str, port: int, client_id: str) -> dict[str, JSON]:
    return {
        "host": host,
        "port": port,
        "protocol": broker_protocol(host, port),
        "client_id": client_id,
        "reconnect_min_ms": 100,
        "reconnect_max_ms": 2000,
    }


class DaemonProcess:
    """``python -m firmware_host run`` in a child process, READY timed over NOTIFY_SOCKET."""

    #: How the daemon is started (``bench.stages`` starts it through its own wrapper).
    module: list[str] = ["-m", "firmware_host"]  # noqa: RUF012 - replaced, never mutated

    def __init__(self, doc: dict[str, JSON], directory: Path, name: str) -> None:
        self.doc = doc
        self.dir = directory / name
        self.dir.mkdir(parents=True, exist_ok=True)
        self.name = name
        self.config = self.dir / "table.toml"
        self.config.write_text(to_toml(doc))
        self.proc: asyncio.subprocess.Process | None = None
        self.spawned_at = 0.0
        self.ready_at: float | None = None
        self._sock: socket.socket | None = None

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    @property
    def ready_seconds(self) -> float | None:
        return None if self.ready_at is None else self.ready_at - self.spawned_at

    async def start(self, timeout: float = 60.0) -> float:
        """Spawn and wait for READY=1; returns the seconds from spawn to READY."""
        notify = self.dir / "notify.sock"
        with contextlib.suppress(FileNotFoundError):
            notify.unlink()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sock.bind(str(notify))
        sock.setblocking(False)
        self._sock = sock
        env = dict(os.environ)
        env["NOTIFY_SOCKET"] = str(notify)
        env.pop("WATCHDOG_USEC", None)
        log = open(self.dir / "daemon.log", "ab")  # noqa: SIM115 - the child owns it
        loop = asyncio.get_running_loop()
        try:
            self.spawned_at = time.perf_counter()
            self.proc = await asyncio.create_subprocess_exec(
                sys.executable, *self.module, "run",
                "--config", str(self.config),
                "--state-dir", str(self.dir),
                "--runtime-dir", str(self.dir),
                "--log-level", "WARNING",
                stdin=asyncio.subprocess.DEVNULL, stdout=log, stderr=log, cwd=REPO, env=env,
            )  # fmt: skip
        finally:
            log.close()
        _LIVE.add(self)
        deadline = self.spawned_at + timeout
        while True:
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                raise TimeoutError(f"{self.name}: no READY within {timeout}s\n{self.log_tail()}")
            try:
                data = await asyncio.wait_for(loop.sock_recv(sock, 4096), min(remaining, 0.5))
            except TimeoutError:
                if self.proc.returncode is not None:
                    raise RuntimeError(
                        f"{self.name} exited with {self.proc.returncode}\n{self.log_tail()}"
                    ) from None
                continue
            if b"READY=1" in data.split(b"\n"):
                self.ready_at = time.perf_counter()
                return self.ready_at - self.spawned_at

    def log_tail(self, n: int = 30) -> str:
        try:
            lines = (self.dir / "daemon.log").read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join(lines[-n:])

    async def stop(self, timeout: float = 15.0) -> int | None:
        proc = self.proc
        if proc is not None and proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), timeout)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                await proc.wait()
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        _LIVE.discard(self)
        return proc.returncode if proc is not None else None


def kill_leftovers() -> None:
    """Last resort (atexit / error paths): SIGKILL every daemon this bench started."""
    for d in list(_LIVE):
        if d.proc is not None and d.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(d.proc.pid, signal.SIGKILL)
        _LIVE.discard(d)


async def stop_all(daemons: list[DaemonProcess]) -> None:
    await asyncio.gather(*(d.stop() for d in daemons), return_exceptions=True)


def floor_nodelay(fc: Any) -> None:
    """TCP_NODELAY on a started :class:`FloorClient`'s socket, as the daemon's own link
    sets it: without it Nagle's algorithm and delayed ACKs add ~40 ms to some requests
    of the *simulated floor*, which would be measured as the table's latency."""
    client = getattr(fc, "_client", None)
    paho = getattr(client, "_client", None)
    sock = paho.socket() if paho is not None else None
    if sock is not None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if client is not None:
        client.pending_calls_threshold = 10_000  # 50 bets in flight are expected here
