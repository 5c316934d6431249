"""What the table's switches report: a change of state, a fault, a recovery."""

from __future__ import annotations

from dataclasses import dataclass

from tablecommon.events.base import DeviceEvent

__all__ = ["SwitchChanged", "SwitchEvent", "SwitchFault", "SwitchRecovered"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SwitchEvent(DeviceEvent):
    """``device``: the switch's name; ``switch_kind``: what it watches (``drop_box``...)."""

    switch_kind: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class SwitchChanged(SwitchEvent):
    """The switch opened or closed (``state``: ``open`` or ``closed``).

    ``initial``: its state when first read (the table starting); ``after_fault``: read
    when a fault ended (it changed while its state was unknown); ``bounces``: raw
    changes absorbed as contact bounce before this one was accepted."""

    state: str = ""
    initial: bool = False
    after_fault: bool = False
    bounces: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class SwitchFault(SwitchEvent):
    """The switch's state is unknown: ``SWITCH_INVALID``, ``SWITCH_CHATTER`` or
    ``SWITCH_UNREADABLE`` (its pin could not be opened)."""

    code: str = ""
    message: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class SwitchRecovered(SwitchEvent):
    """The fault ``code`` ended; a state that changed meanwhile follows as a
    :class:`SwitchChanged` with ``after_fault``."""

    code: str = ""
