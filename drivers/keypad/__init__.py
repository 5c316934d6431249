"""Dealer inputs on GPIO (``keypad-gpio``): fantan keypad, bell / no-more-bets, dome lock.

- its events are the keypad kind's, :mod:`tablecommon.events.keypad` (each carries the
  ``key`` that caused it);
- :mod:`.inputs`: :class:`~drivers.keypad.inputs.DomeLockSensor`, a debounced level
  input reusable by other drivers (the dice shaker's dome);
- :mod:`.driver`: :class:`~drivers.keypad.driver.KeypadDriver`.

Notes: ``docs/protocols/dealer-inputs.md``.
"""

from __future__ import annotations

from typing import Any

from ..declaration import DriverDeclaration


def _driver() -> type[Any]:
    from .driver import KeypadDriver

    return KeypadDriver


#: Wired to the Raspberry Pi's pins: no simulator on a serial line, no capture to decode.
DECLARATIONS = (DriverDeclaration("keypad-gpio", "keypad", _driver),)
