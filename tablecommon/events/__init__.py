"""The typed events of each kind of device, one module a kind: :mod:`.wheel`,
:mod:`.shoe`, :mod:`.shaker`, :mod:`.keypad` (and :mod:`.base`: ``DeviceEvent``, a
device's ``Health`` and ``HealthChanged``).

Every driver of a kind emits its kind's events (a driver may add its own beside them,
deriving from the kind's base class: the Cammegh SS2's fault packets); the procedure of
the kind (``firmware_host/table/procedures/<kind>.py``) and the integrity monitor match
on them, so they never know which make of device is on the table.
"""
