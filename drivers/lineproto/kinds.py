"""What a line-protocol file may map lines to: for each device kind, its events and
the fields each needs (``docs/protocols/line-protocol.md``, "Events").

The events are the kind's own (:mod:`tablecommon.events`): the line-protocol driver
emits the very events the native drivers emit, so the procedures take them unchanged.
``none`` is a known line that is no event (a reply to a command, a line the table does
not use): it is not garbage, and a command's reply is read from it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tablecommon.events.shaker import DIE_FLAGS
from tablecommon.events.wheel import STATE_NAMES

__all__ = ["EVENTS", "KINDS", "EventField", "check_value"]


def _int(lo: int, hi: int | None = None) -> Callable[[Any], str | None]:
    def check(v: Any) -> str | None:
        if isinstance(v, bool) or not isinstance(v, int):
            return f"{v!r} is not a whole number"
        if v < lo or (hi is not None and v > hi):
            return f"{v} is outside {lo}..{hi if hi is not None else ''}"
        return None

    return check


def _one_of(*values: str) -> Callable[[Any], str | None]:
    def check(v: Any) -> str | None:
        return None if v in values else f"{v!r} is not {' or '.join(values)}"

    return check


def _text(v: Any) -> str | None:
    return None if isinstance(v, (str, int)) and not isinstance(v, bool) else f"{v!r} is not text"


def _code(v: Any) -> str | None:
    if isinstance(v, bool) or not isinstance(v, (str, int)) or (isinstance(v, str) and not v):
        return f"{v!r} is not a code (text or a number)"
    return None


def _dice(v: Any) -> str | None:
    if not isinstance(v, tuple) or not 1 <= len(v) <= 6:
        return f"{v!r} is not dice"
    return None if all(isinstance(f, int) and 0 <= f <= 6 for f in v) else f"{v!r} is not dice"


def _lie(v: Any) -> str | None:
    if not isinstance(v, tuple) or not all(f in DIE_FLAGS for f in v):
        return f"{v!r} is not a lie per die ({', '.join(DIE_FLAGS)})"
    return None


def _card(v: Any) -> str | None:
    return None if isinstance(v, str) and len(v) == 2 else f"{v!r} is not a card (type card)"


@dataclass(frozen=True)
class EventField:
    name: str
    required: bool
    check: Callable[[Any], str | None]
    doc: str


def _f(
    name: str, check: Callable[[Any], str | None], doc: str, required: bool = False
) -> EventField:
    return EventField(name, required, check, doc)


_WHEEL: dict[str, tuple[EventField, ...]] = {
    "game_state": (
        _f(
            "state",
            _int(1, 7),
            f"the wheel's game state, 1-7 ({STATE_NAMES[2]}: 2, {STATE_NAMES[4]}: 4, {STATE_NAMES[5]}: 5)",
            True,
        ),
        _f("spin", _int(0), "the game's number (one result per game)"),
        _f("number", _int(0, 39), "the last winning number (type pocket)"),
        _f("speed", _int(0), "rotor speed, rpm x 10"),
        _f("direction", _one_of("clockwise", "anticlockwise"), "rotor direction"),
        _f("flags", _int(0), "warning bits (the file's [[flag]] rules)"),
    ),
    "winning_number": (
        _f("number", _int(0, 39), "the winning pocket (type pocket)", True),
        _f("spin", _int(0), "the game's number"),
    ),
    "fault": (
        _f("code", _code, "the device's fault code", True),
        _f("message", _text, "what it means"),
    ),
}

_SHOE: dict[str, tuple[EventField, ...]] = {
    "card_dealt": (
        _f("card", _card, "the card (type card)", True),
        _f("seq", _int(1), "cards dealt since the shuffle (1, 2...)"),
        _f("position", _int(0), "where it was dealt"),
        _f("shuffle", _int(0), "the shuffle's number"),
    ),
    "shuffle_started": (
        _f("shuffle", _int(0), "the shuffle's number"),
        _f("decks", _int(1, 12), "decks shuffled"),
    ),
    "shuffle_finished": (
        _f("shuffle", _int(0), "the shuffle's number"),
        _f("decks", _int(1, 12), "decks in the new shoe"),
        _f("cards", _int(0), "cards in the new shoe"),
    ),
    "fault": (
        _f("code", _code, "the device's fault code", True),
        _f("message", _text, "what it means"),
        _f("card", _card, "the card concerned"),
        _f("seq", _int(0), "the card's number"),
    ),
}

_SHAKER: dict[str, tuple[EventField, ...]] = {
    "shake_started": (_f("shake", _int(0), "the shake's number"),),
    "shake_finished": (_f("shake", _int(0), "the shake's number"),),
    "dice": (
        _f("dice", _dice, "the faces read (type dice)", True),
        _f("shake", _int(0), "the shake's number (one reading per shake)"),
        _f("flags", _lie, "each die's lie: flat, tilted, stacked (an each table)"),
    ),
    "fault": (
        _f("code", _code, "the device's fault code", True),
        _f("message", _text, "what it means"),
    ),
}

#: kind -> event -> its fields.
EVENTS: dict[str, dict[str, dict[str, EventField]]] = {
    kind: {**{ev: {f.name: f for f in fs} for ev, fs in table.items()}, "none": {}}
    for kind, table in (("wheel", _WHEEL), ("shoe", _SHOE), ("shaker", _SHAKER))
}

#: The device kinds a file may describe.
KINDS: tuple[str, ...] = tuple(EVENTS)

#: kind -> the event that carries a result (confirmed by ``[results] lines``), and the
#: field naming its game (one result per game).
RESULT_EVENTS: dict[str, tuple[str, str]] = {
    "wheel": ("winning_number", "spin"),
    "shoe": ("card_dealt", "seq"),
    "shaker": ("dice", "shake"),
}


def check_value(kind: str, event: str, field: str, value: Any) -> str | None:
    """Why ``value`` cannot be ``field`` of ``event`` (None: it can)."""
    spec = EVENTS[kind][event].get(field)
    if spec is None or value is None:
        return None
    return spec.check(value)
