"""``gpio-wheel``: a roulette wheel read from a rotor index sensor and a ball sensor
(and, optionally, a ball-track sensor counting the ball's revolutions).

gpiozero ``DigitalInputDevice`` for each sensor; their callbacks (gpiozero's thread
with lgpio, the caller's with MockFactory) are timestamped where they happen and
handed to the event loop (:class:`~drivers.gpio.LoopHandoff`), where
:class:`~drivers.gpio_wheel.model.WheelModel` turns them into the same events as the
Cammegh driver (``GameStateChanged``, ``WinningNumber``, ``GameVoided``,
``WheelWarning``), so the round logic treats both wheels alike.

Health: ONLINE while the rotor turns within its speed limits; FAULT for a stuck
sensor, a stopped rotor or a speed out of range; OFFLINE before the rotor is seen
turning and after :meth:`stop`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar

from tablecommon.events.wheel import WheelEvent
from tablecommon.settings import FieldSpec
from tablecommon.wheel import WHEEL_ORDER

from ..base import HealthState
from ..common import DriverBase
from ..gpio import LoopHandoff, require_pin_factory
from ..transport import cancel_and_wait
from .model import WheelGeometry, WheelModel

__all__ = ["GpioWheelDriver"]

_PIN = (0, 53)


class GpioWheelDriver(DriverBase[WheelEvent]):
    """Manual or automatic wheel with an index sensor (and a second one) and a ball sensor."""

    driver_name = "gpio-wheel"

    SETTINGS: ClassVar[dict[str, FieldSpec]] = {
        "index_pin": FieldSpec(
            "int", required=True, doc="BCM pin of the rotor index sensor", range=_PIN
        ),
        "index_b_pin": FieldSpec(
            "int", None, doc="BCM pin of the second index sensor (direction); optional", range=_PIN
        ),
        "ball_pin": FieldSpec(
            "int", required=True, doc="BCM pin of the ball-at-rest sensor", range=_PIN
        ),
        "ball_track_pin": FieldSpec(
            "int",
            None,
            doc="BCM pin of the ball-track sensor (one pulse a ball revolution on the track): "
            "the spin's ball revolutions; optional",
            range=_PIN,
        ),
        "active_high": FieldSpec(
            "bool", False, doc="sensors pull the line high when active (default: low, with pull-up)"
        ),
        "index_pocket": FieldSpec(
            "int",
            0,
            doc="pocket in front of the ball sensor when the index pulse fires (calibration)",
            range=(0, 36),
        ),
        "direction": FieldSpec(
            "str",
            "auto",
            doc="rotor direction: auto (from the second index sensor), clockwise, anticlockwise",
            choices=("auto", "clockwise", "anticlockwise"),
        ),
        "min_rpm": FieldSpec("int", 10, doc="slowest normal rotor speed, rpm", range=(1, 120)),
        "max_rpm": FieldSpec("int", 60, doc="fastest normal rotor speed, rpm", range=(1, 120)),
        "settle_revs": FieldSpec(
            "int",
            2,
            doc="ball passes, one revolution apart, in the same pocket = result",
            range=(2, 10),
        ),
        "ball_timeout_ms": FieldSpec(
            "int",
            90000,
            doc="armed this long without a settled ball: no-ball void",
            range=(5000, 600000),
        ),
        "arm_delay_ms": FieldSpec(
            "int", 5000, doc="result shown this long before the next game opens", range=(0, 600000)
        ),
        "auto_arm": FieldSpec("bool", True, doc="open the next game by itself (state 2)"),
        "stuck_ms": FieldSpec(
            "int", 2000, doc="a sensor active this long is stuck", range=(100, 60000)
        ),
    }

    @classmethod
    def used_pins(cls, settings: Mapping[str, Any]) -> Iterable[tuple[str, int]]:
        for key in ("index_pin", "index_b_pin", "ball_pin", "ball_track_pin"):
            if settings.get(key) is not None:
                yield key, int(settings[key])

    @classmethod
    def reports_ball_revs(cls, settings: Mapping[str, Any]) -> bool:
        """A ball-track sensor is wired: each result carries the ball's revolutions."""
        return settings.get("ball_track_pin") is not None

    @classmethod
    def reports_ball_in_rim(cls, settings: Mapping[str, Any]) -> bool:
        """The wheel says when the ball is launched into the rim (state 3, the spin's
        start, which ``spin_min_ms`` / ``spin_max_ms`` time): only with a ball-track
        sensor; the ball sensor under the pockets sees the ball only once it drops."""
        return settings.get("ball_track_pin") is not None

    @classmethod
    def check_settings(cls, values: Mapping[str, Any]) -> list[str]:
        problems = []
        if values.get("direction") == "auto" and values.get("index_b_pin") is None:
            problems.append(
                "direction: 'auto' needs index_b_pin (a second index sensor); "
                "else set clockwise or anticlockwise"
            )
        if values.get("index_pocket") not in WHEEL_ORDER:
            problems.append("index_pocket: not a pocket of the single-zero wheel")
        if (values.get("min_rpm") or 0) >= (values.get("max_rpm") or 0):
            problems.append("min_rpm: must be below max_rpm")
        return problems

    def __init__(
        self,
        name: str,
        settings: Mapping[str, Any],
        *,
        pin_factory: Any = None,
        clock: Callable[[], float] = time.monotonic,
        tick_interval: float = 0.1,
    ) -> None:
        super().__init__(name, clock=clock)
        s = {k: spec.default for k, spec in self.SETTINGS.items()}
        s.update(settings)
        self.settings = s
        self.pin_factory = pin_factory
        self.tick_interval = tick_interval
        self.model = WheelModel(
            name,
            WheelGeometry(
                index_pocket=int(s["index_pocket"]),
                direction=str(s["direction"]),
                min_rpm=float(s["min_rpm"]),
                max_rpm=float(s["max_rpm"]),
                settle_revs=int(s["settle_revs"]),
                ball_timeout=s["ball_timeout_ms"] / 1000,
                arm_delay=s["arm_delay_ms"] / 1000,
                auto_arm=bool(s["auto_arm"]),
                stuck_after=s["stuck_ms"] / 1000,
                ball_track=s["ball_track_pin"] is not None,
            ),
        )
        self.inputs: dict[str, Any] = {}
        self._ticker: asyncio.Task[None] | None = None

    async def start(self) -> None:
        if self._ticker is not None:
            return
        from gpiozero import DigitalInputDevice

        require_pin_factory(self.pin_factory, self.name)
        handoff = LoopHandoff(asyncio.get_running_loop(), self.clock)
        s = self.settings
        pull_up = not s["active_high"]
        for sensor, key in (
            ("index", "index_pin"),
            ("index_b", "index_b_pin"),
            ("ball", "ball_pin"),
            ("ball_track", "ball_track_pin"),
        ):
            if s[key] is None:
                continue
            dev = DigitalInputDevice(
                s[key], pull_up=pull_up, bounce_time=None, pin_factory=self.pin_factory
            )
            dev.when_activated = handoff.wrap(self._edge, sensor, True)
            dev.when_deactivated = handoff.wrap(self._edge, sensor, False)
            self.inputs[sensor] = dev
        self.set_health(HealthState.OFFLINE, "ROTOR_NOT_SEEN", "waiting for the rotor index pulses")
        self._ticker = asyncio.create_task(self._tick(), name=f"{self.name} ticker")

    async def stop(self) -> None:
        task, self._ticker = self._ticker, None
        await cancel_and_wait(task)
        for dev in self.inputs.values():
            dev.when_activated = None
            dev.when_deactivated = None
            dev.close()
        self.inputs.clear()
        self.set_health(HealthState.OFFLINE, "STOPPED", "driver stopped")

    # -- from the pins (on the loop)
    def _edge(self, ts: float, sensor: str, level: bool) -> None:
        self.counters[f"edges.{sensor}"] += 1
        self.frames.rx(f"{sensor}={int(level)} t={ts:.4f}".encode())
        self._publish(self.model.edge(sensor, level, ts))

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(self.tick_interval)
            self._publish(self.model.tick(self.clock()))

    def _publish(self, events: list[WheelEvent]) -> None:
        for ev in events:
            self.emit(ev)
        fault = self.model.fault
        if fault is not None:
            self.set_health(HealthState.FAULT, *fault)
        elif self.model.rotor.period is not None and not self.model.rotor.stopped:
            self.set_health(HealthState.ONLINE)

    # -- commands
    async def start_game(self, direction: str | None = None) -> None:
        """Open a new game now (state 2); normally automatic (``auto_arm``)."""
        self._publish(self.model.arm(self.clock()))

    def get_status(self) -> dict[str, Any]:
        out = super().get_status()
        out["wheel"] = self.model.snapshot()
        return out
