"""Reusable GPIO inputs for dealer equipment.

:class:`DomeLockSensor`: the dome-lock (or door, or cup) switch: a *level*, not a
button. It reports the level at start (``initial=True``) and every debounced
change, and is never "stuck" (a dome stays locked for minutes). Usable by any
driver (the dice shaker's dome):

    dome = DomeLockSensor(17, pin_factory=factory, on_change=lambda ts, locked, initial: ...)
    dome.start()       # on the event loop; calls on_change(ts, locked, True) at once
    dome.locked        # the debounced level
    dome.close()
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ..gpio import DebouncedInput

__all__ = ["DomeLockSensor"]


class DomeLockSensor:
    """A debounced level input: ``locked`` True when the switch says "dome down and locked".

    ``active_means_locked``: whether the input's active level (low with the default
    pull-up, i.e. the switch closed) means locked (a normally-open switch closed by
    the locked dome, the usual fail-safe wiring: a cut wire reads "open").
    """

    def __init__(
        self,
        pin: int | str,
        *,
        pin_factory: Any,
        on_change: Callable[[float, bool, bool], None] | None = None,
        pull_up: bool | None = True,
        active_state: bool | None = None,
        active_means_locked: bool = True,
        debounce: float = 0.05,
    ) -> None:
        self.on_change = on_change
        self.active_means_locked = active_means_locked
        self.changes = 0
        self._input = DebouncedInput(
            pin,
            pin_factory=pin_factory,
            label="dome",
            pull_up=pull_up,
            active_state=active_state,
            debounce=debounce,
            stuck_after=None,
            on_change=self._changed,
        )

    @property
    def locked(self) -> bool:
        return self._input.active == self.active_means_locked

    @property
    def bounces(self) -> int:
        return self._input.bounces

    def start(self) -> None:
        self._input.start()
        if self.on_change is not None:
            self.on_change(time.monotonic(), self.locked, True)

    def close(self) -> None:
        self._input.close()

    def _changed(self, ts: float, level: bool) -> None:
        self.changes += 1
        if self.on_change is not None:
            self.on_change(ts, level == self.active_means_locked, False)
