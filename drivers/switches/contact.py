"""A switch's contact, sans I/O: raw readings and time in, decided changes out.

:class:`ContactTracker` takes the raw reading of one switch (``open``, ``closed``, or
``invalid`` for a changeover switch whose two contacts agree) each time it changes, and
the time; :meth:`ContactTracker.poll` is called again at :meth:`ContactTracker.deadline`.
It decides:

- **a change** (``opened`` / ``closed``): a reading accepted once it has been stable for
  ``bounce`` seconds (contact bounce shorter than that is absorbed and counted);
- **a fault** (the switch stuck, its state unknown): ``SWITCH_INVALID`` when the
  accepted reading is invalid (both contacts of a changeover switch open or both
  closed: a cut or shorted wire, a jammed actuator); ``SWITCH_CHATTER`` when the
  contact keeps changing for ``chatter`` seconds without ever being stable for
  ``bounce`` (bounce that never ends), or when more than ``chatter_changes`` accepted
  changes fall within ``chatter`` seconds (faster than a lid, a door or a box moves);
- **a recovery**: an invalid switch whose reading is valid again (stable ``bounce``);
  a chattering one quiet (no raw change) for ``chatter`` seconds. Its state is then
  reported again when it differs from the last one reported (``after_fault``).

While faulted no change is reported: the state is unknown, which the fault says.
The GPIO side (``drivers/switches/bank.py``) feeds it from gpiozero's callbacks and
schedules :meth:`ContactTracker.poll` on the event loop; the tests feed it directly.
"""

from __future__ import annotations

import collections
import enum
from dataclasses import dataclass

__all__ = ["Change", "ContactTracker", "Reading"]

#: The fault codes a switch reports (its health's code while faulted).
SWITCH_INVALID = "SWITCH_INVALID"
SWITCH_CHATTER = "SWITCH_CHATTER"


class Reading(enum.StrEnum):
    OPEN = "open"
    CLOSED = "closed"
    INVALID = "invalid"


@dataclass(frozen=True, slots=True)
class Change:
    """One decision: ``what`` is ``opened``, ``closed``, ``fault`` or ``recovered``;
    ``at`` the time of the raw change it stems from (a fault: when it was found)."""

    what: str
    at: float
    code: str = ""
    message: str = ""
    #: An ``opened``/``closed`` reported when a fault ended (the state changed under it).
    after_fault: bool = False
    #: Raw changes absorbed as bounce since the previous accepted reading.
    bounces: int = 0


class ContactTracker:
    """One switch's accepted state and faults (see the module docstring)."""

    def __init__(self, *, bounce: float, chatter: float, chatter_changes: int) -> None:
        if not 0 < bounce < chatter:
            raise ValueError("bounce must be positive and shorter than chatter")
        self.bounce = bounce
        self.chatter = chatter
        self.chatter_changes = chatter_changes
        #: The state last reported (open/closed), None before one was valid.
        self.reported: Reading | None = None
        #: The fault code while faulted, else "".
        self.fault = ""
        self.raw_changes = 0
        self.bounces = 0
        self._raw = Reading.INVALID
        self._raw_since = 0.0
        self._accepted = Reading.INVALID
        self._unsettled_since: float | None = None
        self._absorbed = 0
        self._accepted_at: collections.deque[float] = collections.deque()

    @property
    def raw(self) -> Reading:
        return self._raw

    def start(self, now: float, reading: Reading) -> list[Change]:
        """The reading when the switch is first read (no bounce to wait for: a level)."""
        self._raw = self._accepted = reading
        self._raw_since = now
        if reading is Reading.INVALID:
            self.fault = SWITCH_INVALID
            return [Change("fault", now, SWITCH_INVALID, _INVALID_MESSAGE)]
        self.reported = reading
        return []

    def reading(self, now: float, reading: Reading) -> list[Change]:
        """The raw reading changed at ``now``."""
        if reading is self._raw:
            return self.poll(now)
        self.raw_changes += 1
        if self._unsettled_since is None:
            self._unsettled_since = now
        else:
            self._absorbed += 1
        self._raw = reading
        self._raw_since = now
        return self.poll(now)

    def deadline(self) -> float | None:
        """When :meth:`poll` must run next (None: only at the next raw change). Each
        time is the very sum :meth:`poll` compares with, so that a poll at it acts."""
        times = []
        if self._unsettled_since is not None:
            times.append(self._raw_since + self.bounce)
            if not self.fault:
                times.append(self._unsettled_since + self.chatter)
        if self.fault == SWITCH_CHATTER:
            times.append(self._raw_since + self.chatter)
        return min(times) if times else None

    def poll(self, now: float) -> list[Change]:
        out: list[Change] = []
        if self._unsettled_since is not None:
            if now >= self._raw_since + self.bounce:
                self._unsettled_since = None
                if self._raw is not self._accepted:
                    self._accepted = self._raw
                    out += self._accept(self._raw_since)
                else:  # went and came back within the bounce time: every change a bounce
                    self.bounces += self._absorbed + 1
                    self._absorbed = 0
            elif not self.fault and now >= self._unsettled_since + self.chatter:
                out.append(self._set_fault(now, SWITCH_CHATTER, _unsettled(self.chatter)))
        if self.fault == SWITCH_CHATTER and now >= self._raw_since + self.chatter:
            out += self._recover(now)
        return out

    def _accept(self, at: float) -> list[Change]:
        absorbed, self._absorbed = self._absorbed, 0
        self.bounces += absorbed
        times = self._accepted_at
        times.append(at)
        while times and times[0] <= at - self.chatter:
            times.popleft()
        if self.fault == SWITCH_CHATTER:
            return []
        if len(times) > self.chatter_changes:
            return [self._set_fault(at, SWITCH_CHATTER, _too_many(len(times), self.chatter))]
        if self.fault == SWITCH_INVALID:
            return self._recover(at) if self._accepted is not Reading.INVALID else []
        if self._accepted is Reading.INVALID:
            return [self._set_fault(at, SWITCH_INVALID, _INVALID_MESSAGE)]
        return self._report(at, bounces=absorbed)

    def _report(self, at: float, *, after_fault: bool = False, bounces: int = 0) -> list[Change]:
        state = self._accepted
        if state is Reading.INVALID or state is self.reported:
            return []
        self.reported = state
        what = "opened" if state is Reading.OPEN else "closed"
        return [Change(what, at, after_fault=after_fault, bounces=bounces)]

    def _set_fault(self, at: float, code: str, message: str) -> Change:
        self.fault = code
        return Change("fault", at, code, message)

    def _recover(self, at: float) -> list[Change]:
        code, self.fault = self.fault, ""
        if code == SWITCH_CHATTER:
            # quiet for chatter seconds: the raw reading is the state
            self._accepted = self._raw
            self._unsettled_since = None
            self._accepted_at.clear()
            if self._accepted is Reading.INVALID:
                return [
                    Change("recovered", at, code),
                    self._set_fault(at, SWITCH_INVALID, _INVALID_MESSAGE),
                ]
        return [Change("recovered", at, code), *self._report(at, after_fault=True)]


_INVALID_MESSAGE = (
    "no valid state: both contacts of the changeover switch read the same (a cut or "
    "shorted wire, a jammed actuator)"
)


def _unsettled(chatter: float) -> str:
    return (
        f"the contact kept changing for {chatter * 1000:.0f} ms without settling "
        "(chatter beyond contact bounce)"
    )


def _too_many(n: int, chatter: float) -> str:
    return f"{n} changes within {chatter * 1000:.0f} ms: faster than the switch can move (chatter)"
