"""systemd notification protocol (sd_notify) without libsystemd.

``Type=notify`` units get ``NOTIFY_SOCKET`` in their environment: a Unix datagram
socket (``@`` prefix = abstract namespace). We send ``READY=1`` once the devices and
the journal are up, ``WATCHDOG=1`` from the event loop itself at half of
``WATCHDOG_USEC`` (so a blocked loop stops the pings and systemd restarts us),
``STATUS=...`` for ``systemctl status``, and ``STOPPING=1`` on shutdown. Outside
systemd every call is a cheap no-op.
"""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Callable


class Notifier:
    def __init__(self, environ: dict[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        self._addr = env.get("NOTIFY_SOCKET") or None
        self._sock: socket.socket | None = None
        usec = env.get("WATCHDOG_USEC")
        pid = env.get("WATCHDOG_PID")
        self.watchdog_usec: int | None = None
        if usec and usec.isdigit() and (not pid or pid == str(os.getpid())):
            self.watchdog_usec = int(usec)

    @property
    def enabled(self) -> bool:
        return self._addr is not None

    def notify(self, *fields: str) -> bool:
        """Send ``KEY=VALUE`` fields; False when not under systemd or on error."""
        if self._addr is None:
            return False
        addr = self._addr
        if addr.startswith("@"):
            addr = "\0" + addr[1:]
        try:
            if self._sock is None:
                self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
            self._sock.sendto("\n".join(fields).encode(), addr)
        except OSError:
            return False
        return True

    def ready(self, status: str = "") -> bool:
        return self.notify("READY=1", *([f"STATUS={status}"] if status else []))

    def status(self, text: str) -> bool:
        return self.notify(f"STATUS={text}")

    def stopping(self) -> bool:
        return self.notify("STOPPING=1")

    def watchdog(self) -> bool:
        return self.notify("WATCHDOG=1")

    async def run_watchdog(self, healthy: Callable[[], bool] = lambda: True) -> None:
        """Ping at half the watchdog interval, from the event loop itself.

        ``healthy`` lets the daemon withhold the ping (a latched fault of the loop's
        own machinery), so systemd restarts the service.
        """
        if self.watchdog_usec is None or not self.enabled:
            return
        interval = self.watchdog_usec / 2_000_000
        while True:
            if healthy():
                self.watchdog()
            await asyncio.sleep(interval)

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None


class LoopLag:
    """How late the event loop runs (:meth:`run` measures it): the console shows it and
    the watchdog withholds its ping while it is :data:`UNHEALTHY_S` or more."""

    #: A loop this late is not healthy: systemd's watchdog restarts the service.
    UNHEALTHY_S = 5.0

    def __init__(self) -> None:
        self.lag = 0.0

    def seconds(self) -> float:
        return self.lag

    def healthy(self) -> bool:
        return self.lag < self.UNHEALTHY_S

    async def run(self, interval: float = 0.25) -> None:
        loop = asyncio.get_running_loop()
        while True:
            t0 = loop.time()
            await asyncio.sleep(interval)
            self.lag = max(0.0, loop.time() - t0 - interval)
