"""The single-zero roulette wheel as a fact both sides need: the rules core's
sectors (``firmware_host.games.roulette``), the integrity monitor's arcs and the GPIO
wheel's pocket under the ball sensor (``drivers.gpio_wheel``) all read this order."""

from __future__ import annotations

#: Pocket order of the single-zero wheel, clockwise from zero.
WHEEL_ORDER: tuple[int, ...] = (
    0, 32, 15, 19, 4, 21, 2, 25, 17, 34, 6, 27, 13, 36, 11, 30, 8, 23, 10,
    5, 24, 16, 33, 1, 20, 14, 31, 9, 22, 18, 29, 7, 28, 12, 35, 3, 26,
)  # fmt: skip

__all__ = ["WHEEL_ORDER"]
