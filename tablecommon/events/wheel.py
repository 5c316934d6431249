"""The events of a roulette wheel, whatever its make: the Cammegh SS2
(``drivers.cammegh``) and the GPIO wheel (``drivers.gpio_wheel``) emit these, and the
wheel procedure (``firmware_host.table.procedures.wheel``) and the integrity monitor
match on them. The game states are the wheel's, numbered as the SS2 numbers them
(:data:`STATE_NAMES`); a wheel of another make reports its states in these numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

from .base import DeviceEvent

__all__ = [
    "STATE_NAMES",
    "GameStateChanged",
    "GameVoided",
    "WarningCleared",
    "WheelEvent",
    "WheelWarning",
    "WinningNumber",
]

#: The wheel's game states: 2 opens betting, 4 closes it, 5 carries the result.
STATE_NAMES: dict[int, str] = {
    1: "before game",
    2: "place your bets",
    3: "ball in rim",
    4: "no more bets",
    5: "winning number",
    6: "close table",
    7: "ball not detected in ball track",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class WheelEvent(DeviceEvent):
    """Base of every event of a roulette wheel (the Cammegh SS2 driver and the GPIO wheel
    emit the same events): what a wheel procedure matches on."""


@dataclass(frozen=True, slots=True, kw_only=True)
class GameStateChanged(WheelEvent):
    """The wheel's game state changed (taken from one valid status line).

    ``previous`` is 0 for the first status the driver ever saw. The round logic
    opens betting on 2 and closes it on the first 4 ([ref §9.1] suggested logic).
    """

    state: int
    state_name: str
    previous: int
    spin: int
    speed: int  # rotor rpm x 10
    direction: str  # "clockwise" | "anticlockwise"


@dataclass(frozen=True, slots=True, kw_only=True)
class WinningNumber(WheelEvent):
    """The result of one spin: emitted exactly once per spin.

    Started only by a state-5 status line, and taken only once three lines carry the
    number with none showing another: the bare winning-number line just before it and
    the next status line (``confirmed_by="line"``), or the next two status lines
    (``"status"``); the last of them may be the next game's first line, which repeats
    the number (docs/protocols/cammegh-ss2.md §2.1). ``raw`` holds those lines. ``pocket`` is the display form
    (``"0"``, ``"00"``); ``number`` is 0..36, 37 for ``00``. ``void_reason`` is set
    if the driver had already voided this game (the round logic must not settle it).
    """

    number: int
    pocket: str
    spin: int
    direction: str
    speed: int
    confirmed_by: str
    void_reason: str = ""
    #: The ball's revolutions on the track this spin, from a ball-track sensor (the GPIO
    #: wheel's ``ball_track_pin``); None: the wheel does not report them (the SS2) or
    #: they are not known for this spin. ``ball_rev_ms``: each revolution's time.
    ball_revs: int | None = None
    ball_rev_ms: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class WheelWarning(WheelEvent):
    """A warning flag (or another anomaly) as the exception-handling rules see it.

    ``action`` is what the rules decided: ``"ignore"`` (inside a grace period),
    ``"warn"``, ``"void"`` (a :class:`GameVoided` follows) or ``"fault"``.
    ``source`` is ``"vendor"`` when the guide states the rule, ``"suggested"`` when it
    is our reading where the guide is silent.
    """

    code: str
    message: str
    flags: int
    flag_names: tuple[str, ...]
    state: int
    spin: int
    action: str
    source: str


@dataclass(frozen=True, slots=True, kw_only=True)
class WarningCleared(WheelEvent):
    """The warning flags went back to ``flags`` (usually 0)."""

    flags: int
    previous: int
    state: int
    spin: int


@dataclass(frozen=True, slots=True, kw_only=True)
class GameVoided(WheelEvent):
    """The game in progress is void: lock all bets, return them (round logic).

    ``restart_required``: the wheel waits for ``*R`` (a void miss-spin): call
    ``driver.restart()`` once the bets are locked (or set
    ``auto_restart_after_void``).
    """

    spin: int
    reason: str  # stable code: MISS_SPIN, NO_BALL, LAUNCH_FAILURE, COMPONENT_FAULT, ...
    message: str
    restart_required: bool
    source: str
