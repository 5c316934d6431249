"""Typed events of an electronic dice shaker, whatever its wire protocol (every shaker
driver emits them; the dice procedure matches on them).

Sic bo and fish-prawn-crab: dice stacked or tilted after the dome is lifted void
the round, which is shaken again (57/2004 art. 3 3), 59/2004 art. 3 3)); the
shaker reports each die's lie so the round logic can apply that.
"""

from __future__ import annotations

from dataclasses import dataclass

from .base import DeviceEvent

FLAT, TILTED, STACKED = "flat", "tilted", "stacked"
DIE_FLAGS = (FLAT, TILTED, STACKED)


@dataclass(frozen=True, slots=True, kw_only=True)
class ShakerEvent(DeviceEvent):
    """Base of every event of a dice shaker, whatever its wire protocol."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ShakeRequested(ShakerEvent):
    """A shake was asked for: ``source`` is ``host`` (a command) or ``button`` (on the shaker)."""

    shake: int
    source: str = "host"


@dataclass(frozen=True, slots=True, kw_only=True)
class ShakeStarted(ShakerEvent):
    shake: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ShakeFinished(ShakerEvent):
    shake: int


@dataclass(frozen=True, slots=True, kw_only=True)
class DiceRead(ShakerEvent):
    """The dice as read after a shake. ``dice[i]`` is 1..6, or 0 when that die's face is
    not readable (only possible for a tilted or stacked die)."""

    shake: int
    dice: tuple[int, ...]
    flags: tuple[str, ...]

    @property
    def valid(self) -> bool:
        """All dice flat: a result. Otherwise the round is void and shaken again
        (57/2004 art. 3 3); 59/2004 art. 3 3))."""
        return all(fl == FLAT for fl in self.flags)


@dataclass(frozen=True, slots=True, kw_only=True)
class NoShake(ShakerEvent):
    """The shake did not happen (motor did not run, dice did not move)."""

    shake: int
    reason: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class DiceUnreadable(ShakerEvent):
    """The dice could not be read (dice missing, image unclear, camera fault)."""

    shake: int
    reason: str = ""
    message: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ShakerFault(ShakerEvent):
    """A fault the host detected in what the shaker sent (e.g. wrong number of dice)."""

    fault: str
    message: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class DomeOpened(ShakerEvent):
    """The dome-lock sensor says the dome is open (``initial``: it was open at start)."""

    initial: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class DomeClosed(ShakerEvent):
    pass


@dataclass(frozen=True, slots=True, kw_only=True)
class Bell(ShakerEvent):
    """The croupier rang the bell: no more bets (57/2004 art. 3 1); 59/2004 art. 3 1))."""


@dataclass(frozen=True, slots=True, kw_only=True)
class InputStuck(ShakerEvent):
    """A GPIO input held far longer than a press (``input`` names it); ``stuck`` False on release."""

    input: str
    stuck: bool = True
