"""The table's significant events by the names a gaming lab reads (GLI-11's and
GLI-24's "significant events": door open, door closed, power up, power down...).

The table journals its own event kinds (``switch_opened``, ``power_up``...); each kind
that is a significant event maps to its lab name here, and an event a switch reports
carries that name in its data (``gli``). ``docs/integrity.md`` ("Significant events")
lists the same table (a test keeps both equal).
"""

from __future__ import annotations

from ..journal import AuditLog

__all__ = ["SIGNIFICANT_EVENTS", "SWITCH_NAMES", "previous_end", "switch_event_name"]

#: A switch's kind -> the lab's names of its opening and its closing.
SWITCH_NAMES: dict[str, tuple[str, str]] = {
    "lid": ("door open", "door closed"),
    "door": ("door open", "door closed"),
    "drop_box": ("drop door open", "drop door closed"),
    "cash_box": ("cash door open", "cash door closed"),
    "tray": ("door open", "door closed"),
    "logic": ("logic door open", "logic door closed"),
    "tilt": ("tilt", "tilt cleared"),
    "tamper": ("tilt", "tilt cleared"),
}

#: The table's event kinds (other than a switch's opening and closing) -> the lab's name.
SIGNIFICANT_EVENTS: dict[str, str] = {
    "power_up": "power up",
    "power_down": "power down",
    "switch_fault": "door switch fault",
    "switch_recovered": "door switch fault cleared",
    "device_fault": "peripheral device error",
    "device_recovered": "peripheral device error cleared",
    "software_verified": "software authentication",
    "config_loaded": "configuration change",
    "config_reload": "configuration change",
    "clock_step": "time change",
    "fault_latched": "tilt",
    "fault_cleared": "tilt cleared",
}


def previous_end(chain: AuditLog) -> str | None:
    """How the table's previous run ended, read before this start's ``power_up`` is
    written: ``power_down`` (it stopped and said so), ``lost`` (its last ``power_up``
    has no ``power_down`` after it: the power was cut, the process killed, the system
    crashed; the lab's "power loss"), or None (the journal's first start)."""
    ups = chain.events(1, kind="power_up")
    if not ups:
        return None
    downs = chain.events(1, kind="power_down")
    return "power_down" if downs and downs[-1].id > ups[-1].id else "lost"


def switch_event_name(kind: str, opened: bool) -> str:
    """The lab's name of a ``kind`` switch opening (``opened``) or closing."""
    opening, closing = SWITCH_NAMES.get(kind, ("door open", "door closed"))
    return opening if opened else closing
