"""Cammegh SS2 ("Slingshot 2") automatic roulette wheel: codec, rules, driver, simulator.

- :mod:`.codec`: sans-I/O line codec and host commands.
- :mod:`.policy`: the vendor's exception-handling guidance as a table.
- :mod:`.tracker`: lines -> events (states, one result per spin, voids, warnings).
- :mod:`.driver`: :class:`~drivers.cammegh.driver.CammeghDriver` (``cammegh-ss2``).
- :mod:`.sim`: :class:`~drivers.cammegh.sim.CammeghSim`, the wheel on a pty/TCP/pipe.

Protocol notes: ``docs/protocols/cammegh-ss2.md``.
"""
