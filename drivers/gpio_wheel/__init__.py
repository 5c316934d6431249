"""Roulette wheel on GPIO (``gpio-wheel``): rotor index sensor(s), a ball-at-rest sensor
and an optional ball-track sensor (the ball's revolutions).

- :mod:`.model`: sans-I/O phase/pocket logic and the game cycle;
- :mod:`.driver`: :class:`~drivers.gpio_wheel.driver.GpioWheelDriver` (gpiozero);
- :mod:`.sim`: a physical wheel model driving MockFactory pins.

Protocol notes: ``docs/protocols/gpio-wheel.md``.
"""
