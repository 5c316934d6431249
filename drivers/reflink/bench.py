"""A driver back to back with its simulator, for tests and demos.

:class:`Bench` is an opener for a driver: every open wires a fresh in-memory pipe
to ``sim.serve``, with :class:`drivers.testing.Faults` on the host's side (``rx``:
what the host reads, ``tx``: what it writes) and unplug/replug. The helpers wait
for a health state or collect events with a deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

from ..base import DeviceEvent, HealthState, LinkError
from ..common import Subscription
from ..link import Backoff
from ..testing import Faults, FaultyOpener
from ..transport import Connection, pipe_pair
from .link import LinkTimers
from .sim import Simulator

FAST = {"ack_timeout_ms": 15, "retries": 3, "poll_ms": 40}
SIM_TIMERS = LinkTimers(ack_timeout=0.015, max_retries=3, retry_max_interval=0.1)


class Bench:
    """``opener`` for a driver: each open wires a fresh pipe to ``sim.serve``."""

    def __init__(self, sim: Simulator, rx: Faults | None = None, tx: Faults | None = None) -> None:
        self.sim = sim
        self.tasks: set[asyncio.Task[None]] = set()
        self.opener = FaultyOpener(self._open, rx=rx, tx=tx)

    async def _open(self) -> Connection:
        host_end, dev_end = pipe_pair("bench")
        task = asyncio.create_task(self.sim.serve(dev_end))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return host_end

    def unplug(self) -> None:
        self.opener.unplug()

    def replug(self) -> None:
        self.opener.replug()

    async def close(self) -> None:
        for t in list(self.tasks):
            t.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        await self.sim.close()


def driver_kwargs(bench: Bench) -> dict[str, Any]:
    return {"opener": bench.opener, "backoff": Backoff(0.01, 0.05, jitter=0.1)}


async def wait_for(pred: Callable[[], bool], timeout: float = 3.0, step: float = 0.005) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not pred():
        if loop.time() > end:
            raise TimeoutError("condition not reached")
        await asyncio.sleep(step)


async def wait_online(driver: Any, timeout: float = 3.0) -> None:
    await wait_for(lambda: driver.health.state is HealthState.ONLINE, timeout)


async def collect(
    sub: Subscription[DeviceEvent],
    kind: type[DeviceEvent] | tuple[type[DeviceEvent], ...],
    n: int,
    timeout: float = 5.0,
) -> list[Any]:
    """The next ``n`` events of ``kind`` (others are skipped)."""
    out: list[Any] = []
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while len(out) < n:
        ev = await sub.get(max(0.001, end - loop.time()))
        if isinstance(ev, kind):
            out.append(ev)
    return out


def drain(sub: Subscription[DeviceEvent]) -> list[DeviceEvent]:
    out = []
    while (ev := sub.get_nowait()) is not None:
        out.append(ev)
    return out


__all__ = [
    "FAST",
    "SIM_TIMERS",
    "Bench",
    "LinkError",
    "collect",
    "drain",
    "driver_kwargs",
    "wait_for",
    "wait_online",
]
