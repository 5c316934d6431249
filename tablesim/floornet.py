"""The standard floor topology in processes on one machine, for tests and benchmarks:
tables -> pit broker -> floor broker over a mosquitto bridge (persistent, QoS 1), with
a TCP link between the two brokers that can be cut and restored (:class:`LinkCut`).

The bridge (``pit_bridge_config``) carries the tables' ``rounds``, ``state``,
``events`` and answers out to the floor, and the floor's requests in to the tables;
``cleansession false`` and QoS 1 each way: while the link is down the pit broker queues
what the floor has not acknowledged, and sends it when the link is back.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from pathlib import Path

from .broker import LOOPBACK, MosquittoProcess, free_port


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
            "keepalive_interval 5",
            "bridge_max_packet_size 0",
            f"topic {t}/rounds out 1",
            f"topic {t}/state out 1",
            f"topic {t}/events out 1",
            f"topic {t}/commands/response out 1",
            f"topic {t}/bets/response out 1",
            f"topic {t}/commands/request in 1",
            f"topic {t}/bets/request in 1",
            "",
        ]
    )


class LinkCut:
    """A TCP relay on its own thread: ``listen_port`` -> ``target``. :meth:`cut` closes
    every connection and refuses new ones until :meth:`restore` (a pulled cable, a
    firewall change); the brokers see their connection die and retry."""

    def __init__(self, target_host: str, target_port: int, listen_port: int | None = None) -> None:
        self.target = (target_host, target_port)
        self.port = listen_port or free_port(LOOPBACK)
        self._loop = asyncio.new_event_loop()
        self._server: asyncio.Server | None = None
        self._conns: set[asyncio.StreamWriter] = set()
        self._open = True
        self.cuts = 0
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    def start(self) -> None:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._serve(), self._loop).result(10)

    async def _serve(self) -> None:
        self._server = await asyncio.start_server(self._accept, LOOPBACK, self.port)

    async def _accept(self, r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        if not self._open:
            w.close()
            return
        try:
            tr, tw = await asyncio.open_connection(*self.target)
        except OSError:
            w.close()
            return
        self._conns.update((w, tw))

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(OSError, asyncio.IncompleteReadError, ConnectionError):
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            dst.close()

        await asyncio.gather(pipe(r, tw), pipe(tr, w))
        self._conns.discard(w)
        self._conns.discard(tw)

    def _set(self, up: bool) -> None:
        async def go() -> None:
            self._open = up
            if not up:
                for w in list(self._conns):
                    transport = w.transport
                    transport.abort()  # no FIN handshake: the link is simply gone
                self._conns.clear()

        asyncio.run_coroutine_threadsafe(go(), self._loop).result(10)

    def cut(self) -> None:
        self.cuts += 1
        self._set(False)

    def restore(self) -> None:
        self._set(True)

    def close(self) -> None:
        async def go() -> None:
            if self._server is not None:
                self._server.close()
            for w in list(self._conns):
                w.transport.abort()

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(go(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)


class PitAndFloor:
    """A floor broker, a pit broker bridged to it through a :class:`LinkCut`."""

    def __init__(
        self, workdir: Path, *, pit_name: str = "pit1", fast_persistence: bool = False
    ) -> None:
        extra = (
            # Save at most once a second instead of after every change (benchmarks).
            "autosave_on_changes false\nautosave_interval 1" if fast_persistence else ""
        )
        self.floor = MosquittoProcess(workdir / "floor-broker", extra_config="set_tcp_nodelay true")
        self.link = LinkCut(self.floor.host, self.floor.port)
        self.pit = MosquittoProcess(
            workdir / f"{pit_name}-broker",
            extra_config="set_tcp_nodelay true\n"
            + pit_bridge_config(pit_name, LOOPBACK, self.link.port),
        )
        if fast_persistence:
            self.floor.extra_config += "\n" + extra
            self.pit.extra_config = extra + "\n" + self.pit.extra_config

    def start(self) -> None:
        self.floor.start()
        self.link.start()
        self.pit.start()

    def close(self) -> None:
        self.pit.close()
        self.link.close()
        self.floor.close()
