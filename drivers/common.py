"""Plumbing every driver shares: event fan-out and the health/status bookkeeping.

Stable API (the other driver packages use it):

- :class:`EventHub`: ``publish(event)``; ``subscribe()`` returns a
  :class:`Subscription`, an async iterator with its own queue, registered at once
  (no event published after ``subscribe()`` returns is missed).
- :class:`DriverBase`: ``name``, ``health``, ``frames``, ``counters``, ``events()``,
  ``get_status()``; subclasses call :meth:`DriverBase.emit` and
  :meth:`DriverBase.set_health`. Entering FAULT logs the frame log (Klipper's
  "dump the last frames on a fault") and keeps it for ``get_status()``.

All three are generic in the events of their device kind (``DriverBase[WheelEvent]``,
``DriverBase[ShoeEvent]``...): ``events()`` yields those and :class:`HealthChanged`,
so the type checker sees what crosses the driver -> procedure seam.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from .base import DeviceEvent, FrameLog, Health, HealthChanged, HealthState

log = logging.getLogger(__name__)

__all__ = ["DriverBase", "E", "EventHub", "Subscription"]

#: The events of one device kind (``WheelEvent``, ``ShoeEvent``...).
E = TypeVar("E", bound=DeviceEvent)
#: What a subscription yields (covariant: a wheel's subscription is one of device events).
E_co = TypeVar("E_co", bound=DeviceEvent, covariant=True)


class Subscription(Generic[E_co]):
    """One subscriber's queue of events; iterate with ``async for``; ``close()`` to leave."""

    _END = object()

    def __init__(self, hub: EventHub[Any], maxsize: int) -> None:
        self._hub = hub
        self._queue: asyncio.Queue[Any] = asyncio.Queue(maxsize)
        self.dropped = 0
        self._closed = False

    def _put(self, event: Any) -> None:
        if self._closed:
            return
        if self._queue.full():
            # A stuck consumer must not stall the driver: drop the oldest, count it.
            self._queue.get_nowait()
            self.dropped += 1
            if self.dropped == 1 or self.dropped % 1000 == 0:
                log.warning("%s: a slow subscriber lost %d event(s)", self._hub.name, self.dropped)
        self._queue.put_nowait(event)

    def __aiter__(self) -> Subscription[E_co]:
        return self

    async def __anext__(self) -> E_co:
        if self._closed and self._queue.empty():
            raise StopAsyncIteration
        item = await self._queue.get()
        if item is self._END:
            self._closed = True
            raise StopAsyncIteration
        event: E_co = item
        return event

    async def get(self, timeout: float | None = None) -> E_co:
        """The next event (``TimeoutError`` after ``timeout`` seconds)."""
        async with asyncio.timeout(timeout):
            return await self.__anext__()

    def get_nowait(self) -> E_co | None:
        """The next queued event, or None."""
        try:
            item = self._queue.get_nowait()
        except asyncio.QueueEmpty:
            return None
        if item is self._END:
            self._closed = True
            return None
        event: E_co = item
        return event

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._hub._subs.discard(self)
            if self._queue.full():
                self._queue.get_nowait()
            self._queue.put_nowait(self._END)

    async def aclose(self) -> None:
        self.close()

    async def __aenter__(self) -> Subscription[E_co]:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()


class EventHub(Generic[E]):
    """Fan-out of a driver's events: one bounded queue per subscriber."""

    def __init__(self, name: str = "driver", maxsize: int = 10_000) -> None:
        self.name = name
        self.maxsize = maxsize
        self._subs: set[Subscription[E]] = set()
        self.published = 0

    def subscribe(self) -> Subscription[E]:
        sub: Subscription[E] = Subscription(self, self.maxsize)
        self._subs.add(sub)
        return sub

    def publish(self, event: E) -> None:
        self.published += 1
        for sub in list(self._subs):
            sub._put(event)

    def close(self) -> None:
        for sub in list(self._subs):
            sub.close()


class DriverBase(Generic[E]):
    """Name, health, frame log, counters and event fan-out of one configured device
    whose events are ``E`` (and :class:`HealthChanged`)."""

    #: The registry name of the driver (``"cammegh-ss2"``...); set by subclasses.
    driver_name: str = ""

    def __init__(
        self,
        name: str,
        *,
        frame_log_size: int = 64,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.name = name
        self.clock = clock
        self.health = Health(HealthState.OFFLINE, "NOT_STARTED", "not started", time.time())
        self.frames = FrameLog(frame_log_size)
        self.counters: collections.Counter[str] = collections.Counter()
        self.hub: EventHub[E | HealthChanged] = EventHub(name)
        self.last_fault_frames: list[str] = []

    def events(self) -> Subscription[E | HealthChanged]:
        """Subscribe to this driver's events (including :class:`HealthChanged`)."""
        return self.hub.subscribe()

    def emit(self, event: E | HealthChanged) -> None:
        self.counters[f"event.{event.kind}"] += 1
        self.hub.publish(event)

    def set_health(self, state: HealthState, code: str = "", message: str = "") -> bool:
        """Change the health record; emit :class:`HealthChanged` if it changed."""
        h = self.health
        if h.state is state and h.code == code and h.message == message:
            return False
        self.health = Health(state, code, message, time.time())
        if state is HealthState.FAULT:
            self.last_fault_frames = self.frames.dump()
            log.warning(
                "%s: FAULT %s: %s; last %d frames:\n%s",
                self.name,
                code,
                message,
                len(self.last_fault_frames),
                "\n".join(self.last_fault_frames),
            )
        elif state is HealthState.OFFLINE:
            log.warning("%s: offline: %s %s", self.name, code, message)
        else:
            log.info("%s: online", self.name)
        self.emit(HealthChanged(device=self.name, health=self.health))
        return True

    def get_status(self) -> dict[str, Any]:
        """JSON snapshot; subclasses extend it with their device's state."""
        out: dict[str, Any] = {
            "name": self.name,
            "driver": self.driver_name,
            "health": self.health.to_json(),
            "counters": dict(sorted(self.counters.items())),
        }
        if self.health.state is HealthState.FAULT and self.last_fault_frames:
            out["fault_frames"] = list(self.last_fault_frames)
        return out
