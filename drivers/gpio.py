"""GPIO through gpiozero: pin-factory choice, thread-to-loop handoff, debounced inputs.

- :func:`make_pin_factory`: ``"lgpio"`` on a Raspberry Pi, ``"mock"``
  (``gpiozero.pins.mock.MockFactory``) for a simulated table and in tests; ``"auto"``
  takes ``$GPIOZERO_PIN_FACTORY`` or the Pi's, never mock pins silently. The daemon
  makes one factory and hands it to every GPIO driver; every GPIO class here takes
  ``pin_factory`` explicitly, and a driver started without one refuses to start
  (:func:`require_pin_factory`). Nothing relies on gpiozero's global default.
- :func:`gpio_unavailable`: why this machine has no usable GPIO (or None).
- :class:`LoopHandoff`: gpiozero calls ``when_activated`` & co. on its own thread
  (lgpio) or on the caller's (MockFactory). The handoff timestamps the call where
  it happens and schedules the real handler on the event loop with
  ``loop.call_soon_threadsafe``, so driver state is only touched on the loop.
- :class:`DebouncedInput`: a ``DigitalInputDevice`` whose level is accepted only
  once it has been stable for ``debounce`` seconds (gpiozero's ``bounce_time`` only
  ignores edges for a while after one and is not implemented by MockFactory), with
  stuck detection: held longer than ``stuck_after`` seconds -> ``on_stuck``; the
  release of a stuck input -> ``on_unstuck`` instead of ``on_release``.

Stable API: these names plus :func:`is_raspberry_pi`.
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

__all__ = [
    "DebouncedInput",
    "LoopHandoff",
    "gpio_unavailable",
    "is_raspberry_pi",
    "make_pin_factory",
    "require_pin_factory",
]


def is_raspberry_pi(model_file: str = "/proc/device-tree/model") -> bool:
    try:
        return Path(model_file).read_bytes().startswith(b"Raspberry Pi")
    except OSError:
        return False


def gpio_unavailable(
    model_file: str = "/proc/device-tree/model", chips: str = "/dev"
) -> str | None:
    """Why this machine cannot drive real GPIO pins through lgpio, or None if it can."""
    if not is_raspberry_pi(model_file):
        return "not a Raspberry Pi"
    if not any(p.name.startswith("gpiochip") for p in Path(chips).glob("gpiochip*")):
        return f"no /dev/gpiochip* device under {chips}"
    if importlib.util.find_spec("lgpio") is None:
        return "the lgpio library is not installed (apt install python3-lgpio)"
    return None


def require_pin_factory(pin_factory: Any, device: str) -> Any:
    """``pin_factory``, or a clear error when a GPIO driver was given none."""
    if pin_factory is None:
        from .base import DriverError

        raise DriverError(
            f"{device}: no GPIO pin factory; the daemon hands one to every GPIO driver "
            "(tests pass gpiozero's MockFactory)"
        )
    return pin_factory


def make_pin_factory(kind: str = "auto") -> Any:
    """Return a gpiozero pin factory.

    ``"mock"``: a fresh ``MockFactory`` (a simulated table, tests); ``"lgpio"``:
    ``LGPIOFactory`` (Pi 5 and earlier with the lgpio library); ``"auto"``:
    ``$GPIOZERO_PIN_FACTORY`` if set, else lgpio on a Raspberry Pi, else an error:
    mock pins are never chosen silently.
    """
    if kind == "auto":
        env = os.environ.get("GPIOZERO_PIN_FACTORY", "").strip().lower()
        if env:
            kind = env
        elif is_raspberry_pi():
            kind = "lgpio"
        else:
            raise ValueError(
                "not a Raspberry Pi and $GPIOZERO_PIN_FACTORY is not set: no GPIO pins here "
                "(mock pins only for a simulated table: make_pin_factory('mock'))"
            )
    if kind == "mock":
        from gpiozero.pins.mock import MockFactory

        return MockFactory()
    if kind == "lgpio":
        from gpiozero.pins.lgpio import LGPIOFactory

        return LGPIOFactory()
    raise ValueError(f"unknown pin factory {kind!r} (auto, lgpio, mock)")


class LoopHandoff:
    """Turn a loop-side handler ``fn(timestamp, *args)`` into a thread-safe callback.

    ``clock`` (default :func:`time.monotonic`, the event loop's clock) is read in
    the calling thread, at the moment of the pin change.
    """

    def __init__(
        self, loop: asyncio.AbstractEventLoop, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.loop = loop
        self.clock = clock
        self.dropped = 0

    def wrap(self, fn: Callable[..., None], *args: Any) -> Callable[[], None]:
        def callback() -> None:
            ts = self.clock()
            try:
                self.loop.call_soon_threadsafe(fn, ts, *args)
            except RuntimeError:  # the loop is closed: the driver is gone
                self.dropped += 1

        return callback


class DebouncedInput:
    """One digital input, debounced on the event loop, with stuck detection.

    ``pull_up=True`` (the default) suits a switch to ground: pressed = low =
    active. Callbacks run on the loop with the time of the edge that started the
    accepted level: ``on_press(ts)``, ``on_release(ts, held_seconds)``,
    ``on_stuck(ts)``, ``on_unstuck(ts, held_seconds)``, and ``on_change(ts, level)``
    for every accepted change (level sensors: a dome lock, a door).

    An input already active at :meth:`start` is not a press (a key held at boot
    must not enter a result); it becomes "stuck" if it stays active ``stuck_after``.
    """

    def __init__(
        self,
        pin: int | str,
        *,
        pin_factory: Any,
        label: str = "",
        pull_up: bool | None = True,
        active_state: bool | None = None,
        debounce: float = 0.02,
        stuck_after: float | None = 10.0,
        on_press: Callable[[float], None] | None = None,
        on_release: Callable[[float, float], None] | None = None,
        on_stuck: Callable[[float], None] | None = None,
        on_unstuck: Callable[[float, float], None] | None = None,
        on_change: Callable[[float, bool], None] | None = None,
    ) -> None:
        self.pin = pin
        self.pin_factory = pin_factory
        self.label = label or str(pin)
        self.pull_up = pull_up
        self.active_state = active_state
        self.debounce = debounce
        self.stuck_after = stuck_after
        self.on_press = on_press
        self.on_release = on_release
        self.on_stuck = on_stuck
        self.on_unstuck = on_unstuck
        self.on_change = on_change
        self.device: Any = None
        self.active = False  # the accepted (debounced) level
        self.stuck = False
        self.edges = 0  # raw edges seen
        self.bounces = 0  # raw edges that did not lead to an accepted change
        self._raw = False
        self._raw_since = 0.0
        self._accepted_since = 0.0
        self._settle: asyncio.TimerHandle | None = None
        self._stuck_timer: asyncio.TimerHandle | None = None
        self._boot_held = False
        self._loop: asyncio.AbstractEventLoop | None = None

    def start(self) -> None:
        """Open the pin and start watching it; call on the event loop."""
        from gpiozero import DigitalInputDevice

        self._loop = asyncio.get_running_loop()
        handoff = LoopHandoff(self._loop)
        self.device = DigitalInputDevice(
            self.pin,
            pull_up=self.pull_up,
            active_state=self.active_state,
            bounce_time=None,
            pin_factory=self.pin_factory,
        )
        now = time.monotonic()
        self._raw = self.active = bool(self.device.is_active)
        self._raw_since = self._accepted_since = now
        if self.active:
            self._boot_held = True
            self._arm_stuck(now)
        on_act = handoff.wrap(self._edge, True)
        on_deact = handoff.wrap(self._edge, False)
        self.device.when_activated = on_act
        self.device.when_deactivated = on_deact

    def close(self) -> None:
        for h in (self._settle, self._stuck_timer):
            if h is not None:
                h.cancel()
        self._settle = self._stuck_timer = None
        if self.device is not None:
            self.device.when_activated = None
            self.device.when_deactivated = None
            self.device.close()
            self.device = None

    @property
    def raw(self) -> bool:
        """The last raw level seen (not debounced)."""
        return self._raw

    def _edge(self, ts: float, level: bool) -> None:
        self.edges += 1
        if level == self._raw:
            return
        self._raw = level
        self._raw_since = ts
        if self._settle is not None:
            self._settle.cancel()
            self.bounces += 1
        assert self._loop is not None
        delay = max(0.0, ts + self.debounce - self._loop.time())
        self._settle = self._loop.call_later(delay, self._commit)

    def _commit(self) -> None:
        self._settle = None
        level, since = self._raw, self._raw_since
        if level == self.active:
            self.bounces += 1  # went and came back within the debounce time
            return
        held = since - self._accepted_since
        self.active = level
        self._accepted_since = since
        if self.on_change is not None:
            self.on_change(since, level)
        if level:
            self._arm_stuck(since)
            if self.on_press is not None:
                self.on_press(since)
            return
        if self._stuck_timer is not None:
            self._stuck_timer.cancel()
            self._stuck_timer = None
        boot_held, self._boot_held = self._boot_held, False
        if self.stuck:
            self.stuck = False
            if self.on_unstuck is not None:
                self.on_unstuck(since, held)
        elif not boot_held and self.on_release is not None:
            self.on_release(since, held)

    def _arm_stuck(self, since: float) -> None:
        if self.stuck_after is None:
            return
        assert self._loop is not None
        delay = max(0.0, since + self.stuck_after - self._loop.time())
        self._stuck_timer = self._loop.call_later(delay, self._declare_stuck, since)

    def _declare_stuck(self, since: float) -> None:
        self._stuck_timer = None
        if self.active and not self.stuck:
            self.stuck = True
            if self.on_stuck is not None:
                self.on_stuck(since)
