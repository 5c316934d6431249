"""Dealer inputs on GPIO (``keypad-gpio``): fantan keypad, bell / no-more-bets, dome lock.

- :mod:`.events`: the typed events (each carries the ``key`` that caused it);
- :mod:`.inputs`: :class:`~drivers.keypad.inputs.DomeLockSensor`, a debounced level
  input reusable by other drivers (the dice shaker's dome);
- :mod:`.driver`: :class:`~drivers.keypad.driver.KeypadDriver`.

Notes: ``docs/protocols/dealer-inputs.md``.
"""
