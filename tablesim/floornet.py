"""The standard floor topology in processes on one machine, for tests and benchmarks:
tables -> pit broker -> floor broker over a mosquitto bridge (persistent, QoS 1), with
a TCP link between the two brokers that can be cut and restored (:class:`LinkCut`).

The bridge (``pit_bridge_config``) carries the tables' ``rounds``, ``anchor``,
``state``, ``events`` and answers out to the floor, and the floor's requests and its
signed records of the tables (``<prefix>/floor/records/<table>``) in to the tables;
``cleansession false`` and QoS 1 each way: while the link is down the pit broker queues
what the floor has not acknowledged, and sends it when the link is back.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from .broker import LOOPBACK, MosquittoProcess, free_port, wait_port


def pit_bridge_config(name: str, floor_host: str, floor_port: int, prefix: str = "casino") -> str:
    """The bridge section of a pit broker's ``mosquitto.conf`` (see ``docs/floor.md``)."""
    t = f"{prefix}/tables/+"
    return "\n".join(
        [
            f"connection {name}",
            f"address {floor_host}:{floor_port}",
            "bridge_protocol_version mqttv311",
            "cleansession false",
            f"local_clientid {name}-local",
            f"remote_clientid {name}",
            "try_private true",
            "notifications false",
            "restart_timeout 1 5",
            "keepalive_interval 30",
            "bridge_max_packet_size 0",
            f"topic {t}/rounds out 1",
            f"topic {t}/anchor out 1",
            f"topic {t}/state out 1",
            f"topic {t}/events out 1",
            f"topic {t}/commands/response out 1",
            f"topic {t}/bets/response out 1",
            f"topic {t}/commands/request in 1",
            f"topic {t}/bets/request in 1",
            f"topic {prefix}/floor/records/# in 1",
            "",
        ]
    )


class _Relay:
    """The TCP relay itself (an asyncio server): ``listen_port`` -> ``target``."""

    def __init__(self, target: tuple[str, int], port: int) -> None:
        self.target = target
        self.port = port
        self._conns: set[asyncio.StreamWriter] = set()
        self.open = True

    async def serve(self) -> asyncio.Server:
        return await asyncio.start_server(self._accept, LOOPBACK, self.port)

    async def _accept(self, r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        if not self.open:
            w.transport.abort()
            return
        try:
            tr, tw = await asyncio.open_connection(*self.target)
        except OSError:
            w.transport.abort()
            return
        for s in (w, tw):
            sock = s.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._conns.update((w, tw))

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(OSError, asyncio.IncompleteReadError, ConnectionError):
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            dst.transport.abort()

        await asyncio.gather(pipe(r, tw), pipe(tr, w))
        self._conns.discard(w)
        self._conns.discard(tw)

    def cut(self) -> None:
        self.open = False
        for w in list(self._conns):
            w.transport.abort()  # no FIN handshake: the link is simply gone
        self._conns.clear()

    def restore(self) -> None:
        self.open = True


class LinkCut:
    """A TCP relay in a child process (``python -m tablesim.floornet --relay``), so that
    a busy test process never starves it: ``port`` -> ``target``. :meth:`cut` (SIGUSR1)
    aborts every connection and refuses new ones until :meth:`restore` (SIGUSR2): a
    pulled cable, a firewall change; the brokers see their connection die and retry."""

    def __init__(self, target_host: str, target_port: int, listen_port: int | None = None) -> None:
        self.target = (target_host, target_port)
        self.port = listen_port or free_port(LOOPBACK)
        self.proc: subprocess.Popen[bytes] | None = None
        self.cuts = 0

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tablesim.floornet", "--relay", str(self.port),
             self.target[0], str(self.target[1])],
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
        wait_port(LOOPBACK, self.port, timeout=10)

    def _signal(self, sig: int) -> None:
        assert self.proc is not None
        self.proc.send_signal(sig)
        time.sleep(0.2)

    def cut(self) -> None:
        self.cuts += 1
        self._signal(signal.SIGUSR1)

    def restore(self) -> None:
        self._signal(signal.SIGUSR2)

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc = None


def _relay_main(port: int, host: str, target_port: int) -> None:
    async def run() -> None:
        relay = _Relay((host, target_port), port)
        server = await relay.serve()
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGUSR1, relay.cut)
        loop.add_signal_handler(signal.SIGUSR2, relay.restore)
        stop = asyncio.Event()
        loop.add_signal_handler(signal.SIGTERM, stop.set)
        async with server:
            await stop.wait()

    asyncio.run(run())


class PitAndFloor:
    """A floor broker, a pit broker bridged to it through a :class:`LinkCut`.

    ``save_every_change``: both brokers save after every change (as
    ``config/broker/`` recommends for one table's broker); else once a second (with
    thousands of queued messages a save per message stalls the broker for seconds: its
    bridge's keepalive then times out; what it acknowledged in the last second before a
    crash may be lost, which the floor repairs with ``replay_rounds``)."""

    def __init__(
        self, workdir: Path, *, pit_name: str = "pit1", save_every_change: bool = True
    ) -> None:
        self.floor = MosquittoProcess(
            workdir / "floor-broker",
            extra_config="set_tcp_nodelay true",
            save_every_change=save_every_change,
        )
        self.cable = LinkCut(self.floor.host, self.floor.port)
        self.pit = MosquittoProcess(
            workdir / f"{pit_name}-broker",
            extra_config="set_tcp_nodelay true\n"
            + pit_bridge_config(pit_name, LOOPBACK, self.cable.port),
            save_every_change=save_every_change,
        )

    def start(self) -> None:
        self.floor.start()
        self.cable.start()
        self.pit.start()

    def close(self) -> None:
        self.pit.close()
        self.cable.close()
        self.floor.close()


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--relay":
        _relay_main(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]))
    else:
        print("usage: python -m tablesim.floornet --relay PORT TARGET_HOST TARGET_PORT")
        sys.exit(2)
