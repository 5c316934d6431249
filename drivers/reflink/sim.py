"""Serving simulated reflink devices on a pty, a TCP port or an in-memory pipe.

:class:`Simulator` holds one or more :class:`~drivers.reflink.device.DeviceModel`
(several on one connection = an RS-485 bus), each behind its own device endpoint,
and serves them on whatever connection it is given. ``faults`` (what the device
sends) and ``rx_faults`` (what it receives) are :class:`drivers.testing.Faults`
knobs, changeable while it runs: ``sim.faults.garbage_rate = 0.01``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path

from ..testing import Faults, FaultyConnection
from ..transport import Connection, PtyServer, TcpServer, serve_pty, serve_tcp
from .aio import SimRunner, SimUnit
from .device import DeviceModel
from .link import LinkTimers


class Simulator:
    """Simulated device(s) speaking reflink."""

    def __init__(
        self,
        models: DeviceModel | Mapping[int, DeviceModel],
        *,
        timers: LinkTimers | None = None,
        faults: Faults | None = None,
        rx_faults: Faults | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if isinstance(models, DeviceModel):
            models = {0: models}
        self.units = {
            addr: SimUnit(m, address=addr, timers=timers, clock=clock) for addr, m in models.items()
        }
        self.runner = SimRunner(self.units.values())
        self.faults = faults or Faults()
        self.rx_faults = rx_faults or Faults()
        self.servers: list[PtyServer | TcpServer] = []

    def unit(self, address: int = 0) -> SimUnit:
        return self.units[address]

    async def serve(self, conn: Connection) -> None:
        """Serve on one connection until it ends (a :data:`drivers.transport.Handler`)."""
        # always wrapped, so that knobs turned while it runs take effect
        await self.runner.serve(FaultyConnection(conn, rx=self.rx_faults, tx=self.faults))

    async def serve_pty(self, link: str | Path | None = None) -> PtyServer:
        server = await serve_pty(self.serve, link)
        self.servers.append(server)
        return server

    async def serve_tcp(self, host: str = "127.0.0.1", port: int = 0) -> TcpServer:
        server = await serve_tcp(self.serve, host, port)
        self.servers.append(server)
        return server

    def reboot(self, address: int = 0) -> None:
        """Power-cycle one device's link (new session): the host sees a restart."""
        self.units[address].reboot()
        reboot = getattr(self.units[address].model, "reboot", None)
        if callable(reboot):
            reboot()

    async def close(self) -> None:
        for s in self.servers:
            await s.close()
        self.servers.clear()
        await self.runner.stop()
