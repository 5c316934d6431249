"""What the reflink output devices (the result board, the jackpot sign) share: a
display command never fails because the device is offline.

:meth:`DisplayDriver.display` sends a display change at once when the device answers;
otherwise (offline, or the change not acknowledged) it counts it as deferred, asks
for a resync and returns False. The driver keeps what it shows in its own terms, and
:meth:`DisplayDriver.resync` (called by :class:`~drivers.reflink.driver.RefDriver`
after every (re)identification: port back, device restarted, state lost) sends the
whole of it again, in the order :meth:`DisplayDriver.display_state` gives.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from ..base import DeviceTimeout, LinkError
from ..common import E
from .driver import RefDriver


class DisplayDriver(RefDriver[E]):
    """A reflink device that shows what the table tells it; subclasses say what
    rebuilds their display (:meth:`display_state`) and which event reports a resync
    (:meth:`resynced`)."""

    def __init__(self, name: str, settings: Mapping[str, Any], **kwargs: Any) -> None:
        super().__init__(name, settings, **kwargs)
        #: One exchange with the device at a time: a display change, a resync, a test.
        self._lock = asyncio.Lock()

    async def display(self, name: str, **values: Any) -> bool:
        """Send a display change; False if the device did not take it (it is offline, or
        did not acknowledge): the change is deferred to the next resync."""
        if not self.online:
            self.counters["display_deferred"] += 1
            return False
        async with self._lock:
            try:
                await self.command(name, **values)
            except (DeviceTimeout, LinkError):
                self.counters["display_deferred"] += 1
                self._need_resync = self._need_resync or "display change not acknowledged"
                self._wake.set()  # poll now: the poll decides whether the device is offline
                return False
        return True

    def display_state(self) -> list[tuple[str, dict[str, Any]]]:
        """The messages that rebuild the whole display, in the order they are sent."""
        raise NotImplementedError

    def resynced(self, reason: str, messages: int) -> E:
        """The event reporting that the device was sent its whole state again."""
        raise NotImplementedError

    async def resync(self, reason: str) -> int:
        async with self._lock:
            messages = self.display_state()
            for name, values in messages:
                await self.command(name, **values)
        self.emit(self.resynced(reason, len(messages)))
        return len(messages)
