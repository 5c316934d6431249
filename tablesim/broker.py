"""MQTT brokers for the demo and the tests: embedded amqtt, and mosquitto processes.

- :class:`EmbeddedBroker` runs an amqtt broker inside the caller's event loop, on
  loopback. ``tablectl demo`` uses it on machines without mosquitto. amqtt keeps
  sessions and retained messages in memory only, and speaks MQTT 3.1.1 only
  (:data:`AMQTT_PROTOCOL`): a table on it runs ``protocol = "3.1.1"``, where a
  publication the broker refuses cannot be detected (docs/mqtt.md).
- :class:`MosquittoProcess` starts ``mosquitto`` (``/usr/sbin/mosquitto`` or on
  ``PATH``) on a free loopback port with a generated configuration and on-disk
  persistence saved after every change, and can ``kill()`` it with SIGKILL and
  ``start()`` it again on the same port with the same persistence file: the
  broker-kill fault tests.
- :class:`AmqttProcess` is the same for amqtt in a child process
  (``python -m tablesim.broker --port N``), for killing amqtt too.

Nothing here is used by ``tablectl run``: a production table talks to the floor's
broker.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

log = logging.getLogger(__name__)

LOOPBACK = "127.0.0.1"
#: The MQTT version amqtt speaks (it refuses an MQTT 5 CONNECT): what a table or client
#: on the embedded broker must use. mosquitto speaks both; the table's default is 5.
AMQTT_PROTOCOL = "3.1.1"


@dataclass(frozen=True, slots=True)
class BrokerEndpoint:
    """Where a broker listens; ``kind`` is ``amqtt`` or ``mosquitto``."""

    host: str
    port: int
    kind: str

    @property
    def url(self) -> str:
        return f"mqtt://{self.host}:{self.port}"

    @property
    def protocol(self) -> str:
        """The MQTT version a table uses on it (``[mqtt] protocol``)."""
        return AMQTT_PROTOCOL if self.kind == "amqtt" else "5"


def free_port(host: str = LOOPBACK) -> int:
    """A TCP port that was free a moment ago (the kernel's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def port_open(host: str, port: int, timeout: float = 0.2) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def wait_port(host: str, port: int, *, up: bool = True, timeout: float = 10.0) -> None:
    """Wait until the port accepts connections (``up``) or refuses them."""
    deadline = time.monotonic() + timeout
    while port_open(host, port) != up:
        if time.monotonic() > deadline:
            state = "accept" if up else "refuse"
            raise TimeoutError(f"{host}:{port} did not {state} connections within {timeout}s")
        time.sleep(0.02)


# ---------------------------------------------------------------------------
# amqtt in this event loop


def amqtt_config(host: str, port: int) -> dict[str, Any]:
    return {
        "listeners": {"default": {"type": "tcp", "bind": f"{host}:{port}"}},
        "plugins": {"amqtt.plugins.authentication.AnonymousAuthPlugin": {"allow_anonymous": True}},
    }


class EmbeddedBroker:
    """An amqtt broker on loopback, in the running event loop.

    >>> async with EmbeddedBroker() as endpoint:   # doctest: +SKIP
    ...     print(endpoint.url)
    """

    kind = "amqtt"
    protocol = AMQTT_PROTOCOL

    def __init__(self, host: str = LOOPBACK, port: int = 0) -> None:
        self.host = host
        self.port = port
        self._broker: Any = None

    @property
    def endpoint(self) -> BrokerEndpoint:
        return BrokerEndpoint(self.host, self.port, "amqtt")

    @property
    def url(self) -> str:
        return self.endpoint.url

    async def start(self) -> BrokerEndpoint:
        from amqtt.broker import Broker  # optional dependency: pip install .[embedded-broker]

        if not self.port:
            self.port = free_port(self.host)
        # amqtt logs every connection at INFO; the demo's output is the table, not the broker.
        logging.getLogger("amqtt").setLevel(logging.WARNING)
        self._broker = Broker(amqtt_config(self.host, self.port))
        await self._broker.start()
        return self.endpoint

    async def stop(self) -> None:
        if self._broker is not None:
            broker, self._broker = self._broker, None
            with contextlib.suppress(Exception):
                await broker.shutdown()

    async def __aenter__(self) -> BrokerEndpoint:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


# ---------------------------------------------------------------------------
# brokers as child processes (killable)


def find_mosquitto() -> str | None:
    """Path of the mosquitto binary, or None."""
    for candidate in ("/usr/sbin/mosquitto", "/usr/local/sbin/mosquitto"):
        if os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("mosquitto")


class BrokerProcess:
    """A broker in a child process on a fixed loopback port; killable and restartable."""

    kind = "?"
    #: The MQTT version a table uses on it (``[mqtt] protocol``).
    protocol = "5"

    def __init__(self, workdir: str | Path | None = None, port: int | None = None) -> None:
        self._own_dir = workdir is None
        self.workdir = (
            Path(workdir) if workdir is not None else Path(tempfile.mkdtemp(prefix=f"{self.kind}-"))
        )
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.host = LOOPBACK
        self.port = port or free_port(self.host)
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0
        self.kills = 0

    @property
    def endpoint(self) -> BrokerEndpoint:
        return BrokerEndpoint(self.host, self.port, self.kind)

    @property
    def url(self) -> str:
        return self.endpoint.url

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def command(self) -> list[str]:
        raise NotImplementedError

    def start(self, timeout: float = 10.0) -> BrokerEndpoint:
        """Start (or restart) on the same port; returns once it accepts connections."""
        if self.running:
            return self.endpoint
        wait_port(self.host, self.port, up=False, timeout=timeout)
        logf = open(self.workdir / f"{self.kind}.log", "ab")  # noqa: SIM115 - owned by the child
        try:
            self.proc = subprocess.Popen(
                self.command(), stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
        finally:
            logf.close()
        self.starts += 1
        deadline = time.monotonic() + timeout
        while not port_open(self.host, self.port):
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"{self.kind} exited with {self.proc.returncode}; log:\n{self.log_tail()}"
                )
            if time.monotonic() > deadline:
                self.kill()
                raise TimeoutError(
                    f"{self.kind} did not listen on {self.port}; log:\n{self.log_tail()}"
                )
            time.sleep(0.02)
        return self.endpoint

    def kill(self) -> None:
        """SIGKILL: no goodbye, no final save; only what it persisted survives."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)
            self.kills += 1
        self.proc = None

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM and wait (mosquitto saves its persistence file)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.proc = None

    def restart(self, *, hard: bool = True, down_for: float = 0.0) -> BrokerEndpoint:
        """Kill (``hard``) or stop, stay down ``down_for`` seconds, start again."""
        if hard:
            self.kill()
        else:
            self.stop()
        if down_for:
            time.sleep(down_for)
        return self.start()

    def log_tail(self, n: int = 30) -> str:
        p = self.workdir / f"{self.kind}.log"
        try:
            return "\n".join(p.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""

    def close(self) -> None:
        self.stop()
        if self._own_dir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> BrokerProcess:
        self.start()
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class MosquittoProcess(BrokerProcess):
    """mosquitto with persistence saved after every change (``autosave_on_changes``),
    or, with ``save_every_change=False``, once a second as
    ``config/broker/mosquitto-floor.conf`` recommends (what a crash loses of the last
    second, the floor repairs with ``replay_rounds``: docs/mqtt.md).

    ``max_queued_messages`` and ``max_inflight_messages`` are 0 (no limit) unless given
    (None: mosquitto's own defaults, 1000 and 20). They change how it refuses: with
    ``max_queued_messages 0`` mosquitto (2.0.16 to 2.0.20 at least, and Debian 12's
    2.0.11 with its CVE-2023-28366 fix) closes the connection after the PUBACK of a
    publication its ACL denies; with a limit it keeps the connection, as earlier
    versions always do (docs/mqtt.md, "Refusals are seen"). ``max_inflight_messages`` is
    the Receive Maximum it announces to MQTT 5 clients."""

    kind = "mosquitto"

    def __init__(
        self,
        workdir: str | Path | None = None,
        port: int | None = None,
        *,
        binary: str | None = None,
        persistence: bool = True,
        save_every_change: bool = True,
        allow_anonymous: bool = True,
        extra_config: str = "",
        max_queued_messages: int | None = 0,
        max_inflight_messages: int | None = 0,
    ) -> None:
        found = binary or find_mosquitto()
        if found is None:
            raise FileNotFoundError("mosquitto is not installed (/usr/sbin/mosquitto or on PATH)")
        self.binary = found
        self.persistence = persistence
        self.save_every_change = save_every_change
        self.allow_anonymous = allow_anonymous
        self.max_queued_messages = max_queued_messages
        self.max_inflight_messages = max_inflight_messages
        #: Lines appended after the listener (TLS files, password_file...).
        self.extra_config = extra_config
        super().__init__(workdir, port)

    def config_text(self) -> str:
        lines = [
            f"listener {self.port} {self.host}",
            f"allow_anonymous {'true' if self.allow_anonymous else 'false'}",
            *(
                f"{key} {value}"
                for key, value in (
                    ("max_queued_messages", self.max_queued_messages),
                    ("max_inflight_messages", self.max_inflight_messages),
                )
                if value is not None
            ),
            "log_type error",
            "log_type warning",
            "log_type notice",
            "log_dest stderr",
        ]
        if os.geteuid() == 0:
            lines.append(
                "user root"
            )  # else mosquitto drops to 'mosquitto' and cannot write workdir
        if self.persistence:
            lines += [
                "persistence true",
                f"persistence_location {self.workdir}/",
                "persistence_file mosquitto.db",
                # After every change (one fsync in the broker's only thread per QoS 1
                # message delivered): a SIGKILL loses (almost) nothing the broker acked.
                # Else once a second: the deployment's choice (docs/mqtt.md).
                f"autosave_on_changes {'true' if self.save_every_change else 'false'}",
                "autosave_interval 1",
            ]
        if self.extra_config:
            lines.append(self.extra_config)
        return "\n".join(lines) + "\n"

    def command(self) -> list[str]:
        conf = self.workdir / "mosquitto.conf"
        conf.write_text(self.config_text())
        return [self.binary, "-c", str(conf)]


class AmqttProcess(BrokerProcess):
    """amqtt in a child process (in-memory state: a kill loses sessions and retained)."""

    kind = "amqtt"
    protocol = AMQTT_PROTOCOL

    def command(self) -> list[str]:
        return [
            sys.executable,
            "-m",
            "tablesim.broker",
            "--host",
            self.host,
            "--port",
            str(self.port),
        ]


# ---------------------------------------------------------------------------
# python -m tablesim.broker: amqtt as a process


async def _serve(host: str, port: int) -> None:
    broker = EmbeddedBroker(host, port)
    await broker.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    print(f"amqtt listening on {host}:{port}", flush=True)
    await stop.wait()
    await broker.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run the embedded amqtt broker on loopback.")
    parser.add_argument("--host", default=LOOPBACK)
    parser.add_argument("--port", type=int, default=1883)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(_serve(args.host, args.port))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
