"""Roulette wheel on GPIO (``gpio-wheel``): rotor index sensor(s), a ball-at-rest sensor
and an optional ball-track sensor (the ball's revolutions).

- :mod:`.model`: sans-I/O phase/pocket logic and the game cycle;
- :mod:`.driver`: :class:`~drivers.gpio_wheel.driver.GpioWheelDriver` (gpiozero);
- :mod:`.sim`: a physical wheel model driving MockFactory pins.

Its events are the wheel kind's (:mod:`tablecommon.events.wheel`), as the SS2's. Protocol
notes: ``docs/protocols/gpio-wheel.md``.
"""

from __future__ import annotations

from typing import Any

from ..declaration import DriverDeclaration


def _driver() -> type[Any]:
    from .driver import GpioWheelDriver

    return GpioWheelDriver


#: Wired to the Raspberry Pi's pins: no simulator on a serial line, no capture to decode.
DECLARATIONS = (DriverDeclaration("gpio-wheel", "wheel", _driver),)
