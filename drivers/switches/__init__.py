"""The table's switches on GPIO: its lid, doors, drop box, cash box, the dealer's tray, a
tilt switch or a tamper loop, each named by a ``[switches.<name>]`` section.

- :mod:`.settings`: the section's keys and its validator (``SWITCH_KINDS``);
- :mod:`.contact`: :class:`~drivers.switches.contact.ContactTracker`, one contact sans
  I/O (bounce, chatter, a changeover switch's invalid state);
- :mod:`.bank`: :class:`~drivers.switches.bank.SwitchBank`, the switches read through
  gpiozero (lgpio on a Pi, ``MockFactory`` in tests and on a simulated table);
- :mod:`.events`: what they report.

They are not ``[devices]``: no procedure reads them and no round waits for them. The
table's significant events are made of them by ``firmware_host/integrity/switches.py``
(``docs/integrity.md``, "Significant events").
"""
