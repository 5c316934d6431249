"""What the reflink output devices (the result board, the jackpot sign) share: a
display command never fails because the device is offline.

Each holds a :class:`DisplaySync` beside its :class:`~drivers.reflink.driver.RefSession`.
:meth:`DisplaySync.display` sends a display change at once when the device answers;
otherwise (offline, or the change not acknowledged) it counts it as deferred, asks
for a resync and returns False. The driver keeps what it shows in its own terms, and
:meth:`DisplaySync.resync` (the session's ``resync``, called after every
(re)identification: port back, device restarted, state lost) sends the whole of it
again, in the order the driver's ``state`` gives.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from ..base import DeviceEvent, DeviceTimeout, LinkError
from ..common import DriverBase
from .driver import RefSession

#: The messages that rebuild a whole display, in the order they are sent.
DisplayState = list[tuple[str, dict[str, Any]]]


class DisplaySync:
    """A reflink display's changes and resyncs, one exchange with the device at a time.

    ``state``: the messages that rebuild the whole display; ``resynced``: the event
    reporting that the device was sent its whole state again (reason, messages)."""

    def __init__(
        self,
        driver: DriverBase[Any],
        ref: RefSession,
        *,
        state: Callable[[], DisplayState],
        resynced: Callable[[str, int], DeviceEvent],
    ) -> None:
        self._driver = driver
        self._ref = ref
        self._state = state
        self._resynced = resynced
        #: One exchange with the device at a time: a display change, a resync, a test.
        self.lock = asyncio.Lock()

    async def display(self, name: str, **values: Any) -> bool:
        """Send a display change; False if the device did not take it (it is offline, or
        did not acknowledge): the change is deferred to the next resync."""
        if not self._ref.online:
            self._driver.counters["display_deferred"] += 1
            return False
        async with self.lock:
            try:
                await self._ref.command(name, **values)
            except (DeviceTimeout, LinkError):
                self._driver.counters["display_deferred"] += 1
                # poll now: the poll decides whether the device is offline
                self._ref.resync_soon("display change not acknowledged")
                return False
        return True

    async def resync(self, reason: str) -> int:
        """Send the whole display again; return how many messages were sent."""
        async with self.lock:
            messages = self._state()
            for name, values in messages:
                await self._ref.command(name, **values)
        self._driver.emit(self._resynced(reason, len(messages)))
        return len(messages)
